//! A project's sessions and statistics, and the dashboard page that shows them.

use crate::message::{Request, Response};
use vigil_detect::agents::Status;

use super::extract::{FromQuery, Query, page_limit, query_time, with_next_link};
use super::pipeline::endpoint;
use super::reply::Reply;
use crate::error::ApiError;
use vigil_core::domain::insight::{Bucket, Granularity, SessionQuery, SessionSummary, StatsRange};
use vigil_core::domain::{DeviceKey, ProjectId, Score, Timestamp, cursor};
use vigil_core::store::{InsightStore, ProjectStore};

/// The sessions list's query: `limit`, `cursor`, `minScoreBot`, `minScoreProxyVpn`, and the
/// client's own parameters that the next page's link keeps.
pub struct Sessions {
    pub query: SessionQuery,
    /// `&name=value` for each of `limit`, `minScoreBot` and `minScoreProxyVpn` the client sent.
    kept: String,
}

impl FromQuery<ProjectId> for Sessions {
    fn from_query(q: Query<'_>, project: &ProjectId, _: Timestamp) -> Result<Self, ApiError> {
        Ok(Self {
            query: session_query(q, project)?,
            kept: ["limit", "minScoreBot", "minScoreProxyVpn", "agent"]
                .into_iter()
                .filter_map(|name| Some(format!("&{name}={}", urlencoding(q.first(name)?))))
                .collect(),
        })
    }
}

fn session_query(q: Query<'_>, project: &ProjectId) -> Result<SessionQuery, ApiError> {
    let limit = page_limit(q)?;
    let after = q
        .first("cursor")
        .map(|c| cursor::decode_sessions(c, project))
        .transpose()
        .map_err(|_| ApiError::bad_request("cursor is not valid for this project"))?;
    let score = |name: &str| {
        q.first(name)
            .map(|s| {
                s.parse::<f64>()
                    .ok()
                    .and_then(|v| Score::new(v).ok())
                    .ok_or_else(|| {
                        ApiError::bad_request(format!("{name} must be a number from 0 to 1"))
                    })
            })
            .transpose()
    };
    Ok(SessionQuery {
        limit,
        after,
        min_score_bot: score("minScoreBot")?,
        min_score_proxy_vpn: score("minScoreProxyVpn")?,
        device: None,
        agent: q
            .first("agent")
            .map(|a| {
                Status::parse(a).ok_or_else(|| {
                    ApiError::bad_request(
                        "agent must be one of: verified, signed_unknown, spoofed, unsigned",
                    )
                })
            })
            .transpose()?,
    })
}

endpoint! {
    /// GET /projects/{projectId}/sessions: the project's sessions, most recently seen first, paged
    /// like results (`limit`, `cursor`, `Link`), filtered by `minScoreBot` and `minScoreProxyVpn`.
    ListSessions: ProjectStore + InsightStore;
    (app, call: ProjectId, (), Sessions) -> Vec<SessionSummary> {
        let project = &call.path;
        let path = format!("/projects/{project}/sessions");
        sessions_page(app, &call.account, project, &call.query, &path).await
    }
}

/// A page of sessions, with the next page's link keeping the client's own parameters and the
/// new cursor.
async fn sessions_page<S: ProjectStore + InsightStore, D>(
    app: &vigil_core::service::vigil::Vigil<S, D>,
    account: &vigil_core::domain::AccountId,
    project: &ProjectId,
    query: &Sessions,
    path: &str,
) -> Result<Reply<Vec<SessionSummary>>, ApiError> {
    let page = app.sessions(account, project, &query.query).await?;
    let reply = Reply::ok(page.sessions);
    Ok(match page.next {
        None => reply,
        Some(at) => with_next_link(
            reply,
            path,
            &cursor::encode_sessions(project, &at),
            &query.kept,
        ),
    })
}

impl FromQuery<(ProjectId, DeviceKey)> for Sessions {
    fn from_query(
        q: Query<'_>,
        path: &(ProjectId, DeviceKey),
        now: Timestamp,
    ) -> Result<Self, ApiError> {
        let mut s = <Sessions as FromQuery<ProjectId>>::from_query(q, &path.0, now)?;
        s.query.device = Some(path.1.clone());
        Ok(s)
    }
}

endpoint! {
    /// GET /projects/{projectId}/devices/{device}/sessions: the sessions whose latest device key is
    /// `device`, most recently seen first, paged and filtered as the sessions list is.
    ListDeviceSessions: ProjectStore + InsightStore;
    (app, call: (ProjectId, DeviceKey), (), Sessions) -> Vec<SessionSummary> {
        let (project, device) = &call.path;
        let path = format!("/projects/{project}/devices/{}/sessions", device.as_str());
        sessions_page(app, &call.account, project, &call.query, &path).await
    }
}

/// A query value as it goes back into a link (the values read are numbers; anything else is
/// escaped rather than trusted).
fn urlencoding(v: &str) -> String {
    percent_encoding::utf8_percent_encode(v, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// The statistics query: `granularity` (hour by default), `from` and `to` (RFC 3339; by default
/// the last 24 hours or the last 30 days, ending with the current bucket).
fn stats_range(q: Query<'_>, now: Timestamp) -> Result<StatsRange, ApiError> {
    let granularity = match q.first("granularity") {
        None => Granularity::Hour,
        Some(g) => Granularity::parse(g)
            .ok_or_else(|| ApiError::bad_request("granularity must be one of: hour, day"))?,
    };
    let (from, to) = (query_time(q, "from")?, query_time(q, "to")?);
    let default_span = match granularity {
        Granularity::Hour => 24,
        Granularity::Day => 30,
    };
    let invalid = |e: vigil_core::domain::insight::RangeError| ApiError::bad_request(e.to_string());
    let span = default_span * granularity.seconds() * 1000;
    let at = |ms: i64, name: &str| {
        Timestamp::from_unix_millis(ms)
            .map_err(|_| ApiError::bad_request(format!("{name} is out of range")))
    };
    // A missing end is one default span from the given one (but not past now).
    let (from, to) = match (from, to) {
        (None, None) => return StatsRange::last(now, default_span, granularity).map_err(invalid),
        (Some(f), Some(t)) => (f, t),
        (Some(f), None) => {
            let end = f
                .unix_millis()
                .saturating_add(span)
                .min(now.unix_millis() + 1);
            (f, at(end.max(f.unix_millis() + 1), "from")?)
        }
        (None, Some(t)) => (at(t.unix_millis().saturating_sub(span), "to")?, t),
    };
    StatsRange::new(from, to, granularity).map_err(invalid)
}

impl FromQuery<ProjectId> for StatsRange {
    fn from_query(q: Query<'_>, _: &ProjectId, now: Timestamp) -> Result<Self, ApiError> {
        stats_range(q, now)
    }
}

endpoint! {
    /// GET /projects/{projectId}/stats?from=&to=&granularity=hour|day: one bucket per hour or day.
    GetStats: ProjectStore + InsightStore;
    (app, call: ProjectId, (), StatsRange) -> Vec<Bucket> {
        Ok(Reply::ok(
            app.stats(&call.account, &call.path, &call.query).await?,
        ))
    }
}

/// The dashboard page: static HTML whose script asks for a developer key and calls the API.
const DASHBOARD_HTML: &str = include_str!("../../../dashboard/index.html");

/// The page's Content-Security-Policy: its one inline script by hash, its own API only.
static DASHBOARD_CSP: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "default-src 'none'; script-src {}; style-src 'unsafe-inline'; \
         connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; \
         frame-ancestors 'none'",
        crate::statics::inline_script_source(DASHBOARD_HTML)
    )
});

/// GET /dashboard (and HEAD): the page, the same for everyone; it holds no data.
pub fn dashboard(req: &Request) -> Response {
    crate::statics::page(req, DASHBOARD_HTML, &DASHBOARD_CSP)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::QueryParams;
    use http::{StatusCode, header};

    fn req(q: &[(&str, &str)]) -> QueryParams {
        QueryParams::parse(
            &url::form_urlencoded::Serializer::new(String::new())
                .extend_pairs(q)
                .finish(),
        )
    }

    fn now() -> Timestamp {
        "2026-11-23T10:15:00.000Z".parse().unwrap()
    }

    #[test]
    fn stats_ranges_default_and_validate() {
        let r = stats_range(Query::of(&req(&[])), now()).unwrap();
        assert_eq!(r.starts().count(), 24);
        assert_eq!(r.to().to_string(), "2026-11-23T11:00:00.000Z");
        let r = stats_range(Query::of(&req(&[("granularity", "day")])), now()).unwrap();
        assert_eq!(r.starts().count(), 30);
        let msg = |q: &[(&str, &str)]| {
            stats_range(Query::of(&req(q)), now())
                .unwrap_err()
                .message()
                .to_owned()
        };
        assert_eq!(
            msg(&[("granularity", "week")]),
            "granularity must be one of: hour, day"
        );
        assert!(msg(&[("from", "yesterday")]).starts_with("from must be an RFC 3339"));
        assert_eq!(
            msg(&[
                ("from", "2026-11-23T00:00:00Z"),
                ("to", "2026-11-22T00:00:00Z")
            ]),
            "`from` must be before `to`"
        );
        assert_eq!(
            msg(&[
                ("from", "2026-01-01T00:00:00Z"),
                ("to", "2026-03-01T00:00:00Z")
            ]),
            "the range may span at most 744 hours for granularity=hour"
        );
        let r = stats_range(Query::of(&req(&[("from", "2026-11-23T08:00:00Z")])), now()).unwrap();
        assert_eq!(r.starts().count(), 3);
    }

    #[test]
    fn session_queries_validate_their_parameters() {
        let p = ProjectId::parse("prj_1").unwrap();
        let q = session_query(Query::of(&req(&[("minScoreBot", "0.5")])), &p).unwrap();
        assert_eq!(q.min_score_bot, Some(Score::new(0.5).unwrap()));
        assert_eq!(q.limit, super::super::extract::MAX_PAGE);
        for (name, v) in [
            ("minScoreBot", "2"),
            ("minScoreProxyVpn", "x"),
            ("limit", "0"),
            ("cursor", "zz"),
        ] {
            let e = session_query(Query::of(&req(&[(name, v)])), &p).unwrap_err();
            assert_eq!(e.status(), StatusCode::BAD_REQUEST, "{name}={v}");
        }
    }

    #[test]
    fn the_dashboard_allows_only_its_own_script() {
        let res = dashboard(&Request::default());
        let csp = res.headers()[header::CONTENT_SECURITY_POLICY]
            .to_str()
            .unwrap();
        let script_src = csp
            .split(';')
            .find(|d| d.trim().starts_with("script-src"))
            .unwrap();
        assert!(script_src.contains("'sha256-"), "{csp}");
        assert!(!script_src.contains("unsafe"), "{csp}");
    }
}
