//! Seed files: accounts, keys, projects, webhooks and results loaded into a store. The whole file is
//! validated (shape, values and references) before anything is written, and results go through the
//! normal write path (session summary, change feed).

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;

use serde::Deserialize;

use crate::domain::token::ApiKey;
use crate::domain::webhook::{MAX_WEBHOOKS_PER_PROJECT, UrlPolicy, WebhookType, WebhookUrl};
use crate::domain::{
    Account, AccountId, CheckResult, NewResult, Plan, PlanId, PlanStatus, Project, ProjectId,
    Score, SessionId, Timestamp, Webhook, WebhookId,
};
use crate::service::error::ServiceError;
use crate::service::vigil::Vigil;
use crate::store::Store;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SeedFile {
    #[serde(default)]
    pub accounts: Vec<SeedAccount>,
    /// Projects are the domain's own type: the seed's shape is the API's, plus `accountId`.
    #[serde(default)]
    pub projects: Vec<Project>,
    #[serde(default)]
    pub webhooks: Vec<SeedWebhook>,
    #[serde(default)]
    pub results: Vec<SeedResult>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SeedAccount {
    pub id: AccountId,
    pub api_keys: Vec<ApiKey>,
    pub plan: Plan,
}

/// A webhook with its project. The URL stays text until validation, which applies the command's
/// URL policy (loopback receivers are allowed only when asked for).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SeedWebhook {
    pub id: WebhookId,
    pub project_id: ProjectId,
    #[serde(rename = "type")]
    pub kind: WebhookType,
    pub url: String,
    pub created_at: Timestamp,
}

/// A result with its project and session, flat as the API shows results. (Flattening a
/// [`CheckResult`] into it would lose the field's path in errors: `results[1].scoreBot`.)
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SeedResult {
    pub project_id: ProjectId,
    pub session_id: SessionId,
    pub score_bot: Score,
    pub score_proxy_vpn: Score,
    pub ip_address: IpAddr,
    pub created_at: Timestamp,
}

impl From<SeedResult> for NewResult {
    fn from(r: SeedResult) -> Self {
        NewResult {
            project_id: r.project_id,
            session_id: r.session_id,
            result: CheckResult {
                score_bot: r.score_bot,
                score_proxy_vpn: r.score_proxy_vpn,
                ip_address: r.ip_address,
                created_at: r.created_at,
            },
            evaluation: None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SeedError {
    /// The file is not a valid seed; names the entry and field.
    #[error("{0}")]
    Invalid(String),
    #[error("writing the seed failed")]
    Write(#[from] ServiceError),
}

/// What was loaded, for the command's one-line report.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct SeedReport {
    pub accounts: usize,
    pub projects: usize,
    pub webhooks: usize,
    pub results: usize,
}

/// A seed checked against itself and the store, ready to write.
pub struct ValidSeed {
    accounts: Vec<(Account, Vec<ApiKey>)>,
    projects: Vec<Project>,
    webhooks: Vec<(ProjectId, Webhook)>,
    results: Vec<NewResult>,
}

/// Parses a seed file; errors name the JSON path of the bad value (`projects[0].createdAt`).
pub fn parse(text: &str) -> Result<SeedFile, SeedError> {
    let de = &mut serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." || path.is_empty() {
            SeedError::Invalid(format!("seed file: {inner}"))
        } else {
            SeedError::Invalid(format!("{path}: {inner}"))
        }
    })
}

fn invalid(msg: String) -> SeedError {
    SeedError::Invalid(msg)
}

/// Checks references and uniqueness, against the file and the store.
pub async fn validate<S: Store, D>(
    app: &Vigil<S, D>,
    seed: SeedFile,
    policy: UrlPolicy,
) -> Result<ValidSeed, SeedError> {
    let mut v = Validator {
        app,
        policy,
        accounts: HashSet::new(),
        projects: HashSet::new(),
    };
    Ok(ValidSeed {
        accounts: v.accounts(seed.accounts)?,
        projects: v.projects(seed.projects).await?,
        webhooks: v.webhooks(seed.webhooks).await?,
        results: v.results(seed.results).await?,
    })
}

/// One validator per section of the file; each section may refer to what earlier ones declared.
struct Validator<'a, S, D> {
    app: &'a Vigil<S, D>,
    policy: UrlPolicy,
    /// Accounts declared in the file.
    accounts: HashSet<AccountId>,
    /// Projects declared in the file or found in the store.
    projects: HashSet<ProjectId>,
}

impl<S: Store, D> Validator<'_, S, D> {
    fn accounts(
        &mut self,
        entries: Vec<SeedAccount>,
    ) -> Result<Vec<(Account, Vec<ApiKey>)>, SeedError> {
        let mut keys = HashSet::new();
        let mut accounts = Vec::with_capacity(entries.len());
        for (i, a) in entries.into_iter().enumerate() {
            if !self.accounts.insert(a.id.clone()) {
                return Err(invalid(format!(
                    "accounts[{i}].id: duplicate account {}",
                    a.id
                )));
            }
            for (k, key) in a.api_keys.iter().enumerate() {
                if !keys.insert(key.as_str().to_owned()) {
                    return Err(invalid(format!(
                        "accounts[{i}].apiKeys[{k}]: duplicate key"
                    )));
                }
            }
            let account = Account {
                id: a.id,
                plan: a.plan,
            };
            accounts.push((account, a.api_keys));
        }
        Ok(accounts)
    }

    async fn projects(&mut self, entries: Vec<Project>) -> Result<Vec<Project>, SeedError> {
        for (i, p) in entries.iter().enumerate() {
            if !self.projects.insert(p.id.clone()) {
                return Err(invalid(format!(
                    "projects[{i}].id: duplicate project {}",
                    p.id
                )));
            }
            if !self.accounts.contains(&p.account_id)
                && !self.app.account_exists(&p.account_id).await?
            {
                return Err(invalid(format!(
                    "projects[{i}].accountId: unknown account {}",
                    p.account_id
                )));
            }
        }
        Ok(entries)
    }

    /// Succeeds when the project is declared in the file or exists in the store.
    async fn known_project(
        &mut self,
        section: &str,
        i: usize,
        id: &ProjectId,
    ) -> Result<(), SeedError> {
        if self.projects.contains(id) || self.app.projects().exists(id).await? {
            self.projects.insert(id.clone());
            Ok(())
        } else {
            Err(invalid(format!(
                "{section}[{i}].projectId: unknown project {id}"
            )))
        }
    }

    async fn webhooks(
        &mut self,
        entries: Vec<SeedWebhook>,
    ) -> Result<Vec<(ProjectId, Webhook)>, SeedError> {
        let mut webhooks = Vec::new();
        let mut ids = HashSet::new();
        let mut pairs = HashSet::new();
        // Per project: the webhooks it already stores, and how many it will have after this file.
        let mut stored: HashMap<ProjectId, (Vec<Webhook>, usize)> = HashMap::new();
        for (i, w) in entries.into_iter().enumerate() {
            self.known_project("webhooks", i, &w.project_id).await?;
            let url = WebhookUrl::parse(&w.url, self.policy)
                .map_err(|e| invalid(format!("webhooks[{i}].url: {e}")))?;
            if !ids.insert(w.id.clone()) {
                return Err(invalid(format!(
                    "webhooks[{i}].id: duplicate webhook {}",
                    w.id
                )));
            }
            if !pairs.insert((w.project_id.clone(), w.kind, url.clone())) {
                return Err(invalid(format!(
                    "webhooks[{i}].url: duplicate type and url on the project"
                )));
            }
            if !stored.contains_key(&w.project_id) {
                let existing = self.app.project_webhooks(&w.project_id).await?;
                let n = existing.len();
                stored.insert(w.project_id.clone(), (existing, n));
            }
            let Some((existing, count)) = stored.get_mut(&w.project_id) else {
                continue;
            };
            match existing.iter().find(|e| e.id == w.id) {
                // Loaded before (the same file again): kept as it is.
                Some(same) if same.kind == w.kind && same.url == url => continue,
                Some(_) => {
                    return Err(invalid(format!(
                        "webhooks[{i}].id: webhook {} already exists with another type or url",
                        w.id
                    )));
                }
                None => {}
            }
            if existing.iter().any(|e| e.kind == w.kind && e.url == url) {
                return Err(invalid(format!(
                    "webhooks[{i}].url: the project already has a webhook with this type and url"
                )));
            }
            *count += 1;
            if *count > MAX_WEBHOOKS_PER_PROJECT {
                return Err(invalid(format!(
                    "webhooks[{i}]: project {} would have more than {MAX_WEBHOOKS_PER_PROJECT} webhooks",
                    w.project_id
                )));
            }
            let hook = Webhook {
                id: w.id,
                kind: w.kind,
                url,
                created_at: w.created_at,
                // A seed's webhooks stand for ones made before secrets per webhook: signed with
                // the project's apiKeyPrivate until a rotation gives them a secret.
                secrets: crate::domain::webhook::Secrets::default(),
            };
            webhooks.push((w.project_id, hook));
        }
        Ok(webhooks)
    }

    async fn results(&mut self, entries: Vec<SeedResult>) -> Result<Vec<NewResult>, SeedError> {
        let mut results = Vec::with_capacity(entries.len());
        for (i, r) in entries.into_iter().enumerate() {
            self.known_project("results", i, &r.project_id).await?;
            results.push(r.into());
        }
        Ok(results)
    }
}

/// Writes a validated seed. Accounts, keys and projects are upserts and webhooks already present
/// (same id, type and url) are kept, so loading the same file twice only adds its results again.
/// Validation has checked everything the store could refuse; only a storage failure can stop the
/// writes part-way. Results take the one write path of every result.
pub async fn write<S: Store, D>(
    app: &Vigil<S, D>,
    seed: ValidSeed,
) -> Result<SeedReport, SeedError> {
    let mut report = SeedReport::default();
    for (account, keys) in &seed.accounts {
        app.put_account(account, keys).await?;
        report.accounts += 1;
    }
    for project in &seed.projects {
        app.put_project(project).await?;
        report.projects += 1;
    }
    for (project, hook) in seed.webhooks {
        if app
            .project_webhooks(&project)
            .await?
            .iter()
            .any(|w| w.id == hook.id)
        {
            continue;
        }
        match app.webhooks().insert(&project, hook).await {
            Ok(_) => report.webhooks += 1,
            Err(e @ ServiceError::Store(_)) => return Err(e.into()),
            Err(e) => return Err(invalid(format!("webhook on project {project}: {e}"))),
        }
    }
    for result in &seed.results {
        app.add_result(result).await?;
        report.results += 1;
    }
    Ok(report)
}

/// Parses, validates and writes a seed file's text.
pub async fn load<S: Store, D>(app: &Vigil<S, D>, text: &str) -> Result<SeedReport, SeedError> {
    let seed = validate(app, parse(text)?, app.webhooks().url_policy()).await?;
    write(app, seed).await
}

fn demo_id<T: std::str::FromStr<Err = crate::domain::IdError>>(s: &str) -> Result<T, SeedError> {
    s.parse().map_err(|e| invalid(format!("demo id {s}: {e}")))
}

/// The demo account and project, which `vigil serve`'s `/demo` page reads.
pub const DEMO_ACCOUNT: &str = "acc_demo";
pub const DEMO_PROJECT: &str = "prj_demo";

/// The demo account `vigil serve` creates on an empty store: one account with a fresh key and one
/// project (its day of visits is [`crate::demo::day`]'s). Returns the key, which is shown once and
/// never stored.
pub async fn demo<S: Store, D>(app: &Vigil<S, D>) -> Result<ApiKey, SeedError> {
    let key = ApiKey::generate();
    let now = app.now();
    let account = Account {
        id: demo_id(DEMO_ACCOUNT)?,
        plan: Plan {
            id: PlanId::parse("plan_trial").map_err(|e| invalid(e.to_string()))?,
            name: "Trial".into(),
            description: "14-day trial".into(),
            max_rps: 10,
            max_projects: 3,
            max_requests: 100_000,
            expires_at: Timestamp::from_unix_millis(now.unix_millis() + 14 * 86_400_000).ok(),
            subscribed_at: now,
            status: PlanStatus::Trialing,
            unsubscribed_at: None,
        },
    };
    let project = Project {
        id: demo_id(DEMO_PROJECT)?,
        account_id: account.id.clone(),
        name: "Demo shop".into(),
        api_key_public: format!("pk_{}", crate::domain::token::random_base62(24)),
        api_key_private: format!("sk_{}", crate::domain::token::random_base62(32)),
        // A local project: its pages may be any loopback origin, so vigil serve's /demo page
        // can send visits with the agent.
        domain: "localhost".into(),
        disabled: false,
        // The demo page gets its token from the server that renders it, as a customer's would.
        require_session_token: true,
        webhook_legacy_signature: true,
        sealed_results: false,
        sealing_keys: None,
        model: Default::default(),
        calibration: None,
        agents: Default::default(),
        created_at: now,
    };
    app.put_account(&account, std::slice::from_ref(&key))
        .await?;
    app.put_project(&project).await?;
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        // Any text is a seed file or an error that names where it went wrong, never a panic.
        #[test]
        fn any_text_is_a_seed_or_an_error(s in ".{0,400}") {
            if let Err(SeedError::Invalid(msg)) = parse(&s) {
                proptest::prop_assert!(!msg.is_empty());
            }
        }

        #[test]
        fn seeds_with_arbitrary_values_are_parsed_or_refused(
            id in ".{0,20}", score in proptest::num::f64::ANY, ip in ".{0,20}", at in ".{0,30}"
        ) {
            let text = serde_json::json!({"results": [{"projectId": id, "sessionId": "s",
                "scoreBot": score, "scoreProxyVpn": 0.5, "ipAddress": ip, "createdAt": at}]})
                .to_string();
            match parse(&text) {
                Ok(seed) => {
                    let r = &seed.results[0];
                    proptest::prop_assert!((0.0..=1.0).contains(&r.score_bot.get()));
                }
                Err(SeedError::Invalid(msg)) => proptest::prop_assert!(msg.starts_with("results[0].")),
                Err(e) => proptest::prop_assert!(false, "{e}"),
            }
        }
    }
}
