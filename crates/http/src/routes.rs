//! The route table: one list that the local server, the Lambda fallback (404/405) and the SAM
//! template's paths all agree with.

use const_format::concatcp;
use http::Method;

pub use super::paths::BASE;
use super::paths::PathParam;
use crate::domain::{DeliveryId, DeviceKey, EventId, ProjectId, SessionId, WebhookId};

/// Calls macro `$m` with the name of every route: the one list that the [`Route`] enum and the
/// pipeline's match of routes to endpoints (named like their routes) are made from.
macro_rules! with_routes {
    ($m:ident) => {
        $m! {
            ListResults,
            SessionScore,
            GetPlan,
            GetProject,
            CreateWebhook,
            ListWebhooks,
            DeleteWebhook,
            ListDeliveries,
            GetWebhookSecret,
            RotateWebhookSecret,
            TestWebhook,
            Redeliver,
            CreateProject,
            ListProjects,
            UpdateProject,
            GetUsage,
            CreateEvent,
            ListEvents,
            GetEvent,
            ListSessions,
            ListDeviceSessions,
            GetStats,
            GetSealingKey,
            RotateSealingKey,
            PutLabel,
            GetLabel,
            DeleteLabel,
            ListLabels,
            GetQuality,
        }
    };
}
pub(crate) use with_routes;

macro_rules! route_enum {
    ($($name:ident),* $(,)?) => {
        /// Every route of the interface (and its extensions).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Route {
            $($name,)*
            /// The browser's visits (public key and origin, and their CORS preflight): a path
            /// of their own, outside the developer pipeline.
            Collect,
            /// The browser agent: a static script, outside the pipeline (no key, no plan).
            AgentScript,
            /// The dashboard: a static page, outside the pipeline; its script calls the API with
            /// the key a person types in.
            Dashboard,
            /// The API reference: its page, its renderer and `openapi.yaml`, static and public.
            Reference,
        }

        impl Route {
            pub const ALL: &[Route] =
                &[$(Route::$name,)* Route::Collect, Route::AgentScript, Route::Dashboard, Route::Reference];
        }
    };
}
with_routes!(route_enum);

// Path placeholders, named once by the extractors that read them.
const PROJECT: &str = concatcp!("{", ProjectId::NAME, "}");
const SESSION: &str = concatcp!("{", SessionId::NAME, "}");
const WEBHOOK: &str = concatcp!("{", WebhookId::NAME, "}");
const EVENT: &str = concatcp!("{", EventId::NAME, "}");
const DEVICE: &str = concatcp!("{", DeviceKey::NAME, "}");
const DELIVERY: &str = concatcp!("{", DeliveryId::NAME, "}");

/// Paths are relative to the `/v1` base, with `{name}` parameters.
#[rustfmt::skip]
pub const ROUTES: &[(Method, &str, Route)] = &[
    (Method::GET,    concatcp!("/results/", PROJECT, "/", SESSION),                      Route::ListResults),
    (Method::GET,    concatcp!("/results/", PROJECT, "/", SESSION, "/general"),          Route::SessionScore),
    (Method::GET,    "/plan",                                                             Route::GetPlan),
    (Method::GET,    concatcp!("/projects/", PROJECT),                                    Route::GetProject),
    (Method::POST,   concatcp!("/projects/", PROJECT, "/webhooks"),                       Route::CreateWebhook),
    (Method::GET,    concatcp!("/projects/", PROJECT, "/webhooks"),                       Route::ListWebhooks),
    (Method::DELETE, concatcp!("/projects/", PROJECT, "/webhooks/", WEBHOOK),             Route::DeleteWebhook),
    (Method::GET,    concatcp!("/projects/", PROJECT, "/webhooks/", WEBHOOK, "/deliveries"), Route::ListDeliveries),
    (Method::GET,    concatcp!("/projects/", PROJECT, "/webhooks/", WEBHOOK, "/secret"),  Route::GetWebhookSecret),
    (Method::POST,   concatcp!("/projects/", PROJECT, "/webhooks/", WEBHOOK, "/secret/rotate"), Route::RotateWebhookSecret),
    (Method::POST,   concatcp!("/projects/", PROJECT, "/webhooks/", WEBHOOK, "/test"),    Route::TestWebhook),
    (Method::POST,   concatcp!("/projects/", PROJECT, "/deliveries/", DELIVERY, "/redeliver"), Route::Redeliver),
    (Method::POST,   "/projects",                                                         Route::CreateProject),
    (Method::GET,    "/projects",                                                         Route::ListProjects),
    (Method::PATCH,  concatcp!("/projects/", PROJECT),                                    Route::UpdateProject),
    (Method::GET,    "/usage",                                                            Route::GetUsage),
    (Method::POST,   concatcp!("/projects/", PROJECT, "/sessions/", SESSION, "/events"),  Route::CreateEvent),
    (Method::GET,    concatcp!("/projects/", PROJECT, "/sessions/", SESSION, "/events"),  Route::ListEvents),
    (Method::GET,    concatcp!("/projects/", PROJECT, "/sessions/", SESSION, "/events/", EVENT), Route::GetEvent),
    (Method::GET,    concatcp!("/projects/", PROJECT, "/sessions"),                       Route::ListSessions),
    (Method::GET,    concatcp!("/projects/", PROJECT, "/devices/", DEVICE, "/sessions"),  Route::ListDeviceSessions),
    (Method::GET,    concatcp!("/projects/", PROJECT, "/stats"),                          Route::GetStats),
    (Method::GET,    concatcp!("/projects/", PROJECT, "/sealing-key"),                    Route::GetSealingKey),
    (Method::POST,   concatcp!("/projects/", PROJECT, "/sealing-key/rotate"),             Route::RotateSealingKey),
    (Method::PUT,    concatcp!("/projects/", PROJECT, "/sessions/", SESSION, "/label"),   Route::PutLabel),
    (Method::GET,    concatcp!("/projects/", PROJECT, "/sessions/", SESSION, "/label"),   Route::GetLabel),
    (Method::DELETE, concatcp!("/projects/", PROJECT, "/sessions/", SESSION, "/label"),   Route::DeleteLabel),
    (Method::GET,    concatcp!("/projects/", PROJECT, "/labels"),                         Route::ListLabels),
    (Method::GET,    concatcp!("/projects/", PROJECT, "/quality"),                        Route::GetQuality),
    (Method::POST,   "/collect",                                                          Route::Collect),
    (Method::OPTIONS, "/collect",                                                         Route::Collect),
    (Method::GET,    "/agent.js",                                                         Route::AgentScript),
    (Method::HEAD,   "/agent.js",                                                         Route::AgentScript),
    (Method::GET,    DASHBOARD_ALIAS,                                                     Route::Dashboard),
    (Method::HEAD,   DASHBOARD_ALIAS,                                                     Route::Dashboard),
    (Method::GET,    REFERENCE_ALIAS,                                                     Route::Reference),
    (Method::HEAD,   REFERENCE_ALIAS,                                                     Route::Reference),
    (Method::GET,    crate::reference::RENDERER_PATH,                                     Route::Reference),
    (Method::HEAD,   crate::reference::RENDERER_PATH,                                     Route::Reference),
    (Method::GET,    crate::reference::OPENAPI_PATH,                                      Route::Reference),
    (Method::HEAD,   crate::reference::OPENAPI_PATH,                                      Route::Reference),
];

impl Route {
    /// Whether the route is called without a developer key: the collect route (public key and
    /// origin instead) and the agent script. API Gateway runs them without the authorizer.
    pub fn is_public(self) -> bool {
        matches!(
            self,
            Route::Collect | Route::AgentScript | Route::Dashboard | Route::Reference
        )
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
