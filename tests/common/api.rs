//! The black-box tests' view of `vigil serve`: a server process on its own temporary database
//! seeded with its own data, requests answered whole, and the fixtures the tests share.
//!
//! Every test starts its own server (`vigil --db <tmp>/vigil.db serve --addr 127.0.0.1:0 --seed
//! <tmp>/seed.json`), learns the port from the first stdout line, and talks plain HTTP to it:
//! tests share nothing and run in parallel.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use reqwest::Method;
use serde_json::{Value, json};
use tempfile::TempDir;

use super::serve::Served;

pub const KEY1: &str = "vgl_test_acc1_primary";
pub const KEY1B: &str = "vgl_test_acc1_secondary";
pub const KEY2: &str = "vgl_test_acc2_only";
pub const VALID_HOOK: &str = r#"{"type":"proxy_vpn_detect","url":"https://hooks.example.com/new"}"#;
pub const BAD_ID: &str = "projectId may only contain letters, digits and _ . : -";

// ---------------------------------------------------------------------------------------------
// The server process

/// A running `vigil serve` on its own database; killed when dropped.
pub struct Server {
    pub served: Served,
    /// `http://127.0.0.1:PORT` (paths below include `/v1`).
    pub origin: String,
    pub db: PathBuf,
    pub client: reqwest::Client,
    pub _dir: Option<TempDir>,
}

impl Server {
    /// A server on a fresh temporary database loaded with `seed`.
    pub fn seeded(seed: &Value) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let seed_file = dir.path().join("seed.json");
        std::fs::write(&seed_file, seed.to_string()).unwrap();
        let mut server = Self::start(&dir.path().join("vigil.db"), Some(&seed_file));
        server._dir = Some(dir);
        server
    }

    pub fn start(db: &Path, seed: Option<&Path>) -> Self {
        Self::start_with(db, seed, &[])
    }

    /// A server started with these further `vigil serve` options.
    pub fn start_with(db: &Path, seed: Option<&Path>, options: &[&str]) -> Self {
        let mut cmd = vigil_command(db);
        cmd.args(["serve", "--addr", "127.0.0.1:0"]).args(options);
        if let Some(seed) = seed {
            cmd.arg("--seed").arg(seed);
        }
        let served = Served::start(cmd);
        let origin = served.origin.clone();
        Server {
            origin: origin.clone(),
            served,
            db: db.to_owned(),
            // A server with --tls-self-signed shows a certificate made at its start.
            client: reqwest::Client::builder()
                .no_proxy()
                .danger_accept_invalid_certs(origin.starts_with("https:"))
                .build()
                .unwrap(),
            _dir: None,
        }
    }

    /// Kills the server and returns every stdout line after the address line.
    pub fn stop(mut self) -> Vec<String> {
        self.served.kill();
        self.served.stdout.iter().collect()
    }

    /// Runs `vigil --db <this server's db> ARGS` to completion.
    pub fn cli(&self, args: &[&str]) -> Output {
        vigil_command(&self.db).args(args).output().unwrap()
    }

    /// `cli` with the arguments written as one line (none of them contains a space).
    pub fn cli_line(&self, line: &str) -> Output {
        self.cli(&line.split_whitespace().collect::<Vec<_>>())
    }

    pub async fn call(
        &self,
        method: Method,
        path: &str,
        auth: Option<&str>,
        content_type: Option<&str>,
        body: Option<String>,
    ) -> Resp {
        let headers: Vec<(&str, &str)> = [("authorization", auth), ("content-type", content_type)]
            .into_iter()
            .filter_map(|(k, v)| Some((k, v?)))
            .collect();
        self.anonymous(method, path, &headers, body).await
    }

    /// A request with exactly these headers (no developer key unless given: the browser routes).
    pub async fn anonymous(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<String>,
    ) -> Resp {
        let what = format!("{method} {path} (headers {headers:?})");
        let mut req = self
            .client
            .request(method, format!("{}{path}", self.origin));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        if let Some(b) = body {
            req = req.body(b);
        }
        let res = req.send().await.unwrap_or_else(|e| panic!("{what}: {e}"));
        Resp {
            what,
            status: res.status().as_u16(),
            headers: res.headers().clone(),
            body: res.text().await.unwrap(),
        }
    }

    pub async fn get(&self, key: &str, path: &str) -> Resp {
        self.call(Method::GET, path, Some(&bearer(key)), None, None)
            .await
    }

    pub async fn post(&self, key: &str, path: &str, body: &str) -> Resp {
        let (auth, ct) = (bearer(key), "application/json");
        self.call(Method::POST, path, Some(&auth), Some(ct), Some(body.into()))
            .await
    }

    pub async fn delete(&self, key: &str, path: &str) -> Resp {
        self.call(Method::DELETE, path, Some(&bearer(key)), None, None)
            .await
    }

    /// Creates a webhook on `project` with KEY1, asserts the 201 answer and returns its id.
    pub async fn create_hook(&self, project: &str, url: &str) -> String {
        let body = json!({"type": "proxy_vpn_detect", "url": url}).to_string();
        let path = format!("/v1/projects/{project}/webhooks");
        let r = self.post(KEY1, &path, &body).await;
        r.expect(201, json!({"data": null}));
        let location = r.header("location").expect("Location on 201");
        let id = location
            .strip_prefix(&format!("{path}/"))
            .unwrap_or_else(|| panic!("Location {location:?} is not under {path}/"));
        assert!(valid_id(id), "webhook id {id:?}");
        id.to_owned()
    }

    /// The webhooks of `project`, as KEY1 lists them.
    pub async fn hooks(&self, project: &str) -> Vec<Value> {
        let r = self
            .get(KEY1, &format!("/v1/projects/{project}/webhooks"))
            .await;
        assert_eq!(r.status, 200, "{}: {}", r.what, r.body);
        r.json()["data"].as_array().expect("a list").clone()
    }

    /// The ids of the webhooks of `project`, oldest first.
    pub async fn hook_ids(&self, project: &str) -> Vec<String> {
        let hooks = self.hooks(project).await;
        hooks
            .iter()
            .map(|h| h["id"].as_str().unwrap().into())
            .collect()
    }

    /// Follows `Link: rel="next"` from `first` to the last page; returns every result and the page
    /// sizes.
    pub async fn all_pages(&self, first: &str, limit: Option<usize>) -> (Vec<Value>, Vec<usize>) {
        let (mut path, mut all, mut sizes) = (first.to_owned(), Vec::new(), Vec::new());
        loop {
            let r = self.get(KEY1, &path).await;
            assert_eq!(r.status, 200, "{}: {}", r.what, r.body);
            assert_eq!(r.header("content-type"), Some("application/json"));
            let page = r.json()["data"].as_array().expect("a page").clone();
            sizes.push(page.len());
            all.extend(page);
            let Some(link) = r.header("link") else { break };
            path = next_link(link);
            let prefix = first.split('?').next().unwrap();
            assert!(path.starts_with(&format!("{prefix}?cursor=")), "{link}");
            if let Some(n) = limit {
                assert!(path.ends_with(&format!("&limit={n}")), "{link}");
            }
            assert!(sizes.len() <= 300, "paging does not end");
        }
        (all, sizes)
    }

    /// The cursor of the `Link` that the first page of `path` carries.
    pub async fn first_cursor(&self, path: &str) -> String {
        let r = self.get(KEY1, path).await;
        let link = next_link(r.header("link").expect("a Link"));
        let query = link.split_once("?cursor=").expect("a cursor").1;
        query.split('&').next().unwrap().to_owned()
    }
}

pub fn vigil_command(db: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_vigil"));
    cmd.arg("--db")
        .arg(db)
        .env_remove("VIGIL_WEBHOOK_THRESHOLD")
        .env_remove("VIGIL_WEBHOOK_RETRY_SCHEDULE");
    cmd
}

pub fn bearer(key: &str) -> String {
    format!("Bearer {key}")
}

/// The target of a `Link: <...>; rel="next"` header.
pub fn next_link(header: &str) -> String {
    header
        .strip_prefix('<')
        .and_then(|h| h.strip_suffix(">; rel=\"next\""))
        .unwrap_or_else(|| panic!("malformed Link {header:?}"))
        .to_owned()
}

/// A response, read whole.
pub struct Resp {
    pub what: String,
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: String,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }

    /// A header that must be there.
    #[track_caller]
    pub fn header_value(&self, name: &str) -> &str {
        self.header(name)
            .unwrap_or_else(|| panic!("{}: no {name} header", self.what))
    }

    /// The `message` of an error body.
    pub fn message(&self) -> String {
        self.json()["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("{}: body {:?} is not JSON: {e}", self.what, self.body))
    }

    /// Asserts the status, `Content-Type: application/json` and the exact JSON body.
    #[track_caller]
    pub fn expect(&self, status: u16, body: Value) -> &Self {
        assert_eq!(
            self.status, status,
            "{}: status; body {}",
            self.what, self.body
        );
        assert_eq!(
            self.header("content-type"),
            Some("application/json"),
            "{}: content type",
            self.what
        );
        assert_eq!(self.json(), body, "{}: body", self.what);
        self
    }

    #[track_caller]
    pub fn expect_error(&self, status: u16, message: &str) -> &Self {
        self.expect(status, json!({ "message": message }))
    }

    #[track_caller]
    pub fn expect_no(&self, header: &str) -> &Self {
        assert_eq!(self.header(header), None, "{}: {header}", self.what);
        self
    }
}

// ---------------------------------------------------------------------------------------------
// Data

/// A check result as the API shows it (and as a seed entry carries it).
pub fn res(bot: f64, pv: f64, ip: &str, created_at: &str) -> Value {
    json!({"scoreBot": bot, "scoreProxyVpn": pv, "ipAddress": ip, "createdAt": created_at})
}

/// A seed results entry: `r` in session `s` of project `p`.
pub fn in_session(p: &str, s: &str, r: &Value) -> Value {
    let mut v = r.clone();
    v["projectId"] = json!(p);
    v["sessionId"] = json!(s);
    v
}

pub fn plan1() -> Value {
    json!({"id": "plan_trial", "name": "Trial", "description": "14-day trial",
           "maxRps": 1000, "maxProjects": 3, "maxRequests": 100000,
           "expiresAt": "2099-12-05T00:00:00.000Z", "subscribedAt": "2026-11-21T00:00:00.000Z",
           "status": "trialing", "unsubscribedAt": null})
}

pub fn plan2() -> Value {
    json!({"id": "plan_pro", "name": "Pro", "description": "Pro, monthly",
           "maxRps": 500, "maxProjects": 50, "maxRequests": 5_000_000_000u64,
           "expiresAt": null, "subscribedAt": "2025-01-31T08:00:00.000Z",
           "status": "past_due", "unsubscribedAt": "2026-11-30T12:34:56.789Z"})
}

pub fn project1() -> Value {
    json!({"id": "prj_1", "name": "Shop", "apiKeyPublic": "pk_shop", "apiKeyPrivate": "sk_shop",
           "domain": "shop.example", "disabled": false, "requireSessionToken": false,
           "webhookLegacySignature": true, "agents": {"allow": []}, "sealedResults": false,
           "model": "latest", "calibration": null, "createdAt": "2026-11-21T00:00:00.000Z"})
}

/// Two accounts: acc_1 (keys KEY1 and KEY1B; projects prj_1 and prj_1b, and webhook wh_seed on
/// prj_1) and acc_2 (KEY2; project prj_2); plus `results`.
pub fn fixture(results: Vec<Value>) -> Value {
    let mut prj_1 = project1();
    prj_1["accountId"] = json!("acc_1");
    json!({
        "accounts": [
            {"id": "acc_1", "apiKeys": [KEY1, KEY1B], "plan": plan1()},
            {"id": "acc_2", "apiKeys": [KEY2], "plan": plan2()}
        ],
        "projects": [
            prj_1,
            {"id": "prj_1b", "accountId": "acc_1", "name": "Blog", "domain": "blog.example",
             "apiKeyPublic": "pk_blog", "apiKeyPrivate": "sk_blog", "disabled": false,
             "createdAt": "2026-11-21T01:00:00.000Z"},
            {"id": "prj_2", "accountId": "acc_2", "name": "Other", "domain": "other.example",
             "apiKeyPublic": "pk_other", "apiKeyPrivate": "sk_other", "disabled": true,
             "createdAt": "2026-11-21T12:00:00.5+02:00"}
        ],
        "webhooks": [
            {"id": "wh_seed", "projectId": "prj_1", "type": "proxy_vpn_detect",
             "url": "https://Hooks.Shop.Example/vigil", "createdAt": "2020-01-01T00:00:00.000Z"}
        ],
        "results": results
    })
}

pub fn seeded_hook() -> Value {
    json!({"id": "wh_seed", "type": "proxy_vpn_detect", "url": "https://hooks.shop.example/vigil",
           "createdAt": "2020-01-01T00:00:00.000Z"})
}

/// RFC 3339, UTC, millisecond precision, `Z`.
pub fn is_api_timestamp(s: &str) -> bool {
    s.len() == 24
        && s.ends_with('Z')
        && s.as_bytes()[19] == b'.'
        && chrono::DateTime::parse_from_rfc3339(s).is_ok()
}

pub fn valid_id(s: &str) -> bool {
    (1..=128).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.:-".contains(&b))
}

/// `{"data": {scoreBot, scoreProxyVpn}}`, the answer of `/general`.
pub fn general(bot: f64, pv: f64) -> Value {
    json!({"data": {"scoreBot": bot, "scoreProxyVpn": pv}})
}

#[track_caller]
pub fn assert_ok(out: &Output) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "exit {:?}; stderr {stderr}",
        out.status
    );
}

/// Asserts a failed command printed one error line (clap may add its `--help` hint) containing
/// `needle`.
#[track_caller]
pub fn assert_cli_error(out: &Output, needle: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "exit {:?}; stderr {stderr}",
        out.status
    );
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with("For more information, try"))
        .collect();
    assert_eq!(lines.len(), 1, "one error line expected: {stderr:?}");
    assert!(lines[0].starts_with("error: "), "{stderr:?}");
    assert!(lines[0].contains(needle), "{needle:?} not in {stderr:?}");
}

/// Loads, with `vigil` (a command already pointed at its store), one account (KEY1, `plan1`), its
/// project prj_1 and webhook `hook` to the loopback `url`, from a seed file written in `dir`.
pub fn seed_one_webhook(mut vigil: Command, dir: &Path, hook: &str, url: &str) {
    let seed = json!({
        "accounts": [{"id": "acc_1", "apiKeys": [KEY1], "plan": plan1()}],
        "projects": [{"id": "prj_1", "accountId": "acc_1", "name": "Shop", "domain": "shop.example",
                      "apiKeyPublic": "pk_shop", "apiKeyPrivate": "sk_shop", "disabled": false,
                      "createdAt": "2026-11-21T00:00:00.000Z"}],
        "webhooks": [{"id": hook, "projectId": "prj_1", "type": "proxy_vpn_detect",
                      "url": url, "createdAt": "2026-11-21T00:00:00.000Z"}],
        "results": []
    });
    let file = dir.join("seed.json");
    std::fs::write(&file, seed.to_string()).unwrap();
    let out = vigil
        .args(["seed", "--allow-loopback-webhooks"])
        .arg(&file)
        .output()
        .unwrap();
    assert_ok(&out);
}
