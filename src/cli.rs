//! The `vigil` command: the local server, seeding, table creation and writing results, on either
//! store.

use std::io::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::{Args, Parser, Subcommand};

use vigil_core::config::{Config, ConfigError};
use vigil_core::domain::project::{Domain, ProjectName};
use vigil_core::domain::token::ApiKey;
use vigil_core::domain::{
    AccountId, CheckResult, ManualClock, NewResult, ProjectId, Score, SessionId, Timestamp,
    UrlPolicy,
};
use vigil_core::seed::{self, SeedError};
use vigil_core::service::error::ServiceError;
use vigil_core::service::projects::ProjectSpec;
use vigil_core::service::vigil::{Detecting, Vigil};
use vigil_core::store::feed::ChangeFeed;
use vigil_core::store::{Store, StoreError};
use vigil_dispatch::{Dispatcher, SWEEP_EVERY, sweep_forever};
use vigil_store_sqlite::SqliteStore;

/// Why a command failed: printed as one line with its causes ([`vigil_core::report::Chain`]).
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("cannot open {}", path.display())]
    OpenDatabase {
        path: PathBuf,
        #[source]
        source: StoreError,
    },
    #[error("cannot create the table")]
    CreateTable(#[source] StoreError),
    #[error("table create needs --dynamodb")]
    TableNeedsDynamo,
    #[error("cannot read {}", path.display())]
    ReadFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}", path.display())]
    Seed {
        path: PathBuf,
        #[source]
        source: SeedError,
    },
    #[error("cannot serve HTTPS")]
    Tls(#[source] vigil_http::server::tls::TlsError),
    #[error("cannot create the demo data")]
    Demo(#[source] SeedError),
    #[error("cannot build the webhook client")]
    WebhookClient(#[source] reqwest::Error),
    #[error("cannot listen on {addr}")]
    Listen {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("the server stopped")]
    Serve(#[source] std::io::Error),
    #[error("cannot load the detection data")]
    DetectionData(#[source] vigil_detect::DataError),
    #[error("{0} bad line(s), answered with a message each")]
    BadLines(usize),
    #[error("reading or writing failed")]
    Io(#[source] std::io::Error),
    #[error("unknown account {0}")]
    UnknownAccount(AccountId),
    #[error("cannot write the output")]
    Output(#[source] serde_json::Error),
    #[error(transparent)]
    Service(#[from] ServiceError),
    #[error(transparent)]
    Agents(#[from] crate::agents::AgentsError),
}

#[derive(Debug, Parser)]
#[command(
    name = "vigil",
    version,
    about = "Bot and proxy/VPN detection results service"
)]
pub struct Cli {
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
pub struct StoreArgs {
    /// SQLite database file (the default store).
    #[arg(
        long,
        global = true,
        default_value = "vigil.db",
        conflicts_with = "dynamodb"
    )]
    pub db: PathBuf,
    /// Use the DynamoDB table `VIGIL_TABLE` at `AWS_ENDPOINT_URL` (real AWS when unset).
    #[arg(long, global = true)]
    pub dynamodb: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the whole API on one port.
    Serve {
        #[arg(long, default_value = "127.0.0.1:3000")]
        addr: SocketAddr,
        /// Load this seed file before serving.
        #[arg(long)]
        seed: Option<PathBuf>,
        /// Allow plain-http webhooks to loopback addresses (development and tests only).
        #[arg(long)]
        allow_loopback_webhooks: bool,
        /// Allow plain-http Web Bot Auth key directories on loopback addresses (development and
        /// tests only).
        #[arg(long)]
        allow_loopback_directories: bool,
        /// Most connections open at once; more clients wait until one closes.
        #[arg(long, default_value_t = 1024)]
        max_connections: usize,
        /// Most connections open at once from one source (an IPv4 address, an IPv6 /64); more
        /// are closed at once. Peers in --trust-proxy are not counted. Default: a quarter of
        /// --max-connections, and at least 16 of them.
        #[arg(long)]
        max_connections_per_source: Option<usize>,
        /// Deadline for each request's head, and again for its body (e.g. 10s, 500ms).
        #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
        read_timeout: std::time::Duration,
        /// Close a connection with no request in flight for this long (HTTP/1.1 keep-alive and
        /// HTTP/2 alike), so idle clients cannot hold the --max-connections slots.
        #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
        idle_timeout: std::time::Duration,
        /// Proxies you run in front of the server (CIDR ranges, comma-separated): for a peer inside
        /// them, the visitor's address is the right-most X-Forwarded-For entry of the last such
        /// header; for any other peer, and whenever that entry does not parse, it is the peer. A
        /// trusted proxy's own connection (TLS, SYN, round trips) is never judged as its visitor's:
        /// only the CloudFront-Viewer-JA4-Fingerprint, -HTTP-Version and -Header-Order it forwards.
        #[arg(long, value_delimiter = ',', value_name = "CIDR[,CIDR...]")]
        trust_proxy: Vec<ipnet::IpNet>,
        /// Serve the demo page (/demo) for the demo project; `make run` turns it on.
        #[arg(long)]
        demo: bool,
        /// Never create the demo account and its day of visits on an empty store (production:
        /// load your accounts with `vigil seed FILE`).
        #[arg(long, conflicts_with = "demo")]
        no_demo_account: bool,
        /// Load the detection engine's data from this folder instead of the built-in copy.
        #[arg(long, env = "VIGIL_DATA_DIR")]
        data: Option<PathBuf>,
        /// Serve HTTPS (HTTP/2 and HTTP/1.1 by ALPN) with this PEM certificate chain; the server
        /// then fingerprints every connection's TLS ClientHello (JA4) and request (wire evidence).
        #[arg(
            long,
            requires = "tls_key",
            conflicts_with = "tls_self_signed",
            value_name = "PEM"
        )]
        tls_cert: Option<PathBuf>,
        /// The PEM private key of --tls-cert.
        #[arg(long, requires = "tls_cert", value_name = "PEM")]
        tls_key: Option<PathBuf>,
        /// Serve HTTPS with a certificate for localhost, 127.0.0.1 and ::1 made at start (its
        /// SHA-256 is printed), for trying the wire evidence locally.
        #[arg(long)]
        tls_self_signed: bool,
        /// Answer STUN binding requests (RFC 8489) on this UDP port of --addr's address; the agent
        /// served here then asks it for the browser's public address (WebRTC), which shows a
        /// visitor behind an HTTP or SOCKS proxy (`webrtc_ip_mismatch`). `make run` uses 3478.
        #[arg(long, value_name = "PORT")]
        stun_port: Option<u16>,
    },
    /// Load a seed file into the store.
    Seed {
        file: PathBuf,
        /// Accept plain-http loopback webhook URLs (development and tests only).
        #[arg(long)]
        allow_loopback_webhooks: bool,
    },
    /// Manage the DynamoDB table.
    Table {
        #[command(subcommand)]
        action: TableAction,
    },
    /// Write results.
    Results {
        #[command(subcommand)]
        action: ResultsAction,
    },
    /// Score visits in batch: one JSON answer line per input line (stdin without FILE). Exits 1
    /// when any line was bad.
    Evaluate {
        file: Option<PathBuf>,
        #[arg(long, value_enum, default_value = "json")]
        format: vigil_detect::batch::Format,
        /// Load the engine's data from this folder (bot patterns, IP ranges, hosting networks,
        /// countries, zones) instead of the copy built into the binary.
        #[arg(long, env = "VIGIL_DATA_DIR")]
        data: Option<PathBuf>,
        /// After scoring, print a table on stderr: lines, bots, proxies, the top reasons.
        #[arg(long)]
        summary: bool,
    },
    /// Fit a project's scoreBot weights on its labels (at least 50 of each kind, at most 200
    /// counted a day) and keep them if they beat the shared weights on a held-out quarter.
    /// Prints what it did as JSON; what AWS runs weekly for every labelled project.
    Calibrate {
        /// The project to calibrate.
        #[arg(long, required_unless_present = "all", conflicts_with = "all")]
        project: Option<ProjectId>,
        /// Every project with labels enough, as the weekly function does.
        #[arg(long)]
        all: bool,
    },
    /// Create and list an account's projects (under its plan's maxProjects).
    Projects {
        #[command(subcommand)]
        action: ProjectsAction,
    },
    /// Session tokens, as a customer's backend mints them for its pages.
    Sessions {
        #[command(subcommand)]
        action: SessionsAction,
    },
    /// A test Web Bot Auth agent: serve its signed key directory, sign requests as evidence.
    Agents {
        #[command(subcommand)]
        action: AgentsAction,
    },
}

#[derive(Debug, Subcommand)]
pub enum AgentsAction {
    /// Serve the test key's directory, signed, on plain HTTP (for `vigil serve
    /// --allow-loopback-directories`); runs until stopped.
    Directory {
        #[arg(long, default_value = "127.0.0.1:8089")]
        addr: SocketAddr,
        /// The phrase the test key is derived from (SHA-256); `sign` must use the same.
        #[arg(long, default_value = "vigil test agent")]
        key_phrase: String,
    },
    /// Print the events-route body of a request signed with the test key, for
    /// `POST /v1/projects/{projectId}/sessions/{sessionId}/events`.
    Sign {
        /// The agent's origin, where its directory is served (`Signature-Agent`).
        #[arg(long)]
        agent: String,
        /// The host the signed request was addressed to (`@authority`).
        #[arg(long)]
        authority: String,
        #[arg(long, default_value = "GET")]
        method: String,
        #[arg(long, default_value = "/")]
        path: String,
        #[arg(
            long,
            default_value = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Claude-User/1.0; +Claude-User@anthropic.com)"
        )]
        user_agent: String,
        /// The visitor's address as the backend saw it.
        #[arg(long, default_value = "203.0.113.9")]
        ip: IpAddr,
        /// `dictionary` (`agent1="https://..."`, the current drafts) or `plain` (older drafts).
        #[arg(long, default_value = "dictionary", value_parser = parse_agent_form)]
        form: vigil_detect::signature::sign::AgentForm,
        /// How long the signature is valid (at most 24h).
        #[arg(long, default_value = "5m", value_parser = humantime::parse_duration)]
        validity: std::time::Duration,
        #[arg(long, default_value = "vigil test agent")]
        key_phrase: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum SessionsAction {
    /// Print a session token for the collect route: HMAC-SHA256 under the project's private key.
    Token {
        #[arg(long)]
        project: ProjectId,
        #[arg(long)]
        session: SessionId,
        /// How long the token is valid (at most 24h), e.g. 15m, 1h.
        #[arg(long, default_value = "1h", value_parser = humantime::parse_duration)]
        ttl: std::time::Duration,
    },
}

#[derive(Debug, Subcommand)]
pub enum ProjectsAction {
    /// Create a project; prints it as JSON, with its generated id and keys.
    Create {
        #[arg(long)]
        account: AccountId,
        #[arg(long, value_parser = |s: &str| ProjectName::parse(s).map_err(|e| e.to_string()))]
        name: ProjectName,
        #[arg(long, value_parser = |s: &str| Domain::parse(s).map_err(|e| e.to_string()))]
        domain: Domain,
        /// Accept visits without a session token (the default requires one).
        #[arg(long)]
        no_session_token: bool,
    },
    /// List the account's projects as JSON, oldest first.
    List {
        #[arg(long)]
        account: AccountId,
    },
}

#[derive(Debug, Subcommand)]
pub enum TableAction {
    /// Create the table (as template.yaml defines it) at the configured endpoint.
    Create,
}

#[derive(Debug, Subcommand)]
pub enum ResultsAction {
    /// Write one result through the normal write path.
    Add {
        #[arg(long)]
        project: ProjectId,
        #[arg(long)]
        session: SessionId,
        #[arg(long, value_parser = parse_score, allow_negative_numbers = true)]
        score_bot: Score,
        #[arg(long, value_parser = parse_score, allow_negative_numbers = true)]
        score_proxy_vpn: Score,
        #[arg(long)]
        ip: IpAddr,
        /// RFC 3339 time; now when omitted.
        #[arg(long)]
        created_at: Option<Timestamp>,
    },
}

fn parse_agent_form(s: &str) -> Result<vigil_detect::signature::sign::AgentForm, String> {
    use vigil_detect::signature::sign::AgentForm;
    match s {
        "dictionary" => Ok(AgentForm::Dictionary),
        "plain" => Ok(AgentForm::Plain),
        _ => Err("must be dictionary or plain".to_owned()),
    }
}

fn parse_score(s: &str) -> Result<Score, String> {
    s.parse::<f64>()
        .ok()
        .and_then(|v| Score::new(v).ok())
        .ok_or_else(|| "must be a number from 0 to 1".to_owned())
}

/// Runs the command; the error is the one line printed before exiting non-zero.
pub async fn run(cli: Cli) -> Result<(), CliError> {
    if let Command::Evaluate {
        file,
        format,
        data,
        summary,
    } = &cli.command
    {
        return evaluate(file.as_deref(), *format, data.as_deref(), *summary);
    }
    if let Command::Agents { action } = cli.command {
        return agents(action).await;
    }
    let config = Config::from_env()?;
    if cli.store.dynamodb {
        let store = crate::root::dynamo(&config).await;
        if let Command::Table {
            action: TableAction::Create,
        } = cli.command
        {
            store.create_table().await.map_err(CliError::CreateTable)?;
            println!("created table {}", store.table());
            return Ok(());
        }
        run_on(store, cli.command, &config).await
    } else {
        let store = SqliteStore::open(&cli.store.db).map_err(|source| CliError::OpenDatabase {
            path: cli.store.db.clone(),
            source,
        })?;
        run_on(store, cli.command, &config).await
    }
}

async fn run_on<S: Store + ChangeFeed>(
    store: S,
    command: Command,
    config: &Config,
) -> Result<(), CliError> {
    match command {
        Command::Serve {
            addr,
            seed,
            allow_loopback_webhooks,
            allow_loopback_directories,
            max_connections,
            max_connections_per_source,
            read_timeout,
            idle_timeout,
            trust_proxy,
            demo,
            no_demo_account,
            data,
            tls_cert,
            tls_key,
            tls_self_signed,
            stun_port,
        } => {
            let tls = match (tls_cert, tls_key) {
                (Some(cert), Some(key)) => {
                    Some(vigil_http::server::tls::Tls::from_pem_files(&cert, &key))
                }
                _ if tls_self_signed => Some(vigil_http::server::tls::Tls::self_signed()),
                _ => None,
            }
            .transpose()
            .map_err(CliError::Tls)?;
            let policy = UrlPolicy {
                allow_loopback: allow_loopback_webhooks,
            };
            let dispatcher = crate::root::dispatcher(store.clone(), policy, config)
                .map_err(CliError::WebhookClient)?;
            let engine = crate::root::engine(data.as_deref()).map_err(CliError::DetectionData)?;
            let directories = UrlPolicy {
                allow_loopback: allow_loopback_directories,
            };
            let app = Arc::new(
                crate::root::detecting(store.clone(), policy, directories, config, engine)
                    .map_err(CliError::WebhookClient)?,
            );
            let limits = vigil_http::server::limits::Limits {
                max_connections,
                read_timeout,
                trust_proxy: trust_proxy.into(),
                demo,
                tls,
                stun_port,
                idle_timeout,
                // A quarter of the connections, but never fewer than 16 (or all of a smaller cap).
                max_per_source: max_connections_per_source
                    .unwrap_or((max_connections / 4).max(max_connections.min(16)))
                    .max(1),
            };
            let demo_account = !no_demo_account;
            serve(
                app,
                store,
                addr,
                seed,
                demo_account,
                Arc::new(dispatcher),
                limits,
            )
            .await
        }
        Command::Seed {
            file,
            allow_loopback_webhooks,
        } => {
            let policy = UrlPolicy {
                allow_loopback: allow_loopback_webhooks,
            };
            let app = crate::root::service(store, policy, config);
            let report = load_seed(&app, &file).await?;
            println!(
                "seeded {} accounts, {} projects, {} webhooks, {} results",
                report.accounts, report.projects, report.webhooks, report.results
            );
            Ok(())
        }
        Command::Table { .. } => Err(CliError::TableNeedsDynamo),
        // Answered before any store is opened.
        Command::Evaluate { .. } | Command::Agents { .. } => Ok(()),
        Command::Projects { action } => {
            let app = crate::root::service(store, UrlPolicy::default(), config);
            projects(&app, action).await
        }
        Command::Calibrate { project, all } => {
            let app = crate::root::service(store, UrlPolicy::default(), config);
            let print = |v: serde_json::Result<serde_json::Value>| {
                let text = v.and_then(|v| serde_json::to_string_pretty(&v));
                println!("{}", text.map_err(CliError::Output)?);
                Ok::<_, CliError>(())
            };
            match project {
                Some(p) if !all => print(serde_json::to_value(app.calibrate(&p).await?)),
                _ => {
                    // Every project's outcome is printed before the first failure is reported.
                    let (ok, failed): (Vec<_>, Vec<_>) = app
                        .calibrate_all()
                        .await?
                        .into_iter()
                        .partition(Result::is_ok);
                    let ok: Vec<_> = ok.into_iter().flatten().collect();
                    print(serde_json::to_value(ok))?;
                    match failed.into_iter().find_map(Result::err) {
                        Some(e) => Err(e.into()),
                        None => Ok(()),
                    }
                }
            }
        }
        Command::Sessions {
            action:
                SessionsAction::Token {
                    project,
                    session,
                    ttl,
                },
        } => {
            let app = crate::root::service(store, UrlPolicy::default(), config);
            let secs = i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX);
            println!(
                "{}",
                app.projects()
                    .session_token(&project, &session, secs)
                    .await?
            );
            Ok(())
        }
        Command::Results {
            action:
                ResultsAction::Add {
                    project,
                    session,
                    score_bot,
                    score_proxy_vpn,
                    ip,
                    created_at,
                },
        } => {
            let app = crate::root::service(store, UrlPolicy::default(), config);
            let result = NewResult {
                project_id: project,
                session_id: session,
                result: CheckResult {
                    score_bot,
                    score_proxy_vpn,
                    ip_address: ip,
                    created_at: created_at.unwrap_or_else(|| app.now()),
                },
                evaluation: None,
            };
            let at = app.add_result(&result).await?;
            println!(
                "added result {} to {}/{}",
                at.seq, result.project_id, result.session_id
            );
            Ok(())
        }
    }
}

/// `vigil agents`: needs no store or configuration.
async fn agents(action: AgentsAction) -> Result<(), CliError> {
    use crate::agents::{SignRequest, key, serve_directory, signed_evidence};
    match action {
        AgentsAction::Directory { addr, key_phrase } => {
            Ok(serve_directory(key(&key_phrase), addr).await?)
        }
        AgentsAction::Sign {
            agent,
            authority,
            method,
            path,
            user_agent,
            ip,
            form,
            validity,
            key_phrase,
        } => {
            let request = vigil_detect::RequestLine {
                method: Some(method),
                authority: Some(authority),
                path: Some(path),
            };
            let body = signed_evidence(
                &key(&key_phrase),
                &SignRequest {
                    agent: &agent,
                    request,
                    user_agent: &user_agent,
                    ip_address: ip,
                    form,
                    validity,
                },
            )?;
            println!(
                "{}",
                serde_json::to_string_pretty(&body).map_err(CliError::Output)?
            );
            Ok(())
        }
    }
}

/// `vigil evaluate`: needs no store; stdin and stdout are buffered, lines are answered in order.
fn evaluate(
    file: Option<&Path>,
    format: vigil_detect::batch::Format,
    data: Option<&Path>,
    summary: bool,
) -> Result<(), CliError> {
    // The binary carries its data, as the Lambda functions do: it scores logs from any folder.
    let engine = crate::root::engine(data).map_err(CliError::DetectionData)?;
    let out = std::io::BufWriter::new(std::io::stdout().lock());
    let scored = match file {
        Some(path) => {
            let f = std::fs::File::open(path).map_err(|source| CliError::ReadFile {
                path: path.to_owned(),
                source,
            })?;
            vigil_detect::batch::run(&engine, std::io::BufReader::new(f), out, format)
        }
        None => vigil_detect::batch::run(&engine, std::io::stdin().lock(), out, format),
    }
    .map_err(CliError::Io)?;
    if summary {
        eprint!("{}", scored.table(10));
    }
    if scored.bad > 0 {
        return Err(CliError::BadLines(scored.bad));
    }
    Ok(())
}

async fn projects<S: Store>(app: &Vigil<S>, action: ProjectsAction) -> Result<(), CliError> {
    let (ProjectsAction::Create { account, .. } | ProjectsAction::List { account }) = &action;
    // An unknown account is an error, not an empty list.
    if !app.account_exists(account).await? {
        return Err(CliError::UnknownAccount(account.clone()));
    }
    let json = match action {
        ProjectsAction::Create {
            account,
            name,
            domain,
            no_session_token,
        } => {
            let terms = app.plans().terms(&account).await?;
            let spec = ProjectSpec {
                name,
                domain,
                require_session_token: !no_session_token,
            };
            let project = app.projects().create(&account, &terms, spec, None).await?;
            serde_json::to_string_pretty(&project)
        }
        ProjectsAction::List { account } => {
            serde_json::to_string_pretty(&app.projects().list(&account).await?)
        }
    };
    println!("{}", json.map_err(CliError::Output)?);
    Ok(())
}

async fn load_seed<S: Store, D>(
    app: &Vigil<S, D>,
    file: &Path,
) -> Result<seed::SeedReport, CliError> {
    let text = tokio::fs::read_to_string(file)
        .await
        .map_err(|source| CliError::ReadFile {
            path: file.to_owned(),
            source,
        })?;
    seed::load(app, &text)
        .await
        .map_err(|source| CliError::Seed {
            path: file.to_owned(),
            source,
        })
}

async fn serve<S: Store + ChangeFeed + Clone>(
    app: Arc<Vigil<S, Detecting>>,
    store: S,
    addr: SocketAddr,
    seed_file: Option<PathBuf>,
    demo_account: bool,
    dispatcher: Arc<Dispatcher<S>>,
    limits: vigil_http::server::limits::Limits,
) -> Result<(), CliError> {
    if let Some(file) = &seed_file {
        let r = load_seed(&app, file).await?;
        eprintln!(
            "seeded {} accounts, {} projects, {} webhooks, {} results",
            r.accounts, r.projects, r.webhooks, r.results
        );
    }
    let empty = seed_file.is_none() && app.is_empty().await?;
    if empty && !demo_account {
        eprintln!("the store is empty: load your accounts with `vigil --db FILE seed FILE`");
    }
    let demo_key = if empty && demo_account {
        let key = seed::demo(&app).await.map_err(CliError::Demo)?;
        // The day is posted by a service of its own whose clock walks through the last 24
        // hours; the server's clock is never moved.
        let clock = ManualClock::at(Timestamp::now());
        let day = Vigil::new(store.clone(), app.webhooks().url_policy())
            .with_engine(app.engine().clone())
            .with_clock(clock.clone());
        vigil_core::demo::day(&day, &clock, &store)
            .await
            .map_err(CliError::Demo)?;
        Some(key)
    } else {
        None
    };
    let listen = |source| CliError::Listen { addr, source };
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(listen)?;
    let local = listener.local_addr().map_err(listen)?;
    let mut limits = limits;
    if let Some(port) = limits.stun_port {
        match tokio::net::UdpSocket::bind((addr.ip(), port)).await {
            Ok(socket) => {
                tokio::spawn(vigil_http::server::stun::serve(socket));
            }
            // The API still serves; only the agent's WebRTC address goes unasked.
            Err(e) => {
                eprintln!("STUN not served: cannot bind UDP {}:{port}: {e}", addr.ip());
                limits.stun_port = None;
            }
        }
    }
    let scheme = if limits.tls.is_some() {
        "https"
    } else {
        "http"
    };
    // The banner goes out in one write whose failure is ignored: a server whose starter stopped
    // reading stdout (a script that read the address line and closed the pipe) keeps serving.
    let mut banner = format!("vigil listening on {scheme}://{local}/v1\n");
    if let Some(tls) = &limits.tls {
        banner.push_str(&format!("certificate SHA-256: {}\n", tls.cert_sha256()));
    }
    if let Some(port) = limits.stun_port {
        banner.push_str(&format!("STUN: udp {}:{port}\n", local.ip()));
    }
    banner.push_str(&format!("dashboard: {scheme}://{local}/dashboard\n"));
    banner.push_str(&format!("API reference: {scheme}://{local}/docs\n"));
    if let Some(key) = demo_key {
        banner.push_str(&demo_text(scheme, &local, &key, limits.demo));
    }
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(banner.as_bytes()).and_then(|()| out.flush());
    drop(out);
    tokio::spawn(store.follow(vigil_dispatch::Following(dispatcher.clone())));
    tokio::spawn(sweep_forever(dispatcher, SWEEP_EVERY));
    // Ctrl-C, or SIGTERM from a service manager (systemd, a container's runtime): both drain.
    let shutdown = async {
        #[cfg(unix)]
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        #[cfg(unix)]
        let terminated = async {
            match term.as_mut() {
                Some(t) => {
                    t.recv().await;
                }
                None => std::future::pending().await,
            }
        };
        #[cfg(not(unix))]
        let terminated = std::future::pending::<()>();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            () = terminated => {}
        }
        eprintln!("vigil: stopping; answering the requests in flight");
    };
    vigil_http::server::serve(app, listener, limits, shutdown)
        .await
        .map_err(CliError::Serve)?;
    eprintln!("vigil: stopped");
    Ok(())
}

fn demo_text(scheme: &str, addr: &SocketAddr, key: &ApiKey, page: bool) -> String {
    let key = key.as_str();
    let base = format!("{scheme}://{addr}/v1");
    let mut text = format!(
        "\nCreated a demo account. Its developer key (shown only now):\n\n  {key}\n\nTry:\n\
         curl -s -H 'Authorization: Bearer {key}' {base}/plan\n\
         curl -s -H 'Authorization: Bearer {key}' {base}/projects/prj_demo\n\
         curl -s -H 'Authorization: Bearer {key}' {base}/results/prj_demo/sess_proxy\n\
         curl -s -H 'Authorization: Bearer {key}' {base}/results/prj_demo/sess_proxy/general\n\
         curl -si -H 'Authorization: Bearer {key}' '{base}/results/prj_demo/sess_long?limit=20'\n\
         curl -si -H 'Authorization: Bearer {key}' -H 'Content-Type: application/json' \\\n  \
         -d '{{\"type\":\"proxy_vpn_detect\",\"url\":\"https://hooks.shop.example/vigil\"}}' {base}/projects/prj_demo/webhooks\n\
         curl -s -H 'Authorization: Bearer {key}' {base}/projects/prj_demo/webhooks\n\
         curl -s -H 'Authorization: Bearer {key}' {base}/usage\n\
         curl -s -H 'Authorization: Bearer {key}' '{base}/projects/prj_demo/sessions?minScoreProxyVpn=0.5'\n\
         curl -s -H 'Authorization: Bearer {key}' '{base}/projects/prj_demo/stats?granularity=day'\n\
         curl -si -H 'Authorization: Bearer {key}' -H 'Content-Type: application/json' \\\n  \
         -d '{{\"name\":\"Blog\",\"domain\":\"blog.example\"}}' {base}/projects\n\
         curl -si -H 'Authorization: Bearer {key}' -H 'Content-Type: application/json' \\\n  \
         -d '{{\"ipAddress\":\"185.220.101.1\",\"userAgent\":\"curl/8.5.0\"}}' {base}/projects/prj_demo/sessions/sess_new/events\n\
         vigil sessions token --project prj_demo --session sess_new\n\n"
    );
    text.push_str(&format!(
        "The dashboard (paste the key above): {scheme}://localhost:{}/dashboard\n\n",
        addr.port()
    ));
    if page {
        text.push_str(&format!(
            "Open the demo page, which sends your own browser's visit with the agent:\n\n  \
             {scheme}://localhost:{}/demo\n\n",
            addr.port()
        ));
    }
    text
}
