//! A secured cluster (`docs/connecting.md`): Apache Pulsar standalone with TLS, token and
//! client-certificate authentication and authorization, and an OAuth2 issuer stand-in, all on
//! 127.0.0.1, started here (a broker that cannot start fails the run: these tests never skip).
//!
//! On tokio, async-std and smol, a service that forwards (`forwarder`, `jobs-fwd` to
//! `jobs-out`, read by `outbox`) runs:
//!
//! - over TLS with the server's name checked, with a token;
//! - over mutual TLS, as the role its certificate names;
//! - with OAuth2 tokens that live 20 s, for 2 minutes under a steady load (the three runtimes at
//!   once): nothing lost, no consumer reconnected (the broker's `connectedSince` unchanged), and
//!   the tokens fetched counted;
//!
//! and each of a wrong CA, an expired client certificate, a bad client secret, a topic the role
//! may not consume and one it may not publish to fails within 20 s with an error that names
//! the cause. No token, client secret or private key appears in any log line or error text of
//! the run (the last case checks every line logged and every error seen).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use libtest_mimic::{Arguments, Failed, Trial};
use ruststream::runtime::Runtime;
use ruststream::HandlerOutcome;
use ruststream_pulsar::testing::LiveApp;
use ruststream_pulsar::{OAuth2, PulsarOverrides};
use ruststream_test_brokers::{
    ApacheStandalone, IssuerStandIn, OAuthClient, SecuredStandalone, SecuritySetup,
    APACHE_PULSAR_VERSION,
};
use ruststream_tests::scenario::{app, forwarder, outbox, ret, Forwarded, Plan, Script};

/// How long the OAuth2 tokens of the long run live.
const TOKEN_LIFE: Duration = Duration::from_secs(20);

/// How long the long run lasts.
const LONG_RUN: Duration = Duration::from_secs(120);

/// One job every this often, on each runtime, during the long run.
const PACE: Duration = Duration::from_millis(100);

/// What each refusal must take at most.
const FAILS_WITHIN: Duration = Duration::from_secs(20);

/// The OAuth2 client of the long run, and its role.
const OAUTH_CLIENT: &str = "forwarding-service";
const OAUTH_SECRET: &str = "oauth-client-secret-7f3a9c";
const OAUTH_ROLE: &str = "oauth-forwarder";

/// What the whole run shares: the broker, the issuer, every secret that must never show, and
/// every error text seen.
struct World {
    broker: SecuredStandalone,
    issuer: IssuerStandIn,
    secrets: Mutex<Vec<String>>,
    errors: Mutex<Vec<String>>,
}

impl World {
    /// Keep `secret` to look for in the logs and errors.
    fn secret(&self, secret: impl Into<String>) -> String {
        let secret = secret.into();
        self.secrets.lock().unwrap().push(secret.clone());
        secret
    }

    /// A token for `role`, kept as a secret.
    fn token(&self, role: &str, life: Duration) -> String {
        self.secret(self.broker.mint_token(role, life))
    }

    /// Keep an error text seen, to check for secrets at the end.
    fn seen(&self, error: &str) {
        self.errors.lock().unwrap().push(error.to_owned());
    }
}

/// Every line the run logs.
static LOG: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();

/// A writer into [`LOG`] (its last lines are printed if the run fails).
struct Capture;

impl std::io::Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        LOG.get()
            .expect("set in main")
            .lock()
            .unwrap()
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

static NEXT: AtomicU64 = AtomicU64::new(0);

/// A fresh namespace, with `actions` granted to each of `roles` there.
fn namespace(world: &World, roles: &[(&str, &[&str])]) -> Result<String, Failed> {
    let ns = format!("public/secured-{}", NEXT.fetch_add(1, Ordering::SeqCst));
    world.broker.create_namespace(&ns).map_err(fail)?;
    for (role, actions) in roles {
        world.broker.grant(&ns, role, actions).map_err(fail)?;
    }
    Ok(ns)
}

fn fail(e: impl std::fmt::Display) -> Failed {
    Failed::from(e.to_string())
}

/// Run `future` on `runtime` (tokio, async-std or smol), with its adapter.
fn on<'a, T>(
    runtime: &str,
    future: impl FnOnce(
        Arc<dyn Runtime>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>,
) -> T {
    match runtime {
        "tokio" => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("a tokio runtime");
            let adapter = Arc::new(ruststream_tokio::TokioRuntime::new(rt.handle().clone()));
            rt.block_on(future(adapter))
        }
        "async-std" => async_std::task::block_on(future(Arc::new(
            ruststream_async_std::AsyncStdRuntime::new(),
        ))),
        _ => smol::block_on(future(Arc::new(ruststream_smol::SmolRuntime::global()))),
    }
}

/// The forwarding service in `ns`, connected with `secure`.
async fn forwarding(
    runtime: Arc<dyn Runtime>,
    world: &World,
    ns: &str,
    bound: Duration,
    secure: impl FnOnce(PulsarOverrides) -> PulsarOverrides,
) -> Result<LiveApp, String> {
    LiveApp::with_state(
        app(|b| {
            b.include(forwarder);
            b.include(outbox);
        }),
        Plan::new(Script::always(ret(HandlerOutcome::ack()))),
        runtime,
    )
    .url(world.broker.tls_url())
    .namespace(ns)
    .connect_timeout(bound)
    .overrides(|o| secure(o.trust_certificates(world.broker.ca_certificate())))
    .await
    .map_err(|e| e.to_string())
}

/// Forward `count` jobs through `service`: each published, each forwarded once.
async fn forwards(service: &LiveApp, count: u64) -> Result<(), String> {
    for id in 0..count {
        let job =
            ruststream::message::Message::new("jobs-fwd", format!("{{\"id\":{id}}}").into_bytes());
        service.publish(job).await.map_err(|e| e.to_string())?;
    }
    let done = service
        .wait_until(Duration::from_secs(60), |s| {
            s.calls_of("outbox").len() as u64 >= count
        })
        .await;
    let seen = service.calls_of("outbox").len();
    match done {
        true => Ok(()),
        false => Err(format!("{seen} of {count} jobs forwarded within 60 s")),
    }
}

/// TLS, the server's name checked, authenticated with a token.
fn tls_with_a_token(world: &World, runtime: &str) -> Result<(), Failed> {
    let ns = namespace(world, &[("forwarding", &["produce", "consume"])])?;
    let token = world.token("forwarding", Duration::from_secs(3_600));
    on(runtime, |rt| {
        Box::pin(async move {
            let service =
                forwarding(rt, world, &ns, Duration::from_secs(60), |o| o.token(token)).await?;
            let result = forwards(&service, 3).await;
            service.stop().await;
            result
        })
    })
    .map_err(Failed::from)
}

/// Mutual TLS: the role is the certificate's CN, granted in the namespace.
fn mutual_tls(world: &World, runtime: &str) -> Result<(), Failed> {
    let role = format!("certified-{runtime}");
    let ns = namespace(world, &[(&role, &["produce", "consume"])])?;
    let certificate = world.broker.client_certificate(&role).map_err(fail)?;
    if let Ok(key) = std::fs::read_to_string(certificate.key()) {
        // A line of the key's body: what a leak would show.
        if let Some(line) = key.lines().nth(2) {
            world.secret(line);
        }
    }
    on(runtime, |rt| {
        Box::pin(async move {
            let service = forwarding(rt, world, &ns, Duration::from_secs(60), |o| {
                o.client_certificate(certificate.certificate(), certificate.key())
            })
            .await?;
            let result = forwards(&service, 3).await;
            service.stop().await;
            result
        })
    })
    .map_err(Failed::from)
}

/// OAuth2 tokens of 20 s for 2 minutes, on the three runtimes at once, a job every 100 ms on
/// each: nothing lost, no consumer reconnected, the refreshes counted.
fn oauth2_tokens_of_20_s_for_2_minutes(world: &World) -> Result<(), Failed> {
    let before = world.issuer.tokens_issued();
    let credentials = world
        .issuer
        .credentials_file(OAUTH_CLIENT)
        .ok_or_else(|| Failed::from("the issuer has no credentials file for the client"))?
        .to_path_buf();
    let started = Instant::now();
    let runs: Vec<_> = ["tokio", "async-std", "smol"]
        .into_iter()
        .map(|runtime| {
            let ns = namespace(world, &[(OAUTH_ROLE, &["produce", "consume"])]);
            let credentials = credentials.clone();
            (runtime, ns, credentials)
        })
        .collect();
    let outcomes: Vec<Result<String, String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = runs
            .into_iter()
            .map(|(runtime, ns, credentials)| {
                scope.spawn(move || -> Result<String, String> {
                    let ns = ns.map_err(|e| format!("{e:?}"))?;
                    let oauth2 = OAuth2::client_credentials(world.issuer.issuer_url(), credentials);
                    on(runtime, |rt| {
                        Box::pin(async move { steady_load(rt, world, &ns, oauth2, runtime).await })
                    })
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("the run panicked".to_owned()))
            })
            .collect()
    });
    let fetched = world.issuer.tokens_issued() - before;
    eprintln!(
        "live_secured oauth2: {:.1} s, {fetched} tokens fetched from the issuer (each lives \
         {TOKEN_LIFE:?}) by three services",
        started.elapsed().as_secs_f64()
    );
    let mut failures = Vec::new();
    for outcome in outcomes {
        match outcome {
            Ok(report) => eprintln!("live_secured oauth2: {report}"),
            Err(e) => failures.push(e),
        }
    }
    // Each service fetches one at start, then one at least every 16 s (80 % of 20 s).
    let least = 3 * (LONG_RUN.as_secs() / 20) as usize;
    if fetched < least {
        failures.push(format!(
            "only {fetched} tokens fetched over {LONG_RUN:?}: expected at least {least}"
        ));
    }
    match failures.is_empty() {
        true => Ok(()),
        false => Err(failures.join("; ").into()),
    }
}

/// One service under a steady load for [`LONG_RUN`]: a report, or what went wrong.
async fn steady_load(
    rt: Arc<dyn Runtime>,
    world: &World,
    ns: &str,
    oauth2: OAuth2,
    runtime: &str,
) -> Result<String, String> {
    let service = forwarding(rt, world, ns, Duration::from_secs(60), |o| o.oauth2(oauth2)).await?;
    let consumers = |topic: &str, subscription: &str| {
        world
            .broker
            .consumers_connected_since(&format!("persistent://{ns}/{topic}"), subscription)
            .map_err(|e| e.to_string())
    };
    let first = (
        consumers("jobs-fwd", "forwarder")?,
        consumers("jobs-out", "outbox")?,
    );
    let started = Instant::now();
    let mut published = 0u64;
    let mut refused = Vec::new();
    while started.elapsed() < LONG_RUN {
        let job = ruststream::message::Message::new(
            "jobs-fwd",
            format!("{{\"id\":{published}}}").into_bytes(),
        );
        match service.publish(job).await {
            Ok(_) => published += 1,
            Err(e) => refused.push(e.to_string()),
        }
        service.sleep(PACE).await;
    }
    let all = service
        .wait_until(Duration::from_secs(60), |s| {
            s.calls_of("outbox").len() as u64 >= published
        })
        .await;
    let forwarded: std::collections::BTreeSet<u64> = (service.calls_of("outbox").iter())
        .filter_map(|c| c.payload::<Forwarded>().ok().map(|f| f.id))
        .collect();
    let last = (
        consumers("jobs-fwd", "forwarder")?,
        consumers("jobs-out", "outbox")?,
    );
    service.stop().await;
    let lost = published - forwarded.len() as u64;
    let report = format!(
        "{runtime}: published {published}, forwarded {} distinct, lost {lost}, publishes \
         refused {}; consumers connected since {:?} at the start and {:?} at the end",
        forwarded.len(),
        refused.len(),
        first,
        last
    );
    if !all || lost != 0 || !refused.is_empty() {
        return Err(format!("{report}; refusals: {refused:?}"));
    }
    if first != last || first.0.len() != 1 || first.1.len() != 1 {
        return Err(format!("a consumer reconnected or is missing: {report}"));
    }
    Ok(report)
}

/// A service that must not start: it fails within [`FAILS_WITHIN`] with an error holding each
/// of `names`.
fn refused_at_start(
    world: &World,
    runtime: &str,
    ns: &str,
    names: &[&str],
    secure: impl FnOnce(PulsarOverrides) -> PulsarOverrides + Send,
) -> Result<(), Failed> {
    let started = Instant::now();
    let ns = ns.to_owned();
    let outcome = on(runtime, |rt| {
        Box::pin(async move {
            match forwarding(rt, world, &ns, Duration::from_secs(15), secure).await {
                Ok(service) => {
                    service.stop().await;
                    None
                }
                Err(e) => Some(e),
            }
        })
    });
    let took = started.elapsed();
    let error = outcome.ok_or_else(|| Failed::from("the service started"))?;
    world.seen(&error);
    eprintln!(
        "live_secured {runtime}: refused in {:.1} s: {error}",
        took.as_secs_f64()
    );
    if took > FAILS_WITHIN {
        return Err(format!("took {took:?}, more than {FAILS_WITHIN:?}: {error}").into());
    }
    let missing: Vec<_> = names.iter().filter(|n| !error.contains(**n)).collect();
    match missing.is_empty() {
        true => Ok(()),
        false => Err(format!("the error does not say {missing:?}: {error}").into()),
    }
}

fn a_wrong_ca(world: &World, runtime: &str) -> Result<(), Failed> {
    let ns = namespace(world, &[("forwarding", &["produce", "consume"])])?;
    let token = world.token("forwarding", Duration::from_secs(3_600));
    let wrong = world.broker.wrong_ca_certificate().to_path_buf();
    refused_at_start(world, runtime, &ns, &["certificate verify failed"], |o| {
        o.token(token).trust_certificates(wrong)
    })
}

fn an_expired_client_certificate(world: &World, runtime: &str) -> Result<(), Failed> {
    let role = format!("expired-{runtime}");
    let ns = namespace(world, &[(&role, &["produce", "consume"])])?;
    let certificate = world
        .broker
        .expired_client_certificate(&role)
        .map_err(fail)?;
    refused_at_start(world, runtime, &ns, &["certificate expired"], |o| {
        o.client_certificate(certificate.certificate(), certificate.key())
    })
}

fn a_bad_client_secret(world: &World, runtime: &str) -> Result<(), Failed> {
    let ns = namespace(world, &[(OAUTH_ROLE, &["produce", "consume"])])?;
    let wrong = world.secret(format!("not-the-secret-{runtime}"));
    let credentials = world
        .issuer
        .credentials_file_with(OAUTH_CLIENT, &wrong)
        .map_err(fail)?;
    let oauth2 = OAuth2::client_credentials(world.issuer.issuer_url(), credentials);
    refused_at_start(
        world,
        runtime,
        &ns,
        &["invalid_client", OAUTH_CLIENT],
        |o| o.oauth2(oauth2),
    )
}

fn a_topic_the_role_may_not_consume(world: &World, runtime: &str) -> Result<(), Failed> {
    let role = format!("other-team-{runtime}");
    // Granted elsewhere, not in the service's namespace.
    let elsewhere = namespace(world, &[(&role, &["produce", "consume"])])?;
    let ns = namespace(world, &[])?;
    let _ = elsewhere;
    let token = world.token(&role, Duration::from_secs(3_600));
    refused_at_start(
        world,
        runtime,
        &ns,
        &[
            "not authorized",
            "subscribe to",
            &format!("role `{role}`"),
            &ns,
            "consume",
        ],
        |o| o.token(token),
    )
}

fn a_topic_the_role_may_not_publish_to(world: &World, runtime: &str) -> Result<(), Failed> {
    let role = format!("reader-{runtime}");
    let ns = namespace(world, &[(&role, &["consume"])])?;
    let token = world.token(&role, Duration::from_secs(3_600));
    let target = format!("persistent://{ns}/jobs-fwd");
    let started = Instant::now();
    let outcome = on(runtime, |rt| {
        Box::pin(async move {
            let service = LiveApp::with_state(
                app(|b| {
                    b.include(outbox);
                }),
                Plan::new(Script::always(ret(HandlerOutcome::ack()))),
                rt,
            )
            .url(world.broker.tls_url())
            .namespace(ns.clone())
            .overrides(|o| {
                o.trust_certificates(world.broker.ca_certificate())
                    .token(token)
            })
            .await
            .map_err(|e| e.to_string())?;
            let job = ruststream::message::Message::new("jobs-fwd", b"{\"id\":1}".to_vec());
            let published = service.publish(job).await;
            service.stop().await;
            match published {
                Ok(_) => Err("the publish was accepted".to_owned()),
                Err(e) => Ok(e),
            }
        })
    });
    let took = started.elapsed();
    let error = outcome.map_err(Failed::from)?;
    let text = error.to_string();
    world.seen(&text);
    eprintln!(
        "live_secured {runtime}: publish refused in {:.1} s: {text}",
        took.as_secs_f64()
    );
    if !matches!(error, ruststream::PublishError::NotAuthorized { .. }) {
        return Err(format!("expected NotAuthorized: {error:?}").into());
    }
    for name in [
        "not authorized",
        "publish to",
        &format!("role `{role}`"),
        &target,
        "produce",
    ] {
        if !text.contains(name) {
            return Err(format!("the error does not say `{name}`: {text}").into());
        }
    }
    if took > FAILS_WITHIN {
        return Err(format!("took {took:?}: {text}").into());
    }
    Ok(())
}

/// The last case: no secret in any line logged or error seen.
fn no_secret_is_ever_printed(world: &World) -> Result<(), Failed> {
    let log = String::from_utf8_lossy(&LOG.get().expect("set").lock().unwrap()).into_owned();
    let errors = world.errors.lock().unwrap().join("\n");
    let secrets = world.secrets.lock().unwrap().clone();
    let leaked: Vec<_> = secrets
        .iter()
        .filter(|s| s.len() >= 8 && (log.contains(s.as_str()) || errors.contains(s.as_str())))
        .map(|s| format!("{}...", &s[..6]))
        .collect();
    eprintln!(
        "live_secured: {} secrets looked for in {} log bytes and {} error texts",
        secrets.len(),
        log.len(),
        world.errors.lock().unwrap().len()
    );
    match leaked.is_empty() {
        true => Ok(()),
        false => Err(format!("secrets printed: {leaked:?}").into()),
    }
}

type Case = fn(&World, &str) -> Result<(), Failed>;

const PER_RUNTIME: &[(&str, Case)] = &[
    ("tls_with_a_token", tls_with_a_token),
    ("mutual_tls", mutual_tls),
    ("a_wrong_ca_fails_naming_the_certificate", a_wrong_ca),
    (
        "an_expired_client_certificate_fails_naming_it",
        an_expired_client_certificate,
    ),
    ("a_bad_client_secret_fails_naming_it", a_bad_client_secret),
    (
        "a_topic_the_role_may_not_consume_fails_naming_it",
        a_topic_the_role_may_not_consume,
    ),
    (
        "a_topic_the_role_may_not_publish_to_fails_naming_it",
        a_topic_the_role_may_not_publish_to,
    ),
];

fn main() -> std::process::ExitCode {
    let begun = Instant::now();
    LOG.set(Arc::new(Mutex::new(Vec::new()))).expect("once");
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(
            "info,ruststream_driver=debug,ruststream_pulsar=debug,pulsar=debug",
        ))
        .with_writer(|| Capture)
        .with_ansi(false)
        .init();
    let mut args = Arguments::from_args();
    args.test_threads = Some(1);
    let label = format!("apache-pulsar-{APACHE_PULSAR_VERSION}");
    let world = if args.list {
        None
    } else {
        Some(start().map(Arc::new))
    };
    let mut trials = Vec::new();
    if let Some(Err(e)) = &world {
        let message = e.clone();
        trials.push(Trial::test(
            "broker-start/secured Apache Pulsar",
            move || Err(message.clone().into()),
        ));
    }
    let world = world.and_then(Result::ok);
    for runtime in ["tokio", "async-std", "smol"] {
        for &(name, case) in PER_RUNTIME {
            let world = world.clone();
            trials.push(Trial::test(
                format!("{label}/{runtime}/{name}"),
                move || {
                    let world: Arc<World> = world.ok_or_else(|| Failed::from("no broker"))?;
                    case(&world, runtime)
                },
            ));
        }
    }
    let long = world.clone();
    trials.push(Trial::test(
        format!("{label}/all-runtimes/oauth2_tokens_of_20_s_for_2_minutes"),
        move || {
            let world: Arc<World> = long.ok_or_else(|| Failed::from("no broker"))?;
            oauth2_tokens_of_20_s_for_2_minutes(&world)
        },
    ));
    let last = world.clone();
    trials.push(Trial::test(
        format!("{label}/zz/no_secret_is_ever_printed"),
        move || {
            let world: Arc<World> = last.ok_or_else(|| Failed::from("no broker"))?;
            no_secret_is_ever_printed(&world)
        },
    ));
    let conclusion = libtest_mimic::run(&args, trials);
    if conclusion.has_failed() {
        let log = String::from_utf8_lossy(&LOG.get().expect("set").lock().unwrap()).into_owned();
        let lines: Vec<&str> = log.lines().collect();
        eprintln!(
            "live_secured: the last 300 of {} lines logged:",
            lines.len()
        );
        for line in &lines[lines.len().saturating_sub(300)..] {
            eprintln!("{line}");
        }
    }
    drop(world);
    eprintln!(
        "live_secured: {:.1} s in all",
        begun.elapsed().as_secs_f64()
    );
    match conclusion.has_failed() {
        true => std::process::ExitCode::FAILURE,
        false => std::process::ExitCode::SUCCESS,
    }
}

/// The secured broker and the issuer.
fn start() -> Result<World, String> {
    let started = Instant::now();
    let broker = ApacheStandalone::start_secured(&[], SecuritySetup::default())
        .map_err(|e| e.to_string())?;
    let issuer = IssuerStandIn::start(
        broker.token_signer().clone(),
        [OAuthClient::new(OAUTH_CLIENT, OAUTH_SECRET, OAUTH_ROLE)],
        TOKEN_LIFE,
    )
    .map_err(|e| e.to_string())?;
    eprintln!(
        "live_secured: the secured broker and the issuer started in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let world = World {
        secrets: Mutex::new(vec![
            OAUTH_SECRET.to_owned(),
            broker.superuser_token().to_owned(),
        ]),
        broker,
        issuer,
        errors: Mutex::new(Vec::new()),
    };
    Ok(world)
}
