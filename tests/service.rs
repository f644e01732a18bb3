//! The service's decisions, tested at the service itself (no HTTP in between), over a SQLite store
//! seeded with `events/seed.json`: who a key is, which page may report a visit, what a plan, a
//! session token and an idempotency key allow.

mod common;

use common::lambda::fixture;
use vigil::detect::Evidence;
use vigil::domain::idempotency::{IdempotencyKey, Once};
use vigil::domain::plan::Refusal;
use vigil::domain::project::{Domain, Origin, ProjectName};
use vigil::domain::token::ApiKey;
use vigil::domain::{AccountId, AddressedEvidence, PlanStatus, ProjectId, SessionId};
use vigil::service::ServiceError;
use vigil::service::projects::{ProjectChanges, ProjectSpec};

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
    let site = f.app.site("pk_example", &shop()).await.unwrap();
    assert_eq!(site.project.id.as_str(), "prj_1");
    let elsewhere = Origin::parse("https://evil.example").unwrap();
    assert!(matches!(
        f.app.site("pk_example", &elsewhere).await,
        Err(ServiceError::OriginNotAllowed)
    ));
    for key in ["pk_unknown", "not a key", ""] {
        assert!(matches!(
            f.app.site(key, &shop()).await,
            Err(ServiceError::UnknownPublicKey)
        ));
    }
}

#[tokio::test]
async fn a_visit_needs_a_plan_in_force_and_the_token_its_project_requires() {
    let f = fixture().await;
    let session = SessionId::parse("sess_v").unwrap();
    let mut lapsed = f.app.site("pk_example", &shop()).await.unwrap();
    lapsed.terms.expires_at = Some("2026-01-01T00:00:00Z".parse().unwrap());
    assert!(matches!(
        f.app
            .record_visit(&lapsed, &session, None, &visit("81.2.69.142"))
            .await,
        Err(ServiceError::Refused(Refusal::PlanInactive))
    ));
    let changes = ProjectChanges {
        require_session_token: Some(true),
        ..ProjectChanges::default()
    };
    let prj = ProjectId::parse("prj_1").unwrap();
    f.app.update_project(&acc(), &prj, changes).await.unwrap();
    // The change applies to the next visit at once: the instance forgets what it read.
    let site = f.app.site("pk_example", &shop()).await.unwrap();
    assert!(matches!(
        f.app
            .record_visit(&site, &session, None, &visit("81.2.69.142"))
            .await,
        Err(ServiceError::SessionTokenRequired)
    ));
    let token = f.app.session_token(&prj, &session, 60).await.unwrap();
    let receipt = f
        .app
        .record_visit(&site, &session, Some(&token), &visit("81.2.69.142"))
        .await
        .unwrap();
    assert!(receipt.starts_with("evt_"), "{receipt}");
    // A token for another session vouches for nothing.
    let other = SessionId::parse("sess_w").unwrap();
    assert!(
        f.app
            .record_visit(&site, &other, Some(&token), &visit("81.2.69.142"))
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
        .record_event(&acc(), &prj, &session, &evidence, Some(&once(b"a")))
        .await
        .unwrap();
    let again = f
        .app
        .record_event(&acc(), &prj, &session, &evidence, Some(&once(b"a")))
        .await
        .unwrap();
    assert_eq!(first, again);
    assert!(matches!(
        f.app
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
    let terms = f.app.terms(&acc()).await.unwrap();
    let spec = |n: u32| ProjectSpec {
        name: ProjectName::parse(&format!("Shop {n}")).unwrap(),
        domain: Domain::parse(&format!("shop{n}.example")).unwrap(),
        require_session_token: true,
    };
    // The seed's project and two more reach `maxProjects` (3).
    for n in 2..=3 {
        let p = f
            .app
            .create_project(&acc(), &terms, spec(n), None)
            .await
            .unwrap();
        assert!(p.require_session_token);
    }
    assert!(matches!(
        f.app.create_project(&acc(), &terms, spec(4), None).await,
        Err(ServiceError::ProjectLimit)
    ));
    assert_eq!(f.app.projects(&acc()).await.unwrap().len(), 3);
}
