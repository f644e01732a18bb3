//! The route table: one list that the local server, the Lambda fallback (404/405) and the SAM
//! template's paths all agree with.

use const_format::concatcp;
use http::Method;

use super::paths::{BASE, PathParam};
use vigil_core::domain::{DeliveryId, DeviceKey, EventId, ProjectId, SessionId, WebhookId};

/// Declares every route once (see [`ROUTES`]); generates the [`Route`] enum, the route table, each
/// route's Lambda binary and whether it is public, and `with_routes!`, which calls a macro with
/// every developer route's module and name (the pipeline's match of routes to endpoints, which
/// are named like their routes). `$d` is a `$`, so the macro it defines can have variables of its own.
macro_rules! declare_routes {
    ($d:tt
     developer { $($name:ident $module:ident $method:ident [$($seg:expr),+] $binary:literal;)* }
     public { $($pname:ident $pbinary:literal [$(($pmethod:ident, $ppath:expr)),+];)* }
    ) => {
        /// Calls macro `$m` with the module and name of every developer route.
        macro_rules! with_routes {
            ($d m:ident) => { $d m! { $($module::$name,)* } };
        }
        pub(crate) use with_routes;

        /// Every route of the interface (and its extensions).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Route {
            $($name,)*
            $($pname,)*
        }

        impl Route {
            pub const ALL: &[Route] = &[$(Route::$name,)* $(Route::$pname,)*];

            /// The binary (`src/bin/{binary}.rs`) of the Lambda function that serves it.
            pub fn binary(self) -> &'static str {
                match self {
                    $(Route::$name => $binary,)*
                    $(Route::$pname => $pbinary,)*
                }
            }

            /// The module of `vigil_http` that defines a developer route's endpoint (named like
            /// the route); None for a public route.
            pub fn module(self) -> Option<&'static str> {
                match self {
                    $(Route::$name => Some(stringify!($module)),)*
                    _ => None,
                }
            }

            /// Whether the route is called without a developer key: API Gateway runs it without
            /// the authorizer, and it answers outside the pipeline.
            pub fn is_public(self) -> bool {
                matches!(self, $(Route::$pname)|*)
            }
        }

        /// Paths are relative to the `/v1` base, with `{name}` parameters.
        pub const ROUTES: &[(Method, &str, Route)] = &[
            $((Method::$method, concatcp!($($seg),+), Route::$name),)*
            $($((Method::$pmethod, $ppath, Route::$pname),)+)*
        ];
    };
}

// Path placeholders, named once by the extractors that read them.
const PROJECT: &str = concatcp!("{", ProjectId::NAME, "}");
const SESSION: &str = concatcp!("{", SessionId::NAME, "}");
const WEBHOOK: &str = concatcp!("{", WebhookId::NAME, "}");
const EVENT: &str = concatcp!("{", EventId::NAME, "}");
const DEVICE: &str = concatcp!("{", DeviceKey::NAME, "}");
const DELIVERY: &str = concatcp!("{", DeliveryId::NAME, "}");

// Every route, once. A developer route's endpoint is `{module}::{name}` (the events routes in
// `ingest`, the sessions and statistics in `insight`, the others in `handlers`); the public ones
// answer outside the pipeline (collect, the agent script, the dashboard, the API reference). The SAM
// template, the binaries, the Makefile's list, the sample events and `openapi.yaml` are checked
// against this table (`tests/routes.rs`).
#[rustfmt::skip]
declare_routes! {$
    developer {
        ListResults          handlers GET    ["/results/", PROJECT, "/", SESSION]                             "list-results";
        SessionScore         handlers GET    ["/results/", PROJECT, "/", SESSION, "/general"]                 "session-score";
        GetPlan              handlers GET    ["/plan"]                                                        "get-plan";
        GetProject           handlers GET    ["/projects/", PROJECT]                                          "get-project";
        CreateWebhook        handlers POST   ["/projects/", PROJECT, "/webhooks"]                             "create-webhook";
        ListWebhooks         handlers GET    ["/projects/", PROJECT, "/webhooks"]                             "list-webhooks";
        DeleteWebhook        handlers DELETE ["/projects/", PROJECT, "/webhooks/", WEBHOOK]                   "delete-webhook";
        ListDeliveries       handlers GET    ["/projects/", PROJECT, "/webhooks/", WEBHOOK, "/deliveries"]    "list-deliveries";
        GetWebhookSecret     handlers GET    ["/projects/", PROJECT, "/webhooks/", WEBHOOK, "/secret"]        "get-webhook-secret";
        RotateWebhookSecret  handlers POST   ["/projects/", PROJECT, "/webhooks/", WEBHOOK, "/secret/rotate"] "rotate-webhook-secret";
        TestWebhook          handlers POST   ["/projects/", PROJECT, "/webhooks/", WEBHOOK, "/test"]          "test-webhook";
        Redeliver            handlers POST   ["/projects/", PROJECT, "/deliveries/", DELIVERY, "/redeliver"]  "redeliver";
        CreateProject        handlers POST   ["/projects"]                                                    "create-project";
        ListProjects         handlers GET    ["/projects"]                                                    "list-projects";
        UpdateProject        handlers PATCH  ["/projects/", PROJECT]                                          "update-project";
        GetUsage             handlers GET    ["/usage"]                                                       "get-usage";
        CreateEvent          ingest   POST   ["/projects/", PROJECT, "/sessions/", SESSION, "/events"]        "create-event";
        ListEvents           ingest   GET    ["/projects/", PROJECT, "/sessions/", SESSION, "/events"]        "list-events";
        GetEvent             ingest   GET    ["/projects/", PROJECT, "/sessions/", SESSION, "/events/", EVENT] "get-event";
        ListSessions         insight  GET    ["/projects/", PROJECT, "/sessions"]                             "list-sessions";
        ListDeviceSessions   insight  GET    ["/projects/", PROJECT, "/devices/", DEVICE, "/sessions"]        "list-device-sessions";
        GetStats             insight  GET    ["/projects/", PROJECT, "/stats"]                                "get-stats";
        GetSealingKey        handlers GET    ["/projects/", PROJECT, "/sealing-key"]                          "get-sealing-key";
        RotateSealingKey     handlers POST   ["/projects/", PROJECT, "/sealing-key/rotate"]                   "rotate-sealing-key";
        PutLabel             handlers PUT    ["/projects/", PROJECT, "/sessions/", SESSION, "/label"]         "put-label";
        GetLabel             handlers GET    ["/projects/", PROJECT, "/sessions/", SESSION, "/label"]         "get-label";
        DeleteLabel          handlers DELETE ["/projects/", PROJECT, "/sessions/", SESSION, "/label"]         "delete-label";
        ListLabels           handlers GET    ["/projects/", PROJECT, "/labels"]                               "list-labels";
        GetQuality           handlers GET    ["/projects/", PROJECT, "/quality"]                              "get-quality";
    }
    public {
        Collect      "collect"       [(POST, "/collect"), (OPTIONS, "/collect")];
        AgentScript  "agent-script"  [(GET, "/agent.js"), (HEAD, "/agent.js")];
        Dashboard    "dashboard"     [(GET, DASHBOARD_ALIAS), (HEAD, DASHBOARD_ALIAS)];
        Reference    "api-reference" [(GET, REFERENCE_ALIAS), (HEAD, REFERENCE_ALIAS),
                                      (GET, crate::reference::RENDERER_PATH), (HEAD, crate::reference::RENDERER_PATH),
                                      (GET, crate::reference::OPENAPI_PATH), (HEAD, crate::reference::OPENAPI_PATH)];
    }
}

/// The dashboard's path, under the base and at the root.
pub const DASHBOARD_ALIAS: &str = "/dashboard";
/// The API reference's path, under the base and, with its renderer and document, at the root.
pub const REFERENCE_ALIAS: &str = "/docs";

/// The paths `vigil serve` also answers at its root, where a person would look for them.
const ROOT_ALIASES: &[&str] = &[
    DASHBOARD_ALIAS,
    REFERENCE_ALIAS,
    crate::reference::RENDERER_PATH,
    crate::reference::OPENAPI_PATH,
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    Found(Route, Vec<(String, String)>),
    NotFound,
    /// The path exists with other methods: the `Allow` header value.
    MethodNotAllowed(String),
}

pub struct Router {
    inner: matchit::Router<Vec<(Method, Route)>>,
}

impl Default for Router {
    fn default() -> Self {
        Self::new()
    }
}

impl Router {
    pub fn new() -> Self {
        let mut by_path: Vec<(&str, Vec<(Method, Route)>)> = Vec::new();
        for (m, p, r) in ROUTES {
            match by_path.iter_mut().find(|(q, _)| q == p) {
                Some((_, v)) => v.push((m.clone(), *r)),
                None => by_path.push((p, vec![(m.clone(), *r)])),
            }
        }
        let mut inner = matchit::Router::new();
        for (p, v) in by_path {
            // The table above is static and conflict-free; a test proves it.
            let _ = inner.insert(p, v);
        }
        Self { inner }
    }

    /// Resolves a path relative to the base (`/plan`, not `/v1/plan`).
    pub fn resolve(&self, method: &Method, path: &str) -> Resolved {
        let Ok(m) = self.inner.at(path) else {
            return Resolved::NotFound;
        };
        match m.value.iter().find(|(meth, _)| meth == method) {
            Some((_, route)) => Resolved::Found(
                *route,
                m.params
                    .iter()
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect(),
            ),
            None => Resolved::MethodNotAllowed(
                m.value
                    .iter()
                    .map(|(meth, _)| meth.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
        }
    }

    /// Resolves a full path, which must start with the `/v1` base.
    pub fn resolve_full(&self, method: &Method, path: &str) -> Resolved {
        match path.strip_prefix(BASE) {
            Some(rest) if rest.starts_with('/') => self.resolve(method, rest),
            // The dashboard and the reference also answer at the site's root, where a person
            // would look for them (under API Gateway they are the stage's: /v1/dashboard).
            _ if ROOT_ALIASES.contains(&path) => self.resolve(method, path),
            _ => Resolved::NotFound,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_reads_as_the_interface_names_it() {
        let paths: Vec<&str> = ROUTES.iter().map(|(_, p, _)| *p).collect();
        assert_eq!(
            paths,
            [
                "/results/{projectId}/{sessionId}",
                "/results/{projectId}/{sessionId}/general",
                "/plan",
                "/projects/{projectId}",
                "/projects/{projectId}/webhooks",
                "/projects/{projectId}/webhooks",
                "/projects/{projectId}/webhooks/{webhookId}",
                "/projects/{projectId}/webhooks/{webhookId}/deliveries",
                "/projects/{projectId}/webhooks/{webhookId}/secret",
                "/projects/{projectId}/webhooks/{webhookId}/secret/rotate",
                "/projects/{projectId}/webhooks/{webhookId}/test",
                "/projects/{projectId}/deliveries/{deliveryId}/redeliver",
                "/projects",
                "/projects",
                "/projects/{projectId}",
                "/usage",
                "/projects/{projectId}/sessions/{sessionId}/events",
                "/projects/{projectId}/sessions/{sessionId}/events",
                "/projects/{projectId}/sessions/{sessionId}/events/{eventId}",
                "/projects/{projectId}/sessions",
                "/projects/{projectId}/devices/{device}/sessions",
                "/projects/{projectId}/stats",
                "/projects/{projectId}/sealing-key",
                "/projects/{projectId}/sealing-key/rotate",
                "/projects/{projectId}/sessions/{sessionId}/label",
                "/projects/{projectId}/sessions/{sessionId}/label",
                "/projects/{projectId}/sessions/{sessionId}/label",
                "/projects/{projectId}/labels",
                "/projects/{projectId}/quality",
                "/collect",
                "/collect",
                "/agent.js",
                "/agent.js",
                "/dashboard",
                "/dashboard",
                "/docs",
                "/docs",
                "/docs/redoc.standalone.js",
                "/docs/redoc.standalone.js",
                "/openapi.yaml",
                "/openapi.yaml",
            ]
        );
    }

    #[test]
    fn every_route_resolves_to_itself() {
        let router = Router::new();
        for (m, p, r) in ROUTES {
            let concrete = p
                .replace("{projectId}", "p")
                .replace("{sessionId}", "s")
                .replace("{webhookId}", "w")
                .replace("{eventId}", "evt_1_1");
            match router.resolve(m, &concrete) {
                Resolved::Found(found, _) => assert_eq!(found, *r, "{p}"),
                other => panic!("{p}: {other:?}"),
            }
        }
    }

    #[test]
    fn every_route_is_in_the_table() {
        for r in Route::ALL {
            // Once, but for the public routes' preflight (OPTIONS) and HEAD.
            let methods: Vec<&Method> = ROUTES
                .iter()
                .filter(|(_, _, x)| x == r)
                .map(|(m, ..)| m)
                .collect();
            let extra = methods
                .iter()
                .filter(|m| matches!(**m, &Method::OPTIONS | &Method::HEAD))
                .count();
            // The reference serves three static paths: its page, its renderer, the document.
            let paths = if *r == Route::Reference { 3 } else { 1 };
            assert_eq!(methods.len() - extra, paths, "{r:?}");
            assert!(extra == 0 || r.is_public(), "{r:?}");
        }
    }

    #[test]
    fn params_are_extracted() {
        let r = Router::new();
        assert_eq!(
            r.resolve_full(&Method::GET, "/v1/results/prj_1/sess_1/general"),
            Resolved::Found(
                Route::SessionScore,
                vec![
                    ("projectId".into(), "prj_1".into()),
                    ("sessionId".into(), "sess_1".into())
                ]
            )
        );
    }

    #[test]
    fn unknown_paths_and_methods() {
        let r = Router::new();
        assert_eq!(r.resolve_full(&Method::GET, "/v1/nope"), Resolved::NotFound);
        assert_eq!(r.resolve_full(&Method::GET, "/plan"), Resolved::NotFound);
        assert_eq!(r.resolve_full(&Method::GET, "/v1plan"), Resolved::NotFound);
        assert_eq!(
            r.resolve_full(&Method::GET, "/v1/results/p"),
            Resolved::NotFound
        );
        assert_eq!(
            r.resolve_full(&Method::PUT, "/v1/projects/p/webhooks"),
            Resolved::MethodNotAllowed("POST, GET".into())
        );
        assert_eq!(
            r.resolve_full(&Method::POST, "/v1/plan"),
            Resolved::MethodNotAllowed("GET".into())
        );
    }
}
