//! The service's decisions, tested at the service itself (no HTTP in between), over a SQLite store
//! seeded with `events/seed.json`: who a key is, which page may report a visit, what a plan, a
//! session token and an idempotency key allow.

mod common;

use common::lambda::fixture;
use vigil_core::domain::idempotency::{IdempotencyKey, Once};
use vigil_core::domain::project::{Domain, Origin, ProjectName};
use vigil_core::domain::token::ApiKey;
use vigil_core::domain::{AccountId, AddressedEvidence, PlanStatus, ProjectId, SessionId};
use vigil_core::service::error::ServiceError;
use vigil_core::service::projects::{ProjectChanges, ProjectSpec};
use vigil_detect::Evidence;

fn acc() -> AccountId {
    AccountId::parse("acc_1").unwrap()
}

fn shop() -> Origin {
    Origin::parse("https://shop.example").unwrap()
}

fn visit(ip: &str) -> AddressedEvidence {
    let evidence = Evidence {
        user_agent: Some("Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0".to_owned()),
        ..Evidence::default()
    };
    AddressedEvidence::new(ip.parse().unwrap(), evidence)
}

#[tokio::test]
async fn a_key_names_its_account_with_the_plans_terms() {
    let f = fixture().await;
    let principal = f
        .app
        .authenticate(&ApiKey::parse("vgl_dev_example").unwrap())
        .await
        .unwrap();
    assert_eq!(principal.account, acc());
    assert_eq!(principal.terms.status, PlanStatus::Trialing);
    assert_eq!(principal.terms.max_projects, 3);
    let unknown = f
        .app
        .authenticate(&ApiKey::parse("vgl_nobody_here").unwrap())
        .await;
    assert!(matches!(unknown, Err(ServiceError::Unauthorized)));
}

#[tokio::test]
async fn a_site_is_its_public_key_from_its_own_domain() {
    let f = fixture().await;
    let site = f.app.ingestion().site("pk_example", &shop()).await.unwrap();
    assert_eq!(site.project.id.as_str(), "prj_1");
    let elsewhere = Origin::parse("https://evil.example").unwrap();
    assert!(matches!(
        f.app.ingestion().site("pk_example", &elsewhere).await,
        Err(ServiceError::OriginNotAllowed)
    ));
    for key in ["pk_unknown", "not a key", ""] {
        assert!(matches!(
            f.app.ingestion().site(key, &shop()).await,
            Err(ServiceError::UnknownPublicKey)
        ));
    }
}

#[tokio::test]
async fn a_visit_needs_a_plan_in_force_and_the_token_its_project_requires() {
    let f = fixture().await;
    let session = SessionId::parse("sess_v").unwrap();
    let mut lapsed = f.app.ingestion().site("pk_example", &shop()).await.unwrap();
    lapsed.terms.expires_at = Some("2026-01-01T00:00:00Z".parse().unwrap());
    assert!(matches!(
        f.app
            .ingestion()
            .record_visit(&lapsed, &shop(), &session, None, &visit("81.2.69.142"))
            .await,
        // As for an unknown key: the page learns nothing of its customer's billing.
        Err(ServiceError::UnknownPublicKey)
    ));
    let changes = ProjectChanges {
        require_session_token: Some(true),
        ..ProjectChanges::default()
    };
    let prj = ProjectId::parse("prj_1").unwrap();
    f.app
        .projects()
        .update(&acc(), &prj, changes)
        .await
        .unwrap();
    // The change applies to the next visit at once: the instance forgets what it read.
    let site = f.app.ingestion().site("pk_example", &shop()).await.unwrap();
    assert!(matches!(
        f.app
            .ingestion()
            .record_visit(&site, &shop(), &session, None, &visit("81.2.69.142"))
            .await,
        Err(ServiceError::SessionTokenRequired)
    ));
    let token = f
        .app
        .projects()
        .session_token(&prj, &session, 60)
        .await
        .unwrap();
    let receipt = f
        .app
        .ingestion()
        .record_visit(
            &site,
            &shop(),
            &session,
            Some(&token),
            &visit("81.2.69.142"),
        )
        .await
        .unwrap();
    assert!(receipt.receipt.starts_with("evt_"), "{receipt:?}");
    assert_eq!(
        receipt.sealed, None,
        "a project that does not seal answers as before"
    );
    // A token for another session vouches for nothing.
    let other = SessionId::parse("sess_w").unwrap();
    assert!(
        f.app
            .ingestion()
            .record_visit(&site, &shop(), &other, Some(&token), &visit("81.2.69.142"))
            .await
            .is_err()
    );
}

#[tokio::test]
async fn an_idempotency_key_records_an_event_once_and_only_for_the_same_request() {
    let f = fixture().await;
    let (prj, session) = (
        ProjectId::parse("prj_1").unwrap(),
        SessionId::parse("sess_once").unwrap(),
    );
    let once = |body: &[u8]| {
        let key = IdempotencyKey::parse("retry-1").unwrap();
        Once::new(acc(), key, &[b"POST", b"/events", body], f.app.now())
    };
    let evidence = visit("185.220.101.1");
    let first = f
        .app
        .ingestion()
        .record_event(&acc(), &prj, &session, &evidence, Some(&once(b"a")))
        .await
        .unwrap();
    let again = f
        .app
        .ingestion()
        .record_event(&acc(), &prj, &session, &evidence, Some(&once(b"a")))
        .await
        .unwrap();
    assert_eq!(first, again);
    assert!(matches!(
        f.app
            .ingestion()
            .record_event(&acc(), &prj, &session, &evidence, Some(&once(b"b")))
            .await,
        Err(ServiceError::IdempotencyMismatch)
    ));
    let page = f
        .app
        .events(&acc(), &prj, &session, 10, None)
        .await
        .unwrap();
    assert_eq!(page.results.len(), 1, "one event for three requests");
    // The event is the address the evidence came with.
    assert_eq!(first.ip_address, evidence.address());
}

#[tokio::test]
async fn projects_are_created_up_to_the_plans_limit() {
    let f = fixture().await;
    let terms = f.app.plans().terms(&acc()).await.unwrap();
    let spec = |n: u32| ProjectSpec {
        name: ProjectName::parse(&format!("Shop {n}")).unwrap(),
        domain: Domain::parse(&format!("shop{n}.example")).unwrap(),
        require_session_token: true,
    };
    // The seed's project and two more reach `maxProjects` (3).
    for n in 2..=3 {
        let p = f
            .app
            .projects()
            .create(&acc(), &terms, spec(n), None)
            .await
            .unwrap();
        assert!(p.require_session_token);
    }
    assert!(matches!(
        f.app.projects().create(&acc(), &terms, spec(4), None).await,
        Err(ServiceError::ProjectLimit)
    ));
    assert_eq!(f.app.projects().list(&acc()).await.unwrap().len(), 3);
}

/// Web Bot Auth key directories as an attacker would use them: a visitor chooses which
/// directory a visit names, so the service must not fetch on its say more than the bounds allow.
mod directories {
    use super::*;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use futures_util::future::join_all;
    use serde_json::{Value, json};
    use vigil_core::domain::{ManualClock, Timestamp};
    use vigil_core::service::web_bot_auth::directories::{
        DirectoryFetcher, FetchFuture, Fetched, SOURCE_FETCHES_PER_MINUTE,
    };
    use vigil_detect::agents::Status;
    use vigil_detect::signature::sign::{AgentForm, Key};
    use vigil_detect::{Headers, RequestLine};

    const WELL_KNOWN: &str = "/.well-known/http-message-signatures-directory";

    /// Serves `key`'s directory, signed for whichever authority is asked, after `delay`; keeps
    /// every URL fetched.
    #[derive(Clone)]
    struct Directories {
        key: Arc<Key>,
        delay: Duration,
        fetched: Arc<Mutex<Vec<String>>>,
    }

    impl Directories {
        fn new(secret: [u8; 32], delay: Duration) -> Self {
            Self {
                key: Arc::new(Key::from_secret(secret)),
                delay,
                fetched: Arc::default(),
            }
        }
        fn fetched(&self) -> Vec<String> {
            self.fetched.lock().unwrap().clone()
        }
    }

    impl DirectoryFetcher for Directories {
        fn fetch<'a>(&'a self, url: &'a str) -> FetchFuture<'a> {
            Box::pin(async move {
                self.fetched.lock().unwrap().push(url.to_owned());
                tokio::time::sleep(self.delay).await;
                let u = url::Url::parse(url).map_err(|e| e.to_string())?;
                let authority = match u.port() {
                    Some(p) => format!("{}:{p}", u.host_str().unwrap_or_default()),
                    None => u.host_str().unwrap_or_default().to_owned(),
                };
                let signed = self.key.sign_directory(&authority)?;
                Ok(Fetched {
                    authority,
                    headers: Headers::from_pairs(signed),
                    body: self.key.jwks().into_bytes(),
                    max_age: Some(600),
                })
            })
        }
    }

    /// A request to `authority` signed by `key`, naming `agent` as its directory.
    fn signed(key: &Key, agent: &str, authority: &str, nonce: &str) -> AddressedEvidence {
        let request = RequestLine {
            method: Some("GET".into()),
            authority: Some(authority.into()),
            path: Some("/checkout".into()),
        };
        let mut headers: serde_json::Map<String, Value> = key
            .sign_request(
                &request,
                agent,
                AgentForm::Dictionary,
                nonce,
                Duration::from_secs(60),
            )
            .unwrap()
            .into_iter()
            .map(|(k, v)| (k, json!(v)))
            .collect();
        let ua = "Mozilla/5.0 (compatible; Claude-User/1.0; +Claude-User@anthropic.com)";
        headers.insert("user-agent".into(), json!(ua));
        let evidence: Evidence = serde_json::from_value(json!({
            "userAgent": ua, "headers": headers, "request": request,
        }))
        .unwrap();
        AddressedEvidence::new("84.128.0.1".parse().unwrap(), evidence)
    }

    async fn status(
        app: &vigil_core::service::vigil::Vigil<
            vigil_store_sqlite::SqliteStore,
            vigil_core::service::vigil::Detecting,
        >,
        session: &str,
        e: &AddressedEvidence,
    ) -> Status {
        let prj = ProjectId::parse("prj_1").unwrap();
        let s = SessionId::parse(session).unwrap();
        let event = app
            .ingestion()
            .record_event(&acc(), &prj, &s, e, None)
            .await
            .unwrap();
        event.agent.map_or(Status::Unsigned, |a| a.status)
    }

    /// Stands still at the current time, so that a test never straddles the budget's minute.
    fn clock() -> ManualClock {
        ManualClock::at(Timestamp::now())
    }

    #[tokio::test]
    async fn one_fetch_per_origin_of_its_well_known_path_whatever_the_visits_name() {
        let secret = rand::random();
        let key = Key::from_secret(secret);
        let dirs = Directories::new(secret, Duration::from_millis(200));
        let f = fixture()
            .await
            .map(|app| app.with_directory_fetcher(dirs.clone()).with_clock(clock()));
        // Ten visits at once naming one uncached directory: one fetch, the rest wait for it.
        let visits: Vec<_> = (0..10)
            .map(|i| {
                signed(
                    &key,
                    "https://agent.example",
                    "shop.example",
                    &format!("n{i}"),
                )
            })
            .collect();
        let app = &f.app;
        let statuses = join_all(
            visits
                .iter()
                .enumerate()
                .map(|(i, e)| async move { status(app, &format!("s{i}"), e).await }),
        )
        .await;
        assert!(
            statuses.iter().all(|s| *s == Status::Verified),
            "{statuses:?}"
        );
        assert_eq!(
            dirs.fetched(),
            [format!("https://agent.example{WELL_KNOWN}")]
        );
        // A path and query of the visitor's choosing is never asked of the host.
        for (i, agent) in [
            "https://agent.example/internal/admin?delete=1",
            "https://agent.example/keys.json",
            "https://agent.example/?x=1",
        ]
        .iter()
        .enumerate()
        {
            let e = signed(&key, agent, "shop.example", &format!("p{i}"));
            assert_eq!(
                status(&f.app, "s_path", &e).await,
                Status::SignedUnknown,
                "{agent}"
            );
        }
        // The well-known path named in full is the origin's directory, already known.
        let e = signed(
            &key,
            &format!("https://agent.example{WELL_KNOWN}"),
            "shop.example",
            "w",
        );
        assert_eq!(status(&f.app, "s_full", &e).await, Status::Verified);
        assert_eq!(dirs.fetched().len(), 1, "{:?}", dirs.fetched());
    }

    #[tokio::test]
    async fn forgeries_leave_nothing_in_the_store_and_fetches_are_budgeted() {
        let secret = rand::random();
        let key = Key::from_secret(secret);
        let forger = Key::from_secret(rand::random());
        let dirs = Directories::new(secret, Duration::ZERO);
        let f = fixture()
            .await
            .map(|app| app.with_directory_fetcher(dirs.clone()).with_clock(clock()));
        // Forged: the forger's key, the real directory. The keys are fetched and not shared: a
        // second instance on the same store has to fetch them itself.
        let forged = signed(&forger, "https://agent.example", "shop.example", "f1");
        assert_eq!(status(&f.app, "s_forged", &forged).await, Status::Spoofed);
        let twin_dirs = Directories::new(secret, Duration::ZERO);
        let twin = f
            .twin()
            .with_directory_fetcher(twin_dirs.clone())
            .with_clock(clock());
        let forged = signed(&forger, "https://agent.example", "shop.example", "f2");
        assert_eq!(status(&twin, "s_forged2", &forged).await, Status::Spoofed);
        assert_eq!(
            twin_dirs.fetched().len(),
            1,
            "nothing was kept for the twin"
        );
        // A signature that verifies shares the keys: a third instance fetches nothing.
        let real = signed(&key, "https://agent.example", "shop.example", "r1");
        assert_eq!(status(&f.app, "s_real", &real).await, Status::Verified);
        let third_dirs = Directories::new(secret, Duration::ZERO);
        let third = f
            .twin()
            .with_directory_fetcher(third_dirs.clone())
            .with_clock(clock());
        let real = signed(&key, "https://agent.example", "shop.example", "r2");
        assert_eq!(status(&third, "s_real2", &real).await, Status::Verified);
        assert!(
            third_dirs.fetched().is_empty(),
            "{:?}",
            third_dirs.fetched()
        );

        // One source (here the project's backend) naming a new host on every visit gets a
        // handful of fetches a minute, the first one above included.
        let mut statuses = Vec::new();
        for i in 0..12 {
            let e = signed(
                &key,
                &format!("https://h{i}.example"),
                "shop.example",
                &format!("b{i}"),
            );
            statuses.push(status(&f.app, "s_spray", &e).await);
        }
        assert_eq!(
            dirs.fetched().len(),
            SOURCE_FETCHES_PER_MINUTE as usize,
            "{:?}",
            dirs.fetched()
        );
        let verified = statuses.iter().filter(|s| **s == Status::Verified).count();
        assert_eq!(
            verified + 1,
            SOURCE_FETCHES_PER_MINUTE as usize,
            "{statuses:?}"
        );
        assert!(
            statuses[verified..]
                .iter()
                .all(|s| *s == Status::SignedUnknown)
        );
    }

    #[tokio::test]
    async fn a_page_s_signature_must_be_made_for_the_project_s_site() {
        let secret = rand::random();
        let key = Key::from_secret(secret);
        let dirs = Directories::new(secret, Duration::ZERO);
        let f = fixture()
            .await
            .map(|app| app.with_directory_fetcher(dirs.clone()).with_clock(clock()));
        let site = f.app.ingestion().site("pk_example", &shop()).await.unwrap();
        let prj = ProjectId::parse("prj_1").unwrap();
        let agent_of = |session: &str| {
            let app = &f.app;
            let prj = prj.clone();
            let session = SessionId::parse(session).unwrap();
            async move {
                let page = app.events(&acc(), &prj, &session, 1, None).await.unwrap();
                page.results[0].1.agent.clone().map(|a| a.status)
            }
        };
        // A visit the plan refuses fetches nothing, whatever it names.
        let mut spent = site.clone();
        spent.terms.max_requests = 0;
        let e = signed(&key, "https://agent.example", "shop.example", "q1");
        let s = SessionId::parse("s_refused").unwrap();
        assert!(matches!(
            f.app
                .ingestion()
                .record_visit(&spent, &shop(), &s, None, &e)
                .await,
            Err(ServiceError::Refused(_))
        ));
        assert!(dirs.fetched().is_empty());
        // Made for another site and replayed here with that site's Host: not verified, and no
        // directory is fetched for it.
        let replayed = signed(&key, "https://agent.example", "other.example", "o1");
        let s = SessionId::parse("s_other").unwrap();
        f.app
            .ingestion()
            .record_visit(&site, &shop(), &s, None, &replayed)
            .await
            .unwrap();
        assert_eq!(agent_of("s_other").await, Some(Status::SignedUnknown));
        assert!(dirs.fetched().is_empty());
        // Made for the project's site (a subdomain of its domain): verified.
        let own = signed(&key, "https://agent.example", "www.shop.example", "o2");
        let s = SessionId::parse("s_own").unwrap();
        f.app
            .ingestion()
            .record_visit(&site, &shop(), &s, None, &own)
            .await
            .unwrap();
        assert_eq!(agent_of("s_own").await, Some(Status::Verified));
    }
}
