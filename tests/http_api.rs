//! Black-box HTTP tests against the real `vigil serve` process.
//!
//! Every test starts its own server (`vigil --db <tmp>/vigil.db serve --addr 127.0.0.1:0 --seed
//! <tmp>/seed.json`) on its own temporary database with its own data, learns the port from the
//! first stdout line, and talks plain HTTP to it: tests share nothing and run in parallel. The
//! answers checked are those of CONTRACT.md sections 1 to 4 and 6: status, the exact JSON body and
//! the headers that matter.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use common::serve::Served;

use reqwest::Method;
use serde_json::{Value, json};
use tempfile::TempDir;

const KEY1: &str = "vgl_test_acc1_primary";
const KEY1B: &str = "vgl_test_acc1_secondary";
const KEY2: &str = "vgl_test_acc2_only";
const VALID_HOOK: &str = r#"{"type":"proxy_vpn_detect","url":"https://hooks.example.com/new"}"#;
const BAD_ID: &str = "projectId may only contain letters, digits and _ . : -";

// ---------------------------------------------------------------------------------------------
// The server process

/// A running `vigil serve` on its own database; killed when dropped.
struct Server {
    served: Served,
    /// `http://127.0.0.1:PORT` (paths below include `/v1`).
    origin: String,
    db: PathBuf,
    client: reqwest::Client,
    _dir: Option<TempDir>,
}

impl Server {
    /// A server on a fresh temporary database loaded with `seed`.
    fn seeded(seed: &Value) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let seed_file = dir.path().join("seed.json");
        std::fs::write(&seed_file, seed.to_string()).unwrap();
        let mut server = Self::start(&dir.path().join("vigil.db"), Some(&seed_file));
        server._dir = Some(dir);
        server
    }

    fn start(db: &Path, seed: Option<&Path>) -> Self {
        let mut cmd = vigil_command(db);
        cmd.args(["serve", "--addr", "127.0.0.1:0"]);
        if let Some(seed) = seed {
            cmd.arg("--seed").arg(seed);
        }
        let served = Served::start(cmd);
        Server {
            origin: served.origin.clone(),
            served,
            db: db.to_owned(),
            client: reqwest::Client::builder().no_proxy().build().unwrap(),
            _dir: None,
        }
    }

    /// Kills the server and returns every stdout line after the address line.
    fn stop(mut self) -> Vec<String> {
        self.served.kill();
        self.served.stdout.iter().collect()
    }

    /// Runs `vigil --db <this server's db> ARGS` to completion.
    fn cli(&self, args: &[&str]) -> Output {
        vigil_command(&self.db).args(args).output().unwrap()
    }

    /// `cli` with the arguments written as one line (none of them contains a space).
    fn cli_line(&self, line: &str) -> Output {
        self.cli(&line.split_whitespace().collect::<Vec<_>>())
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        auth: Option<&str>,
        content_type: Option<&str>,
        body: Option<String>,
    ) -> Resp {
        let what = format!("{method} {path} (auth {auth:?}, content type {content_type:?})");
        let mut req = self
            .client
            .request(method, format!("{}{path}", self.origin));
        if let Some(a) = auth {
            req = req.header("authorization", a);
        }
        if let Some(ct) = content_type {
            req = req.header("content-type", ct);
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

    async fn get(&self, key: &str, path: &str) -> Resp {
        self.call(Method::GET, path, Some(&bearer(key)), None, None)
            .await
    }

    async fn post(&self, key: &str, path: &str, body: &str) -> Resp {
        let (auth, ct) = (bearer(key), "application/json");
        self.call(Method::POST, path, Some(&auth), Some(ct), Some(body.into()))
            .await
    }

    async fn delete(&self, key: &str, path: &str) -> Resp {
        self.call(Method::DELETE, path, Some(&bearer(key)), None, None)
            .await
    }

    /// Creates a webhook on `project` with KEY1, asserts the 201 answer and returns its id.
    async fn create_hook(&self, project: &str, url: &str) -> String {
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
    async fn hooks(&self, project: &str) -> Vec<Value> {
        let r = self
            .get(KEY1, &format!("/v1/projects/{project}/webhooks"))
            .await;
        assert_eq!(r.status, 200, "{}: {}", r.what, r.body);
        r.json()["data"].as_array().expect("a list").clone()
    }

    /// The ids of the webhooks of `project`, oldest first.
    async fn hook_ids(&self, project: &str) -> Vec<String> {
        let hooks = self.hooks(project).await;
        hooks
            .iter()
            .map(|h| h["id"].as_str().unwrap().into())
            .collect()
    }

    /// Follows `Link: rel="next"` from `first` to the last page; returns every result and the page
    /// sizes.
    async fn all_pages(&self, first: &str, limit: Option<usize>) -> (Vec<Value>, Vec<usize>) {
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
    async fn first_cursor(&self, path: &str) -> String {
        let r = self.get(KEY1, path).await;
        let link = next_link(r.header("link").expect("a Link"));
        let query = link.split_once("?cursor=").expect("a cursor").1;
        query.split('&').next().unwrap().to_owned()
    }
}

fn vigil_command(db: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_vigil"));
    cmd.arg("--db")
        .arg(db)
        .env_remove("VIGIL_WEBHOOK_THRESHOLD")
        .env_remove("VIGIL_WEBHOOK_RETRY_SCHEDULE");
    cmd
}

fn bearer(key: &str) -> String {
    format!("Bearer {key}")
}

/// The target of a `Link: <...>; rel="next"` header.
fn next_link(header: &str) -> String {
    header
        .strip_prefix('<')
        .and_then(|h| h.strip_suffix(">; rel=\"next\""))
        .unwrap_or_else(|| panic!("malformed Link {header:?}"))
        .to_owned()
}

/// A response, read whole.
struct Resp {
    what: String,
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: String,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("{}: body {:?} is not JSON: {e}", self.what, self.body))
    }

    /// Asserts the status, `Content-Type: application/json` and the exact JSON body.
    #[track_caller]
    fn expect(&self, status: u16, body: Value) -> &Self {
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
    fn expect_error(&self, status: u16, message: &str) -> &Self {
        self.expect(status, json!({ "message": message }))
    }

    #[track_caller]
    fn expect_no(&self, header: &str) -> &Self {
        assert_eq!(self.header(header), None, "{}: {header}", self.what);
        self
    }
}

// ---------------------------------------------------------------------------------------------
// Data

/// `2026-11-21` plus `secs` seconds, as the API writes it.
fn at(secs: u32) -> String {
    format!(
        "2026-11-21T{:02}:{:02}:{:02}.000Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// A check result as the API shows it (and as a seed entry carries it).
fn res(bot: f64, pv: f64, ip: &str, created_at: &str) -> Value {
    json!({"scoreBot": bot, "scoreProxyVpn": pv, "ipAddress": ip, "createdAt": created_at})
}

/// A seed results entry: `r` in session `s` of project `p`.
fn in_session(p: &str, s: &str, r: &Value) -> Value {
    let mut v = r.clone();
    v["projectId"] = json!(p);
    v["sessionId"] = json!(s);
    v
}

fn plan1() -> Value {
    json!({"id": "plan_trial", "name": "Trial", "description": "14-day trial",
           "maxRps": 1000, "maxProjects": 3, "maxRequests": 100000,
           "expiresAt": "2099-12-05T00:00:00.000Z", "subscribedAt": "2026-11-21T00:00:00.000Z",
           "status": "trialing", "unsubscribedAt": null})
}

fn plan2() -> Value {
    json!({"id": "plan_pro", "name": "Pro", "description": "Pro, monthly",
           "maxRps": 500, "maxProjects": 50, "maxRequests": 5_000_000_000u64,
           "expiresAt": null, "subscribedAt": "2025-01-31T08:00:00.000Z",
           "status": "past_due", "unsubscribedAt": "2026-11-30T12:34:56.789Z"})
}

fn project1() -> Value {
    json!({"id": "prj_1", "name": "Shop", "apiKeyPublic": "pk_shop", "apiKeyPrivate": "sk_shop",
           "domain": "shop.example", "disabled": false, "createdAt": "2026-11-21T00:00:00.000Z"})
}

/// Two accounts: acc_1 (keys KEY1 and KEY1B; projects prj_1 and prj_1b, and webhook wh_seed on
/// prj_1) and acc_2 (KEY2; project prj_2); plus `results`.
fn fixture(results: Vec<Value>) -> Value {
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

fn seeded_hook() -> Value {
    json!({"id": "wh_seed", "type": "proxy_vpn_detect", "url": "https://hooks.shop.example/vigil",
           "createdAt": "2020-01-01T00:00:00.000Z"})
}

/// RFC 3339, UTC, millisecond precision, `Z`.
fn is_api_timestamp(s: &str) -> bool {
    s.len() == 24
        && s.ends_with('Z')
        && s.as_bytes()[19] == b'.'
        && chrono::DateTime::parse_from_rfc3339(s).is_ok()
}

fn valid_id(s: &str) -> bool {
    (1..=128).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.:-".contains(&b))
}

/// `{"data": {scoreBot, scoreProxyVpn}}`, the answer of `/general`.
fn general(bot: f64, pv: f64) -> Value {
    json!({"data": {"scoreBot": bot, "scoreProxyVpn": pv}})
}

#[track_caller]
fn assert_ok(out: &Output) {
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
fn assert_cli_error(out: &Output, needle: &str) {
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
// ---------------------------------------------------------------------------------------------
// Reading results

#[tokio::test]
async fn results_are_newest_first_with_exactly_four_fields() {
    let a = res(0.02, 0.91, "203.0.113.7", "2026-11-21T10:00:00.000Z");
    // Written with a non-canonical address and a time zone offset; shown canonical, in UTC.
    let b_in = res(
        0.0,
        1.0,
        "2001:0DB8:0:0:0:0:0:7",
        "2026-11-21T12:00:00.25+02:00",
    );
    let b = res(0.0, 1.0, "2001:db8::7", "2026-11-21T10:00:00.250Z");
    let c = res(0.5, 0.5, "198.51.100.1", "2026-11-21T09:00:00.000Z");
    // Same createdAt as `a`, written after it: shown before it.
    let d = res(0.33, 0.44, "192.0.2.1", "2026-11-21T10:00:00.000Z");
    let e = res(1.0, 0.0, "::1", "2026-11-21T08:00:00.000Z");
    let mut results: Vec<Value> = [&a, &b_in, &c, &d, &e]
        .iter()
        .map(|r| in_session("prj_1", "sess_1", r))
        .collect();
    // The same session name in another project is another session.
    results.push(in_session("prj_1b", "sess_1", &c));
    let filler = |i| in_session("prj_1", "sess_100", &res(0.1, 0.2, "10.0.0.1", &at(i)));
    results.extend((0..100).map(filler));
    let srv = Server::seeded(&fixture(results));

    let expected = json!([b, d, a, c, e]);
    srv.get(KEY1, "/v1/results/prj_1/sess_1")
        .await
        .expect(200, json!({ "data": expected }))
        .expect_no("link");
    srv.get(KEY1B, "/v1/results/prj_1b/sess_1")
        .await
        .expect(200, json!({ "data": [c] }));
    // A session without results: data is null, not an error.
    srv.get(KEY1, "/v1/results/prj_1/sess_none")
        .await
        .expect(200, json!({ "data": null }))
        .expect_no("link");
    // Exactly 100 results fill one page: no Link.
    let r = srv.get(KEY1, "/v1/results/prj_1/sess_100").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["data"].as_array().unwrap().len(), 100);
    r.expect_no("link");
    // Small pages keep the order.
    let (all, sizes) = srv
        .all_pages("/v1/results/prj_1/sess_1?limit=2", Some(2))
        .await;
    assert_eq!(json!(all), expected);
    assert_eq!(sizes, [2, 2, 1]);
}

#[tokio::test]
async fn general_is_the_maximum_over_every_result_of_the_session() {
    // 150 results: the highest bot score is the oldest, the highest proxy/VPN score the second
    // oldest; neither is among the newest 100.
    let big = |r: Value| in_session("prj_1", "sess_big", &r);
    let mut results = vec![
        big(res(0.99, 0.1, "203.0.113.1", &at(0))),
        big(res(0.2, 0.97, "203.0.113.2", &at(1))),
    ];
    results.extend((2..150).map(|i| big(res(0.3, 0.4, "203.0.113.3", &at(i)))));
    let one = res(0.02, 0.91, "203.0.113.7", &at(5));
    results.push(in_session("prj_1", "sess_one", &one));
    let srv = Server::seeded(&fixture(results));

    let newest = srv.get(KEY1, "/v1/results/prj_1/sess_big").await.json();
    let newest = newest["data"].as_array().unwrap();
    assert_eq!(newest.len(), 100);
    assert!(newest.iter().all(|r| r["scoreBot"] == json!(0.3)));
    srv.get(KEY1, "/v1/results/prj_1/sess_big/general")
        .await
        .expect(200, general(0.99, 0.97));
    srv.get(KEY1, "/v1/results/prj_1/sess_one/general")
        .await
        .expect(200, general(0.02, 0.91));
    srv.get(KEY1, "/v1/results/prj_1/sess_none/general")
        .await
        .expect_error(404, "Session not found");
    srv.get(KEY1, "/v1/results/prj_missing/sess_one/general")
        .await
        .expect_error(404, "Project not found");
}

#[tokio::test]
async fn plan_shows_all_ten_fields_of_the_keys_account() {
    let srv = Server::seeded(&fixture(vec![]));
    for (key, plan) in [(KEY1, plan1()), (KEY1B, plan1()), (KEY2, plan2())] {
        srv.get(key, "/v1/plan")
            .await
            .expect(200, json!({ "data": plan }));
    }
}

#[tokio::test]
async fn project_shows_exactly_seven_fields() {
    let srv = Server::seeded(&fixture(vec![]));
    srv.get(KEY1, "/v1/projects/prj_1")
        .await
        .expect(200, json!({ "data": project1() }));
    // Times are shown in UTC with milliseconds, whatever the seed's spelling.
    let prj_2 = json!({"id": "prj_2", "name": "Other", "apiKeyPublic": "pk_other",
        "apiKeyPrivate": "sk_other", "domain": "other.example", "disabled": true,
        "createdAt": "2026-11-21T10:00:00.500Z"});
    srv.get(KEY2, "/v1/projects/prj_2")
        .await
        .expect(200, json!({ "data": prj_2 }));
    srv.get(KEY1, "/v1/projects/prj_missing")
        .await
        .expect_error(404, "Project not found");
}

// ---------------------------------------------------------------------------------------------
// Paging

/// 250 results of prj_1/sess_long with pairs of equal `createdAt`, and the order the API must
/// return them in (newest first, ties newest written first).
fn long_session() -> (Vec<Value>, Vec<Value>) {
    let shown: Vec<Value> = (0..250u32)
        .map(|i| {
            let ip = format!("10.0.{}.{}", i / 256, i % 256);
            res(f64::from(i % 10) / 10.0, 0.5, &ip, &at(i * 37 % 125))
        })
        .collect();
    let seed = shown
        .iter()
        .map(|r| in_session("prj_1", "sess_long", r))
        .collect();
    let mut order: Vec<usize> = (0..shown.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse((i as u32 * 37 % 125, i)));
    (seed, order.into_iter().map(|i| shown[i].clone()).collect())
}

#[tokio::test]
async fn paging_follows_link_through_every_result_exactly_once() {
    let (seed, expected) = long_session();
    let srv = Server::seeded(&fixture(seed));

    let (all, sizes) = srv.all_pages("/v1/results/prj_1/sess_long", None).await;
    assert_eq!(sizes, [100, 100, 50]);
    assert_eq!(all, expected);
    for n in [50, 7, 100, 1] {
        let first = format!("/v1/results/prj_1/sess_long?limit={n}");
        let (all, sizes) = srv.all_pages(&first, Some(n)).await;
        let (last, full) = sizes.split_last().unwrap();
        assert!(full.iter().all(|&s| s == n) && *last <= n, "{n}: {sizes:?}");
        assert_eq!(all, expected, "limit {n}");
    }

    // A result written between pages does not shift the pages still to come.
    let first = srv.get(KEY1, "/v1/results/prj_1/sess_long").await;
    let next = next_link(first.header("link").expect("Link on page 1"));
    assert_ok(&srv.cli_line(
        "results add --project prj_1 --session sess_long --score-bot 0.9 --score-proxy-vpn 0.9 \
         --ip 192.0.2.200 --created-at 2026-11-21T01:00:00Z",
    ));
    let (rest, _) = srv.all_pages(&next, None).await;
    let mut seen = first.json()["data"].as_array().unwrap().clone();
    seen.extend(rest);
    assert_eq!(seen, expected);
    let newest = res(0.9, 0.9, "192.0.2.200", &at(3600));
    srv.get(KEY1, "/v1/results/prj_1/sess_long?limit=1")
        .await
        .expect(200, json!({ "data": [newest] }));
}

#[tokio::test]
async fn bad_limit_or_cursor_is_400() {
    let (mut seed, _) = long_session();
    for i in 0..3 {
        let r = res(0.1, 0.1, "192.0.2.1", &at(i));
        seed.push(in_session("prj_1", "sess_other", &r));
        seed.push(in_session("prj_1b", "sess_long", &r));
    }
    let srv = Server::seeded(&fixture(seed));

    let bad_limits = [
        "0",
        "101",
        "-1",
        "abc",
        "",
        "1.5",
        "1e2",
        "99999999999999999999999",
    ];
    for limit in bad_limits {
        srv.get(KEY1, &format!("/v1/results/prj_1/sess_long?limit={limit}"))
            .await
            .expect_error(400, "limit must be an integer from 1 to 100")
            .expect_no("link");
    }

    let cursor = srv
        .first_cursor("/v1/results/prj_1/sess_long?limit=10")
        .await;
    let other_session = srv
        .first_cursor("/v1/results/prj_1/sess_other?limit=1")
        .await;
    let other_project = srv
        .first_cursor("/v1/results/prj_1b/sess_long?limit=1")
        .await;
    let mut first_changed = cursor.clone();
    first_changed.replace_range(0..1, if cursor.starts_with('A') { "B" } else { "A" });
    let bad_cursors = [
        "!!!".to_owned(),
        String::new(),
        "not-a-cursor".to_owned(),
        cursor[..cursor.len() / 2].to_owned(),
        format!("{cursor}A"),
        format!("A{cursor}"),
        first_changed,
        "A".repeat(2000),
        other_session,
        other_project,
    ];
    for bad in &bad_cursors {
        srv.get(KEY1, &format!("/v1/results/prj_1/sess_long?cursor={bad}"))
            .await
            .expect_error(400, "cursor is not valid for this session")
            .expect_no("link");
    }
    // The untouched cursor still works where it was issued.
    let ok = format!("/v1/results/prj_1/sess_long?cursor={cursor}&limit=10");
    let r = srv.get(KEY1, &ok).await;
    assert_eq!(r.status, 200, "{}", r.body);
}

// ---------------------------------------------------------------------------------------------
// Webhooks

#[tokio::test]
async fn webhooks_are_created_listed_and_deleted() {
    let srv = Server::seeded(&fixture(vec![]));
    assert_eq!(srv.hooks("prj_1").await, [seeded_hook()]);
    srv.get(KEY1, "/v1/projects/prj_1b/webhooks")
        .await
        .expect(200, json!({"data": []}));

    #[rustfmt::skip]
    let creations = [
        // (Content-Type, url sent, url listed)
        ("application/json", "https://hooks.example.com/a", "https://hooks.example.com/a"),
        ("application/json; charset=utf-8", "https://HOOKS.example.com:443/b?x=1", "https://hooks.example.com/b?x=1"),
        ("Application/JSON", "https://8.8.8.8/c", "https://8.8.8.8/c"),
        ("application/json", "https://[2606:4700::1111]/d", "https://[2606:4700::1111]/d"),
    ];
    let auth = bearer(KEY1);
    let mut created = Vec::new();
    for (ct, url, shown) in creations {
        // Distinct milliseconds, so that creation order is observable in createdAt.
        tokio::time::sleep(Duration::from_millis(3)).await;
        let body = json!({"type": "proxy_vpn_detect", "url": url}).to_string();
        let path = "/v1/projects/prj_1/webhooks";
        let r = srv
            .call(Method::POST, path, Some(&auth), Some(ct), Some(body))
            .await;
        r.expect(201, json!({"data": null}));
        let location = r.header("location").expect("Location");
        let id = location
            .strip_prefix("/v1/projects/prj_1/webhooks/")
            .expect("Location under the project's webhooks");
        assert!(valid_id(id), "{id:?}");
        created.push((id.to_owned(), shown));
    }

    let listed = srv.hooks("prj_1").await;
    assert_eq!(listed.len(), 5);
    assert_eq!(listed[0], seeded_hook());
    let mut previous = String::new();
    for (hook, (id, url)) in listed[1..].iter().zip(&created) {
        let created_at = hook["createdAt"].as_str().unwrap().to_owned();
        assert!(is_api_timestamp(&created_at), "{created_at}");
        assert!(created_at > previous, "oldest first: {listed:?}");
        let expected =
            json!({"id": id, "type": "proxy_vpn_detect", "url": url, "createdAt": created_at});
        assert_eq!(hook, &expected);
        previous = created_at;
    }

    // Delete: 200 {"data":null}, gone from the list, then 404.
    let path = format!("/v1/projects/prj_1/webhooks/{}", created[1].0);
    srv.delete(KEY1, &path)
        .await
        .expect(200, json!({"data": null}));
    let kept = [&created[0].0, &created[2].0, &created[3].0].map(String::as_str);
    let left = srv.hook_ids("prj_1").await;
    assert_eq!(left, ["wh_seed", kept[0], kept[1], kept[2]]);
    srv.delete(KEY1, &path)
        .await
        .expect_error(404, "Webhook not found");
    srv.delete(KEY1, "/v1/projects/prj_1/webhooks/wh_unknown")
        .await
        .expect_error(404, "Webhook not found");
    // A webhook of another project of the same account is not found through this one.
    srv.delete(KEY1, "/v1/projects/prj_1b/webhooks/wh_seed")
        .await
        .expect_error(404, "Webhook not found");
    srv.delete(KEY1, "/v1/projects/prj_1/webhooks/wh_seed")
        .await
        .expect(200, json!({"data": null}));
    assert_eq!(srv.hook_ids("prj_1").await, kept);
}

#[tokio::test]
async fn duplicate_and_eleventh_webhooks_are_409() {
    let srv = Server::seeded(&fixture(vec![]));
    let dup = "A webhook with this type and url already exists on the project";
    let full = "The project already has the maximum of 10 webhooks";
    let hooks = "/v1/projects/prj_1/webhooks";

    let first = srv
        .create_hook("prj_1", "https://hooks.example.com/1")
        .await;
    for same in [
        "https://hooks.example.com/1",
        "https://HOOKS.EXAMPLE.COM/1",
        "https://hooks.example.com:443/1",
        "https://Hooks.Shop.Example/vigil", // the seeded one
    ] {
        let body = json!({"type": "proxy_vpn_detect", "url": same}).to_string();
        srv.post(KEY1, hooks, &body)
            .await
            .expect_error(409, dup)
            .expect_no("location");
    }
    // The same target on another project is fine.
    srv.create_hook("prj_1b", "https://hooks.example.com/1")
        .await;
    assert_eq!(srv.hooks("prj_1").await.len(), 2);

    for i in 2..=9 {
        let url = format!("https://hooks.example.com/{i}");
        srv.create_hook("prj_1", &url).await;
    }
    assert_eq!(srv.hooks("prj_1").await.len(), 10);
    let eleventh = r#"{"type":"proxy_vpn_detect","url":"https://hooks.example.com/11"}"#;
    for _ in 0..2 {
        srv.post(KEY1, hooks, eleventh)
            .await
            .expect_error(409, full)
            .expect_no("location");
    }
    assert_eq!(srv.hooks("prj_1").await.len(), 10);

    // Deleting one frees a place, for one webhook only.
    srv.delete(KEY1, &format!("{hooks}/{first}"))
        .await
        .expect(200, json!({"data": null}));
    srv.create_hook("prj_1", "https://hooks.example.com/11")
        .await;
    srv.post(KEY1, hooks, VALID_HOOK)
        .await
        .expect_error(409, full);
    assert_eq!(srv.hooks("prj_1").await.len(), 10);
}

#[tokio::test]
async fn bad_webhook_bodies_are_refused_and_nothing_is_written() {
    let srv = Server::seeded(&fixture(vec![]));
    let hook_to =
        |path: &str| format!(r#"{{"type":"proxy_vpn_detect","url":"https://example.com/{path}"}}"#);
    let padding = 8 * 1024 - hook_to("").len();
    let exactly_8k = hook_to(&"a".repeat(padding));
    let over_8k = hook_to(&"a".repeat(padding + 1));
    assert_eq!((exactly_8k.len(), over_8k.len()), (8192, 8193));
    let spaced_out = format!("{VALID_HOOK}{}", " ".repeat(9000));
    let trailing = format!("{VALID_HOOK} {{}}");
    let json = Some("application/json");
    let (not_json, not_object) = (
        "Request body must be valid JSON",
        "Request body must be a JSON object",
    );
    let (unknown_type, media) = (
        "`type` must be one of: proxy_vpn_detect",
        "Content-Type must be application/json",
    );

    #[rustfmt::skip]
    let cases: Vec<(Option<&str>, &str, u16, &str)> = vec![
        (json, "{", 400, not_json),
        (json, "", 400, not_json),
        (json, "type=proxy_vpn_detect", 400, not_json),
        (json, &trailing, 400, not_json),
        (json, "[]", 400, not_object),
        (json, r#"["proxy_vpn_detect","https://hooks.example.com/x"]"#, 400, not_object),
        (json, r#""proxy_vpn_detect""#, 400, not_object),
        (json, "null", 400, not_object),
        (json, "42", 400, not_object),
        (json, "{}", 400, "`type` is required"),
        (json, r#"{"url":"https://hooks.example.com/x"}"#, 400, "`type` is required"),
        (json, r#"{"type":null,"url":"https://hooks.example.com/x"}"#, 400, "`type` is required"),
        (json, r#"{"type":"proxy_vpn_detect"}"#, 400, "`url` is required"),
        (json, r#"{"type":"proxy_vpn_detect","url":null}"#, 400, "`url` is required"),
        (json, r#"{"type":1,"url":"https://hooks.example.com/x"}"#, 400, "`type` must be a string"),
        (json, r#"{"type":"proxy_vpn_detect","url":["https://hooks.example.com/x"]}"#, 400, "`url` must be a string"),
        (json, r#"{"type":"bot_detect","url":"https://hooks.example.com/x"}"#, 400, unknown_type),
        (json, r#"{"type":"PROXY_VPN_DETECT","url":"https://hooks.example.com/x"}"#, 400, unknown_type),
        (json, r#"{"type":"proxy_vpn_detect","url":"https://hooks.example.com/x","secret":"s"}"#, 400,
            "Unknown field `secret`: only `type` and `url` are allowed"),
        (json, &exactly_8k, 400, "url must be at most 2048 characters"),
        (json, &over_8k, 413, "Request body is too large"),
        (json, &spaced_out, 413, "Request body is too large"),
        (Some("text/plain"), VALID_HOOK, 415, media),
        (None, VALID_HOOK, 415, media),
        (Some("application/x-www-form-urlencoded"), VALID_HOOK, 415, media),
        (Some("application/json-patch+json"), VALID_HOOK, 415, media),
    ];
    let auth = bearer(KEY1);
    for (ct, body, status, message) in cases {
        let path = "/v1/projects/prj_1/webhooks";
        srv.call(Method::POST, path, Some(&auth), ct, Some(body.into()))
            .await
            .expect_error(status, message)
            .expect_no("location");
    }
    assert_eq!(srv.hooks("prj_1").await, [seeded_hook()]);
}

#[tokio::test]
async fn webhook_urls_must_be_public_https() {
    let srv = Server::seeded(&fixture(vec![]));
    let not_public = "url must point to a public host";
    let long = format!("https://hooks.example.com/{}", "a".repeat(2048));

    #[rustfmt::skip]
    let cases: &[(&str, &str)] = &[
        ("http://hooks.example.com/x", "url must use https"),
        ("ftp://hooks.example.com/x", "url must use https"),
        ("hooks.example.com/x", "url must be an absolute URL"),
        ("/relative", "url must be an absolute URL"),
        ("", "url must be an absolute URL"),
        ("https://", "url must be an absolute URL"),
        ("https://user:pass@example.com/", "url must not contain a user name or password"),
        ("https://user@example.com/", "url must not contain a user name or password"),
        (&long, "url must be at most 2048 characters"),
        // Private, shared, loopback, link-local, unspecified, multicast, unique-local, NAT64.
        ("https://10.0.0.1/", not_public),
        ("https://10.1.2.3:8443/x", not_public),
        ("https://172.16.0.1/", not_public),
        ("https://192.168.1.1/", not_public),
        ("https://100.64.0.1/", not_public),
        ("https://127.0.0.1/", not_public),
        ("http://127.0.0.1:8080/hook", not_public),
        ("https://localhost/", not_public),
        ("https://LOCALHOST./", not_public),
        ("https://api.localhost/", not_public),
        ("https://[::1]/", not_public),
        ("https://0.0.0.0/", not_public),
        ("https://169.254.169.254/latest/meta-data/", not_public),
        ("https://224.0.0.1/", not_public),
        ("https://[fd00::1]/", not_public),
        ("https://[fe80::1]/", not_public),
        ("https://[64:ff9b::a00:1]/", not_public),
        // IPv4-mapped IPv6.
        ("https://[::ffff:127.0.0.1]/", not_public),
        ("https://[::ffff:a9fe:a9fe]/", not_public),
        // Other spellings of internal IPv4 addresses that the URL standard accepts.
        ("https://2130706433/", not_public),
        ("https://0x7f000001/", not_public),
        ("https://0177.0.0.1/", not_public),
        ("https://127.1/", not_public),
        ("https://0x7f.1/", not_public),
        ("https://127.0.0.1./", not_public),
        ("https://%31%32%37.0.0.1/", not_public),
        ("https://\u{ff11}\u{ff12}\u{ff17}.0.0.1/", not_public),
        ("https://012.0.0.1/", not_public),
    ];
    for (url, message) in cases {
        let body = json!({"type": "proxy_vpn_detect", "url": url}).to_string();
        srv.post(KEY1, "/v1/projects/prj_1/webhooks", &body)
            .await
            .expect_error(400, message)
            .expect_no("location");
    }
    assert_eq!(srv.hooks("prj_1").await, [seeded_hook()]);
    // Public addresses, and names (not resolved at creation), are accepted.
    for url in [
        "https://172.32.0.1/",
        "https://100.128.0.1/",
        "https://[::ffff:8.8.8.8]/",
        "https://127.0.0.1.example.com/",
    ] {
        srv.create_hook("prj_1b", url).await;
    }
}

// ---------------------------------------------------------------------------------------------
// Authentication, tenancy and routing

#[tokio::test]
async fn missing_or_bad_credentials_are_401_and_write_nothing() {
    let r = res(0.1, 0.2, "192.0.2.1", &at(0));
    let srv = Server::seeded(&fixture(vec![in_session("prj_1", "sess_1", &r)]));
    let too_long = format!("Bearer vgl_{}", "a".repeat(300));
    let bad: [Option<&str>; 11] = [
        None,
        Some("Bearer vgl_wrong_key"),
        Some("Basic dmdsX3Rlc3RfYWNjMV9wcmltYXJ5Og=="),
        Some("Token vgl_test_acc1_primary"),
        Some("Bearer"),
        Some("Bearer "),
        Some("Bearervgl_test_acc1_primary"),
        Some("vgl_test_acc1_primary"),
        Some("Bearer vgl_test_acc1_primary extra"),
        Some("Bearer pk_shop"), // a project key is not a developer key
        Some(&too_long),
    ];
    let reads = [
        (Method::GET, "/v1/plan"),
        (Method::GET, "/v1/results/prj_1/sess_1"),
        (Method::GET, "/v1/results/prj_1/sess_1/general"),
        (Method::GET, "/v1/projects/prj_1"),
        (Method::GET, "/v1/projects/prj_1/webhooks"),
        (Method::DELETE, "/v1/projects/prj_1/webhooks/wh_seed"),
    ];
    let hooks = "/v1/projects/prj_1/webhooks";
    for auth in bad {
        for (method, path) in reads.clone() {
            srv.call(method, path, auth, None, None)
                .await
                .expect_error(401, "Unauthorized");
        }
        srv.call(
            Method::POST,
            hooks,
            auth,
            Some("application/json"),
            Some(VALID_HOOK.into()),
        )
        .await
        .expect_error(401, "Unauthorized")
        .expect_no("location");
    }
    assert_eq!(srv.hooks("prj_1").await, [seeded_hook()]);

    // The scheme word is case-insensitive.
    for scheme in ["bearer", "BEARER", "bEaReR"] {
        let auth = format!("{scheme} {KEY1}");
        srv.call(Method::GET, "/v1/plan", Some(&auth), None, None)
            .await
            .expect(200, json!({ "data": plan1() }));
    }
    let auth = format!("bearer {KEY1}");
    let body = Some(VALID_HOOK.to_owned());
    srv.call(
        Method::POST,
        hooks,
        Some(&auth),
        Some("application/json"),
        body,
    )
    .await
    .expect(201, json!({"data": null}));
}

#[tokio::test]
async fn another_accounts_project_is_answered_like_a_missing_one() {
    let r = res(0.1, 0.2, "192.0.2.1", &at(0));
    let srv = Server::seeded(&fixture(vec![in_session("prj_1", "sess_1", &r)]));
    // The owner first, so that any cache of project owners is warm.
    srv.get(KEY1, "/v1/projects/prj_1")
        .await
        .expect(200, json!({"data": project1()}));
    let before = srv.get(KEY1, "/v1/results/prj_1/sess_1").await.json();

    for project in ["prj_1", "prj_missing"] {
        for path in [
            format!("/v1/results/{project}/sess_1"),
            format!("/v1/results/{project}/sess_1?limit=1"),
            format!("/v1/results/{project}/sess_1/general"),
            format!("/v1/projects/{project}"),
            format!("/v1/projects/{project}/webhooks"),
        ] {
            srv.get(KEY2, &path)
                .await
                .expect_error(404, "Project not found")
                .expect_no("link");
        }
        srv.post(
            KEY2,
            &format!("/v1/projects/{project}/webhooks"),
            VALID_HOOK,
        )
        .await
        .expect_error(404, "Project not found")
        .expect_no("location");
        srv.delete(KEY2, &format!("/v1/projects/{project}/webhooks/wh_seed"))
            .await
            .expect_error(404, "Project not found");
    }
    // And the other way round.
    srv.get(KEY1, "/v1/projects/prj_2")
        .await
        .expect_error(404, "Project not found");
    // Nothing was written or deleted.
    assert_eq!(srv.hooks("prj_1").await, [seeded_hook()]);
    let after = srv.get(KEY1, "/v1/results/prj_1/sess_1").await.json();
    assert_eq!(after, before);
    srv.get(KEY2, "/v1/projects/prj_2/webhooks")
        .await
        .expect(200, json!({"data": []}));
}

#[tokio::test]
async fn invalid_path_ids_are_400() {
    let srv = Server::seeded(&fixture(vec![]));
    let long = "x".repeat(129);
    let too_long = |name: &str| format!("{name} must be at most 128 characters");
    let bad_char = |name: &str| BAD_ID.replace("projectId", name);
    let (get, post, delete) = (Method::GET, Method::POST, Method::DELETE);

    #[rustfmt::skip]
    let cases: Vec<(Method, String, String)> = vec![
        (get.clone(), "/v1/projects/bad%20id".into(), bad_char("projectId")),
        (get.clone(), "/v1/projects/a%2Fb".into(), bad_char("projectId")),
        (get.clone(), "/v1/projects/%C3%A9".into(), bad_char("projectId")),
        (get.clone(), "/v1/projects/a+b".into(), bad_char("projectId")),
        (get.clone(), format!("/v1/projects/{long}"), too_long("projectId")),
        (get.clone(), "/v1/results/bad%20id/sess_1".into(), bad_char("projectId")),
        (get.clone(), "/v1/results/prj_1/bad%20id".into(), bad_char("sessionId")),
        (get.clone(), "/v1/results/prj_1/a%2Fb".into(), bad_char("sessionId")),
        (get.clone(), format!("/v1/results/prj_1/{long}"), too_long("sessionId")),
        (get.clone(), "/v1/results/prj_1/a%2Fb/general".into(), bad_char("sessionId")),
        (get.clone(), format!("/v1/results/{long}/sess_1/general"), too_long("projectId")),
        (get.clone(), "/v1/projects/a%2Fb/webhooks".into(), bad_char("projectId")),
        (post.clone(), "/v1/projects/bad%20id/webhooks".into(), bad_char("projectId")),
        (post.clone(), format!("/v1/projects/{long}/webhooks"), too_long("projectId")),
        (delete.clone(), "/v1/projects/prj_1/webhooks/bad%20id".into(), bad_char("webhookId")),
        (delete.clone(), "/v1/projects/prj_1/webhooks/wh%2Fseed".into(), bad_char("webhookId")),
        (delete.clone(), format!("/v1/projects/prj_1/webhooks/{long}"), too_long("webhookId")),
        (delete, "/v1/projects/a%2Fb/webhooks/wh_seed".into(), bad_char("projectId")),
    ];
    let auth = bearer(KEY1);
    for (method, path, message) in cases {
        let body = (method == post).then(|| VALID_HOOK.to_owned());
        srv.call(method, &path, Some(&auth), Some("application/json"), body)
            .await
            .expect_error(400, &message);
    }
    assert_eq!(srv.hooks("prj_1").await, [seeded_hook()]);
    // 128 characters of the allowed alphabet are a valid id.
    let max = format!("A-z.0:9_{}", "x".repeat(120));
    srv.get(KEY1, &format!("/v1/results/prj_1/{max}"))
        .await
        .expect(200, json!({"data": null}));
    srv.get(KEY1, &format!("/v1/projects/{max}"))
        .await
        .expect_error(404, "Project not found");
}

#[tokio::test]
async fn unknown_routes_are_404_and_wrong_methods_405_with_allow() {
    let srv = Server::seeded(&fixture(vec![]));
    let auth = bearer(KEY1);
    let unknown = [
        "/",
        "/v1",
        "/v1/",
        "/plan",
        "/v2/plan",
        "/v1plan",
        "/v1/nope",
        "/v1/plan/",
        "/v1/plans",
        "/v1/results/prj_1",
        "/v1/results/prj_1/sess_1/general/extra",
        "/v1/results/prj_1/sess_1/",
        "/v1/projects/prj_1/hooks",
        "/v1/projects/a/b",
        "/v1/projects/prj_1/webhooks/wh_seed/x",
    ];
    for path in unknown {
        for a in [Some(auth.as_str()), None] {
            srv.call(Method::GET, path, a, None, None)
                .await
                .expect_error(404, "Not found");
        }
    }
    #[rustfmt::skip]
    let wrong_method = [
        (Method::PUT, "/v1/plan", "GET"),
        (Method::POST, "/v1/plan", "GET"),
        (Method::DELETE, "/v1/plan", "GET"),
        (Method::POST, "/v1/results/prj_1/sess_1", "GET"),
        (Method::DELETE, "/v1/results/prj_1/sess_1/general", "GET"),
        (Method::PUT, "/v1/projects/prj_1", "GET, PATCH"),
        (Method::PATCH, "/v1/projects/prj_1/webhooks", "GET, POST"),
        (Method::PUT, "/v1/projects/prj_1/webhooks", "GET, POST"),
        (Method::DELETE, "/v1/projects/prj_1/webhooks", "GET, POST"),
        (Method::PATCH, "/v1/projects/prj_1/webhooks/wh_seed", "DELETE"),
        (Method::GET, "/v1/projects/prj_1/webhooks/wh_seed", "DELETE"),
        (Method::POST, "/v1/projects/prj_1/webhooks/wh_seed", "DELETE"),
    ];
    for (method, path, allow) in wrong_method {
        let body = Some(VALID_HOOK.to_owned());
        let r = srv
            .call(method, path, Some(&auth), Some("application/json"), body)
            .await;
        r.expect_error(405, "Method not allowed");
        let allowed = r
            .header("allow")
            .unwrap_or_else(|| panic!("{}: no Allow", r.what));
        let mut allowed: Vec<&str> = allowed.split(',').map(str::trim).collect();
        allowed.sort_unstable();
        assert_eq!(allowed.join(", "), allow, "{}", r.what);
    }
    // Nothing was changed by the refused methods.
    assert_eq!(srv.hooks("prj_1").await, [seeded_hook()]);
}

// ---------------------------------------------------------------------------------------------
// The `vigil` command

#[tokio::test]
async fn serve_without_seed_creates_a_demo_account_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("vigil.db");
    let srv = Server::start(&db, None);
    let origin = srv.origin.clone();
    // Once it answers, everything it prints at start-up has been printed.
    srv.get("vgl_not_the_demo_key", "/v1/plan")
        .await
        .expect_error(401, "Unauthorized");
    let lines = srv.stop();
    let keys: Vec<&str> = lines
        .iter()
        .map(|l| l.trim())
        .filter(|l| l.starts_with("vgl_"))
        .collect();
    assert_eq!(keys.len(), 1, "one key line expected in {lines:#?}");
    let key = keys[0].to_owned();
    assert!(key.len() > 30 && valid_id(&key), "{key}");
    let plan_curl = format!("{origin}/v1/plan");
    assert!(lines.iter().any(|l| l.contains(&plan_curl)), "{lines:#?}");

    // Restarted on the same (no longer empty) store: no new demo account, the key still works.
    let srv = Server::start(&db, None);
    let r = srv.get(&key, "/v1/plan").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let plan = r.json()["data"].clone();
    assert_eq!(plan.as_object().unwrap().len(), 10, "{plan}");
    assert_eq!(
        (&plan["id"], &plan["status"]),
        (&json!("plan_trial"), &json!("trialing"))
    );

    let r = srv.get(&key, "/v1/results/prj_demo/sess_proxy").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let data = r.json()["data"].clone();
    let times = [&data[0]["createdAt"], &data[1]["createdAt"]].map(|t| t.as_str().unwrap_or(""));
    assert!(times.iter().all(|t| is_api_timestamp(t)), "{data}");
    assert!(times[0] > times[1], "newest first: {data}");
    let expected = [
        res(0.07, 0.94, "198.51.100.77", times[0]),
        res(0.05, 0.12, "198.51.100.23", times[1]),
    ];
    r.expect(200, json!({ "data": expected }));
    srv.get(&key, "/v1/results/prj_demo/sess_proxy/general")
        .await
        .expect(200, general(0.07, 0.94));
    let lines = srv.stop();
    assert!(!lines.iter().any(|l| l.contains("vgl_")), "{lines:#?}");
}

#[tokio::test]
async fn results_add_while_serving_is_visible_through_the_api() {
    let old = res(0.5, 0.1, "192.0.2.1", "2026-11-21T10:00:00.000Z");
    let srv = Server::seeded(&fixture(vec![in_session("prj_1", "sess_cli", &old)]));
    let out = srv.cli_line(
        "results add --project prj_1 --session sess_cli --score-bot 0.3 --score-proxy-vpn 0.8 \
         --ip 2001:db8::9 --created-at 2026-11-21T11:00:00Z",
    );
    assert_ok(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("added result") && stdout.contains("prj_1/sess_cli"),
        "{stdout}"
    );
    let new = res(0.3, 0.8, "2001:db8::9", "2026-11-21T11:00:00.000Z");
    srv.get(KEY1, "/v1/results/prj_1/sess_cli")
        .await
        .expect(200, json!({"data": [new, old]}));
    srv.get(KEY1, "/v1/results/prj_1/sess_cli/general")
        .await
        .expect(200, general(0.5, 0.8));

    // A session the server has never seen, written while it runs, at the current time.
    assert_ok(&srv.cli_line(
        "results add --project prj_1b --session sess_new --score-bot 1 --score-proxy-vpn 0 \
         --ip 203.0.113.50",
    ));
    let r = srv.get(KEY1, "/v1/results/prj_1b/sess_new").await;
    let created_at = r.json()["data"][0]["createdAt"].clone();
    let created_at = created_at.as_str().unwrap_or_default();
    assert!(is_api_timestamp(created_at), "{}", r.body);
    let expected = res(1.0, 0.0, "203.0.113.50", created_at);
    r.expect(200, json!({ "data": [expected] }));
    srv.get(KEY1, "/v1/results/prj_1b/sess_new/general")
        .await
        .expect(200, general(1.0, 0.0));
}

#[tokio::test]
async fn results_add_refuses_bad_input_and_writes_nothing() {
    let old = res(0.5, 0.1, "192.0.2.1", "2026-11-21T10:00:00.000Z");
    let srv = Server::seeded(&fixture(vec![in_session("prj_1", "sess_cli", &old)]));
    let add = |project: &str, session: &str, bot: &str, pv: &str, ip: &str, at: &str| {
        srv.cli(&[
            "results",
            "add",
            &format!("--project={project}"),
            &format!("--session={session}"),
            &format!("--score-bot={bot}"),
            &format!("--score-proxy-vpn={pv}"),
            &format!("--ip={ip}"),
            &format!("--created-at={at}"),
        ])
    };
    let t = "2026-11-21T12:00:00Z";
    #[rustfmt::skip]
    let cases = [
        (add("prj_1", "sess_cli", "1.5", "0.9", "192.0.2.2", t), "--score-bot"),
        (add("prj_1", "sess_cli", "0.1", "-0.1", "192.0.2.2", t), "--score-proxy-vpn"),
        (add("prj_1", "sess_cli", "NaN", "0.9", "192.0.2.2", t), "--score-bot"),
        (add("prj_1", "sess_cli", "0.1", "0.9", "999.1.1.1", t), "--ip"),
        (add("prj_1", "sess_cli", "0.1", "0.9", "not-an-ip", t), "--ip"),
        (add("prj_1", "bad session", "0.1", "0.9", "192.0.2.2", t), "--session"),
        (add("prj_1", "sess_cli", "0.1", "0.9", "192.0.2.2", "yesterday"), "--created-at"),
        (add("prj_nope", "sess_cli", "0.1", "0.9", "192.0.2.2", t), "project not found"),
            ];
    for (out, needle) in &cases {
        assert_cli_error(out, needle);
    }

    srv.get(KEY1, "/v1/results/prj_1/sess_cli")
        .await
        .expect(200, json!({"data": [old]}));
    srv.get(KEY1, "/v1/results/prj_1/sess_cli/general")
        .await
        .expect(200, general(0.5, 0.1));
    srv.get(KEY1, "/v1/results/prj_nope/sess_cli")
        .await
        .expect_error(404, "Project not found");
}

#[tokio::test]
async fn seed_refuses_an_invalid_file_and_writes_none_of_it() {
    let old = res(0.5, 0.1, "192.0.2.1", "2026-11-21T10:00:00.000Z");
    let srv = Server::seeded(&fixture(vec![in_session("prj_1", "sess_1", &old)]));
    let dir = tempfile::tempdir().unwrap();
    let mut changed_plan = plan1();
    changed_plan["name"] = json!("Changed");
    let changed_account = json!({"id": "acc_1", "apiKeys": [KEY1], "plan": changed_plan});
    let new_account = json!({"id": "acc_new", "apiKeys": ["vgl_new_key"], "plan": plan2()});
    let new_project = json!({"id": "prj_new", "accountId": "acc_new", "name": "New",
        "domain": "new.example", "apiKeyPublic": "pk_new", "apiKeyPrivate": "sk_new",
        "disabled": false, "createdAt": "2026-11-21T00:00:00.000Z"});
    let newer = res(0.9, 0.9, "192.0.2.9", &at(43_200));
    let new_result = in_session("prj_1", "sess_1", &newer);
    let mut bad_score = new_result.clone();
    bad_score["scoreBot"] = json!(1.5);
    let orphan = in_session("prj_nope", "sess_1", &newer);
    let private_hook = json!({"id": "wh_new", "projectId": "prj_new", "type": "proxy_vpn_detect",
        "url": "https://10.0.0.1/hook", "createdAt": "2026-11-21T00:00:00.000Z"});
    // Valid on its own, but prj_1 already has this (type, url) in the store.
    let same_target = json!({"id": "wh_other", "projectId": "prj_1", "type": "proxy_vpn_detect",
        "url": "https://hooks.shop.example/vigil", "createdAt": "2026-11-21T00:00:00.000Z"});

    // Every file starts with valid entries (one of them changing an existing account).
    let valid = json!({"accounts": [changed_account, new_account], "projects": [new_project],
        "webhooks": [], "results": [new_result]});
    let with = |section: &str, entry: &Value| {
        let mut file = valid.clone();
        file[section].as_array_mut().unwrap().push(entry.clone());
        file
    };
    let mut bad_time = valid.clone();
    bad_time["projects"][0]["createdAt"] = json!("yesterday");
    let mut extra_field = valid.clone();
    extra_field["extra"] = json!([]);
    let cases = [
        (bad_time, "projects[0].createdAt"),
        (with("results", &bad_score), "results[1].scoreBot"),
        (with("results", &orphan), "results[1].projectId"),
        (with("webhooks", &private_hook), "webhooks[0].url"),
        (extra_field, "extra"),
        (with("webhooks", &same_target), "webhooks[0]"),
    ];
    let mut cases: Vec<(String, &str)> = cases.iter().map(|(f, n)| (f.to_string(), *n)).collect();
    cases.push(("{\"accounts\": [".into(), "bad6.json: "));
    for (i, (text, needle)) in cases.iter().enumerate() {
        let path = dir.path().join(format!("bad{i}.json"));
        std::fs::write(&path, text).unwrap();
        println!("bad seed file {i}: expecting an error about {needle}");
        let out = srv.cli(&["seed", path.to_str().unwrap()]);
        assert!(!out.status.success(), "{needle}: the seed was accepted");

        // None of the file was written.
        srv.get(KEY1, "/v1/plan")
            .await
            .expect(200, json!({"data": plan1()}));
        srv.get("vgl_new_key", "/v1/plan")
            .await
            .expect_error(401, "Unauthorized");
        srv.get(KEY1, "/v1/results/prj_1/sess_1")
            .await
            .expect(200, json!({"data": [old]}));
        assert_eq!(srv.hooks("prj_1").await, [seeded_hook()], "{needle}");
        // The one-line error names the entry and the field.
        assert_cli_error(&out, needle);
    }

    // The valid entries alone load, and the running server sees them.
    let path = dir.path().join("good.json");
    std::fs::write(&path, valid.to_string()).unwrap();
    let out = srv.cli(&["seed", path.to_str().unwrap()]);
    assert_ok(&out);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "seeded 2 accounts, 1 projects, 0 webhooks, 1 results"
    );
    let mut plan = plan1();
    plan["name"] = json!("Changed");
    srv.get(KEY1, "/v1/plan")
        .await
        .expect(200, json!({ "data": plan }));
    srv.get("vgl_new_key", "/v1/plan")
        .await
        .expect(200, json!({"data": plan2()}));
    srv.get(KEY1, "/v1/results/prj_1/sess_1")
        .await
        .expect(200, json!({"data": [newer, old]}));
}
