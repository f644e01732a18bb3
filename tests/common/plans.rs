//! A server whose account has a chosen plan, for the plan and project tests.

use super::api::{Resp, Server, bearer};
use reqwest::Method;
use serde_json::{Value, json};

pub const KEY: &str = "vgl_plans_key";
pub const OTHER: &str = "vgl_other_key";

pub fn plan(status: &str, max_rps: u32, max_requests: u64, max_projects: u32) -> Value {
    json!({"id": "plan_x", "name": "X", "description": "x", "maxRps": max_rps,
           "maxProjects": max_projects, "maxRequests": max_requests, "expiresAt": null,
           "subscribedAt": "2026-01-31T00:00:00.000Z", "status": status, "unsubscribedAt": null})
}

/// A server whose account acc_1 (key KEY) has `plan` and project prj_1, beside acc_2 (key OTHER,
/// an ordinary plan) and its project prj_2.
pub fn start(plan: Value) -> Server {
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
pub async fn create(srv: &Server, name: &str, domain: &str) -> Resp {
    send_json(
        srv,
        Method::POST,
        "/v1/projects",
        &json!({"name": name, "domain": domain}),
    )
    .await
}

pub async fn send_json(srv: &Server, method: Method, path: &str, body: &Value) -> Resp {
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
