//! Plans through the real `vigil serve`: seed plans that make each limit reachable, then the
//! answers a client sees (403, 429 with `Retry-After`, the rate-limit headers), projects created,
//! listed and changed under `maxProjects`, and `GET /usage`. Every test runs its own server on its
//! own database.

mod common;

use common::api::{Resp, Server, bearer};
use reqwest::Method;
use serde_json::{Value, json};

const KEY: &str = "vgl_plans_key";
const OTHER: &str = "vgl_other_key";

fn plan(status: &str, max_rps: u32, max_requests: u64, max_projects: u32) -> Value {
    json!({"id": "plan_x", "name": "X", "description": "x", "maxRps": max_rps,
           "maxProjects": max_projects, "maxRequests": max_requests, "expiresAt": null,
           "subscribedAt": "2026-01-31T00:00:00.000Z", "status": status, "unsubscribedAt": null})
}

/// A server whose account acc_1 (key KEY) has `plan` and project prj_1, beside acc_2 (key OTHER,
/// an ordinary plan) and its project prj_2.
fn start(plan: Value) -> Server {
    Server::seeded(&json!({
        "accounts": [
            {"id": "acc_1", "apiKeys": [KEY], "plan": plan},
            {"id": "acc_2", "apiKeys": [OTHER], "plan": self::plan("active", 100, 100, 5)}
        ],
        "projects": [
            {"id": "prj_1", "accountId": "acc_1", "name": "Shop", "domain": "shop.example",
             "apiKeyPublic": "pk_1", "apiKeyPrivate": "sk_1", "disabled": false,
             "createdAt": "2026-11-21T00:00:00.000Z"},
            {"id": "prj_2", "accountId": "acc_2", "name": "Other", "domain": "other.example",
             "apiKeyPublic": "pk_2", "apiKeyPrivate": "sk_2", "disabled": false,
             "createdAt": "2026-11-21T00:00:00.000Z"}
        ]
    }))
}

/// `POST /v1/projects` with `name` and `domain`.
async fn create(srv: &Server, name: &str, domain: &str) -> Resp {
    send_json(
        srv,
        Method::POST,
        "/v1/projects",
        &json!({"name": name, "domain": domain}),
    )
    .await
}

async fn send_json(srv: &Server, method: Method, path: &str, body: &Value) -> Resp {
    let auth = bearer(KEY);
    srv.call(
        method,
        path,
        Some(&auth),
        Some("application/json"),
        Some(body.to_string()),
    )
    .await
}

#[tokio::test]
async fn over_max_rps_is_429_with_retry_after_and_every_answer_has_the_headers() {
    let srv = start(plan("active", 3, 1_000_000, 5));
    // Twelve requests at once: at most three per second get through (six if they straddle two).
    let answers =
        futures_util::future::join_all((0..12).map(|_| srv.get(KEY, "/v1/projects/prj_1"))).await;
    let ok: Vec<&Resp> = answers.iter().filter(|a| a.status == 200).collect();
    let limited: Vec<&Resp> = answers.iter().filter(|a| a.status == 429).collect();
    assert_eq!(ok.len() + limited.len(), 12);
    assert!((1..=6).contains(&ok.len()), "{} allowed", ok.len());
    let a = limited
        .first()
        .expect("a burst of 12 against maxRps 3 is refused");
    assert_eq!(a.message(), "Rate limit exceeded");
    assert_eq!(a.header_value("retry-after"), "1");
    assert!(a.header_value("ratelimit").contains("\"burst\";r=0;t=1"));
    for a in &answers {
        let policy = a.header_value("ratelimit-policy");
        assert!(
            policy.starts_with("\"burst\";q=3;w=1, \"monthly\";q=1000000;w="),
            "{policy}"
        );
    }
    for a in ok {
        let remaining = a.header_value("ratelimit");
        assert!(remaining.starts_with("\"burst\";r="), "{remaining}");
        assert!(remaining.contains(", \"monthly\";r="), "{remaining}");
    }
}

#[tokio::test]
async fn over_max_requests_is_429_until_the_next_period() {
    let srv = start(plan("active", 1000, 3, 5));
    let usage = srv.get(KEY, "/v1/usage").await;
    assert_eq!(usage.status, 200);
    let data = &usage.json()["data"];
    assert_eq!(data["requests"], 1);
    assert_eq!(data["maxRequests"], 3);
    assert_eq!(data["remaining"], 2);
    // Anniversaries of a plan subscribed on January 31st fall on the last day of short months.
    let (start, end) = (
        data["periodStart"].as_str().unwrap(),
        data["periodEnd"].as_str().unwrap(),
    );
    assert!(
        start.ends_with("T00:00:00.000Z") && end.ends_with("T00:00:00.000Z"),
        "{start} {end}"
    );
    // A 404 counts: it passed authentication and no limit refused it.
    assert_eq!(srv.get(KEY, "/v1/projects/prj_missing").await.status, 404);
    let last = srv.get(KEY, "/v1/plan").await;
    assert_eq!(last.status, 200);
    assert!(
        last.header_value("ratelimit")
            .contains("\"monthly\";r=0;t="),
        "{}",
        last.header_value("ratelimit")
    );
    let refused = srv.get(KEY, "/v1/plan").await;
    assert_eq!(refused.status, 429);
    assert_eq!(refused.message(), "Monthly request quota exceeded");
    let retry: u64 = refused.header_value("retry-after").parse().unwrap();
    assert!((1..=31 * 86_400).contains(&retry), "{retry}");
    // Another account is not affected.
    let other = srv.get(OTHER, "/v1/plan").await;
    assert_eq!(other.status, 200);
}

#[tokio::test]
async fn a_plan_not_in_force_refuses_everything_but_reading_the_plan() {
    for status in ["canceled", "unpaid", "paused"] {
        let srv = start(plan(status, 1000, 1000, 5));
        let a = srv.get(KEY, "/v1/projects/prj_1").await;
        assert_eq!(
            (a.status, a.message().as_str()),
            (403, "Plan is not active")
        );
        assert!(a.header("ratelimit-policy").is_some());
        let a = create(&srv, "N", "n.example").await;
        assert_eq!(a.status, 403, "{status}");
        let read = srv.get(KEY, "/v1/plan").await;
        assert_eq!(read.status, 200, "{status}");
        assert_eq!(read.json()["data"]["status"], status);
    }
    // Expired: in force by status, but past expiresAt.
    let mut expired = plan("active", 1000, 1000, 5);
    expired["expiresAt"] = json!("2026-01-01T00:00:00.000Z");
    let srv = start(expired);
    assert_eq!(
        srv.get(KEY, "/v1/usage").await.message(),
        "Plan is not active"
    );
    assert_eq!(srv.get(KEY, "/v1/plan").await.status, 200);
    // past_due is a grace period: in force.
    let srv = start(plan("past_due", 1000, 1000, 5));
    assert_eq!(srv.get(KEY, "/v1/projects/prj_1").await.status, 200);
}

#[tokio::test]
async fn projects_are_created_listed_and_changed_under_max_projects() {
    let srv = start(plan("trialing", 1000, 1000, 2));
    let created = create(&srv, " New shop ", "New.Example").await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let p = created.json()["data"].clone();
    let id = p["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("prj_"));
    assert_eq!(
        created.header_value("location"),
        format!("/v1/projects/{id}")
    );
    assert_eq!(p.as_object().unwrap().len(), 8, "{p}");
    assert_eq!(p["requireSessionToken"], true, "on for new projects");
    assert_eq!(
        (p["name"].as_str(), p["domain"].as_str()),
        (Some("New shop"), Some("new.example"))
    );
    assert_eq!(p["disabled"], false);
    assert!(p["apiKeyPublic"].as_str().unwrap().starts_with("pk_"));
    assert!(p["apiKeyPrivate"].as_str().unwrap().starts_with("sk_"));
    assert_eq!(
        srv.get(KEY, &format!("/v1/projects/{id}")).await.json()["data"],
        p
    );

    // The seeded project and the new one: the limit of two is reached.
    let listed = srv.get(KEY, "/v1/projects").await;
    let listed = listed.json();
    let ids: Vec<&str> = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["prj_1", id.as_str()], "oldest first");
    let over = create(&srv, "Third", "third.example").await;
    assert_eq!(
        (over.status, over.message().as_str()),
        (403, "Project limit reached")
    );
    assert_eq!(
        srv.get(KEY, "/v1/projects").await.json()["data"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    // PATCH changes only what it names.
    let changed = send_json(
        &srv,
        Method::PATCH,
        &format!("/v1/projects/{id}"),
        &json!({"disabled": true, "name": "Renamed"}),
    )
    .await;
    assert_eq!(changed.status, 200);
    let mut want = p.clone();
    want["disabled"] = json!(true);
    want["name"] = json!("Renamed");
    assert_eq!(changed.json()["data"], want);
    assert_eq!(
        srv.get(KEY, &format!("/v1/projects/{id}")).await.json()["data"],
        want
    );
    // A disabled project still answers reads.
    assert_eq!(
        srv.get(KEY, &format!("/v1/projects/{id}/webhooks"))
            .await
            .status,
        200
    );
    // Another account's project is a missing one.
    let foreign = send_json(
        &srv,
        Method::PATCH,
        "/v1/projects/prj_2",
        &json!({"name": "Mine"}),
    )
    .await;
    assert_eq!(
        (foreign.status, foreign.message().as_str()),
        (404, "Project not found")
    );
    let other = srv.get(OTHER, "/v1/projects/prj_2").await;
    assert_eq!(other.json()["data"]["name"], "Other");
}

#[tokio::test]
async fn bad_project_input_is_refused_and_writes_nothing() {
    let srv = start(plan("active", 1000, 1000, 10));
    let auth = bearer(KEY);
    let post = |body: String, content_type: &'static str| {
        srv.call(
            Method::POST,
            "/v1/projects",
            Some(&auth),
            Some(content_type),
            Some(body),
        )
    };
    let cases: Vec<(String, &str, u16, &str)> = vec![
        (
            "{\"name\":\"a\",\"domain\":\"a.example\"}".into(),
            "text/plain",
            415,
            "Content-Type must be application/json",
        ),
        (
            format!(
                "{{\"name\":\"{}\",\"domain\":\"a.example\"}}",
                "x".repeat(9000)
            ),
            "application/json",
            413,
            "Request body is too large",
        ),
        (
            "{".into(),
            "application/json",
            400,
            "Request body must be valid JSON",
        ),
        (
            "[]".into(),
            "application/json",
            400,
            "Request body must be a JSON object",
        ),
        (
            "{\"domain\":\"a.example\"}".into(),
            "application/json",
            400,
            "`name` is required",
        ),
        (
            "{\"name\":\"a\"}".into(),
            "application/json",
            400,
            "`domain` is required",
        ),
        (
            "{\"name\":1,\"domain\":\"a.example\"}".into(),
            "application/json",
            400,
            "`name` must be a string",
        ),
        (
            "{\"name\":\"\",\"domain\":\"a.example\"}".into(),
            "application/json",
            400,
            "`name` must be 1 to 100 characters without control characters",
        ),
        (
            "{\"name\":\"a\",\"domain\":\"https://a.example\"}".into(),
            "application/json",
            400,
            "`domain` must be a host name such as shop.example (letters, digits, hyphens and dots)",
        ),
        (
            "{\"name\":\"a\",\"domain\":\"a.example\",\"disabled\":true}".into(),
            "application/json",
            400,
            "Unknown field `disabled`: only `name`, `domain` and `requireSessionToken` are allowed",
        ),
    ];
    for (body, content_type, status, message) in cases {
        let a = post(body.clone(), content_type).await;
        assert_eq!(
            (a.status, a.message().as_str()),
            (status, message),
            "{body:.80}"
        );
    }
    let patch = |body: &str| {
        srv.call(
            Method::PATCH,
            "/v1/projects/prj_1",
            Some(&auth),
            Some("application/json"),
            Some(body.to_owned()),
        )
    };
    for (body, message) in [
        (
            "{}",
            "Request body must set at least one of `name`, `domain`, `disabled` and `requireSessionToken`",
        ),
        ("{\"disabled\":\"yes\"}", "`disabled` must be true or false"),
        (
            "{\"id\":\"prj_x\"}",
            "Unknown field `id`: only `name`, `domain`, `disabled` and `requireSessionToken` are allowed",
        ),
        (
            "{\"domain\":\"bad domain\"}",
            "`domain` must be a host name such as shop.example (letters, digits, hyphens and dots)",
        ),
    ] {
        let a = patch(body).await;
        assert_eq!((a.status, a.message().as_str()), (400, message), "{body}");
    }
    let bad_id = send_json(
        &srv,
        Method::PATCH,
        "/v1/projects/a%20b",
        &json!({"name": "x"}),
    )
    .await;
    assert_eq!(bad_id.status, 400);
    // Nothing was written.
    let listed = srv.get(KEY, "/v1/projects").await;
    assert_eq!(listed.json()["data"].as_array().unwrap().len(), 1);
    assert_eq!(listed.json()["data"][0]["name"], "Shop");
}

#[tokio::test]
async fn vigil_projects_create_and_list_on_the_command_line() {
    let srv = start(plan("active", 1000, 1000, 2));
    let run = |args: &[&str]| srv.cli(args);
    let out = run(&[
        "projects",
        "create",
        "--account",
        "acc_1",
        "--name",
        "Cli",
        "--domain",
        "cli.example",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let created: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(created["domain"], "cli.example");
    let out = run(&["projects", "list", "--account", "acc_1"]);
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 2);
    // Visible through the API, and the limit holds on the command line too.
    assert_eq!(srv.get(KEY, "/v1/projects").await.json()["data"], listed);
    let out = run(&[
        "projects",
        "create",
        "--account",
        "acc_1",
        "--name",
        "More",
        "--domain",
        "more.example",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("most projects"), "{err}");
    let out = run(&["projects", "list", "--account", "acc_nobody"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown account acc_nobody"));
    let out = run(&[
        "projects",
        "create",
        "--account",
        "acc_1",
        "--name",
        "X",
        "--domain",
        "not a domain",
    ]);
    assert!(!out.status.success());
}

#[tokio::test]
async fn two_server_processes_on_one_database_share_the_per_second_limit() {
    let first = start(plan("active", 5, 1_000_000, 5));
    // A second process on the same SQLite file: the counters are in the file, not the process.
    let second = Server::start(&first.db, None);
    let burst = (0..30).map(|i| {
        let srv = if i % 2 == 0 { &first } else { &second };
        srv.get(KEY, "/v1/plan")
    });
    let answers = futures_util::future::join_all(burst).await;
    // Each admitted answer says how many requests its second had left: `r = 5 - counted`. Per
    // second, the counted positions 1..=5 are each taken once, so over a burst that spans at
    // most two seconds no position appears more than twice, and none is beyond the limit.
    let mut taken = [0usize; 6];
    for a in answers.iter().filter(|a| a.status == 200) {
        let rate = a.header_value("ratelimit");
        let r: usize = rate
            .trim_start_matches("\"burst\";r=")
            .split(';')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{rate}"));
        assert!(r < 5, "{rate}");
        taken[5 - r] += 1;
    }
    let allowed: usize = taken.iter().sum();
    assert!((5..=10).contains(&allowed), "{allowed} allowed: {taken:?}");
    assert!(
        taken[1..].iter().all(|&n| (1..=2).contains(&n)),
        "{taken:?}"
    );
    assert_eq!(
        answers.iter().filter(|a| a.status == 429).count(),
        30 - allowed
    );
}
