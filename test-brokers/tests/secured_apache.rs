//! The secured Apache Pulsar standalone (`ApacheStandalone::start_secured`), checked with the
//! official Python client: over TLS with the test's CA (host names verified), a superuser's
//! token produces and consumes; a limited role's token consumes the namespace it was granted
//! and is refused elsewhere; a client certificate authenticates as its CN; a token fetched over
//! HTTP from the OAuth2 issuer stand-in, and the client's own OAuth2 flow against it, are
//! accepted. Then what must fail does: no credentials, an expired client certificate, a CA
//! that did not sign the broker's certificate.
//!
//! A live test: a broker that cannot start fails it, it never skips.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use ruststream_test_brokers::{
    ApacheStandalone, IssuerStandIn, OAuthClient, PythonAuth, PythonOutcome, PythonRefusal,
    SecuredPythonClient, SecuritySetup,
};

/// Messages the superuser publishes for the others to read.
const MESSAGES: usize = 3;
/// How long a consumer waits for them.
const RECEIVE_WITHIN: Duration = Duration::from_secs(20);
/// The operation timeout of clients that must be refused (the C++ client retries a failed
/// TLS handshake or a refused connection until then).
const REFUSED_WITHIN: Duration = Duration::from_secs(5);

#[test]
fn secured_standalone_checks_tls_tokens_certificates_and_oauth2() {
    let started = Instant::now();
    let broker = ApacheStandalone::start_secured(&[], SecuritySetup::default())
        .unwrap_or_else(|e| panic!("{e}\nscripts/setup installs a JDK, Maven and curl"));
    eprintln!(
        "secured broker ready after {:.1} s: {} (TLS), {}",
        started.elapsed().as_secs_f64(),
        broker.tls_url(),
        broker.url()
    );
    assert!(
        !format!("{broker:?}").contains(broker.superuser_token()),
        "Debug of the broker shows the superuser's token"
    );
    assert!(broker.tls_url().starts_with("pulsar+ssl://127.0.0.1:"));
    for namespace in ["public/granted", "public/forbidden"] {
        broker
            .create_namespace(namespace)
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let run = std::process::id();
    let granted = format!("persistent://public/granted/secured-{run}");
    let forbidden = format!("persistent://public/forbidden/secured-{run}");
    let payloads: Vec<String> = (0..MESSAGES).map(|i| format!("secured-{i}")).collect();
    let ca = Some(broker.ca_certificate());

    // 1. The superuser, over TLS with the CA: produces and consumes.
    let superuser = SecuredPythonClient::new(
        broker.tls_url(),
        ca,
        PythonAuth::Token(broker.superuser_token().to_owned()),
    );
    assert_eq!(
        done(superuser.produce(&granted, &payloads), "superuser produce"),
        MESSAGES
    );
    assert_eq!(
        done(
            superuser.produce(&forbidden, &payloads[..1]),
            "superuser produce"
        ),
        1
    );
    let got = done(
        superuser.consume(&granted, "superuser", MESSAGES, RECEIVE_WITHIN),
        "superuser consume",
    );
    assert_eq!(got, payloads);
    eprintln!("superuser over TLS: produced and consumed {MESSAGES}");

    // 2. A limited role's token: consume on public/granted only.
    broker
        .grant("public/granted", "reader", &["consume"])
        .unwrap_or_else(|e| panic!("{e}"));
    let reader = SecuredPythonClient::new(
        broker.tls_url(),
        ca,
        PythonAuth::Token(broker.mint_token("reader", Duration::from_secs(300))),
    );
    let got = consumed_once_granted(&reader, &granted, "reader");
    assert_eq!(got, payloads);
    let refusal = refused(
        reader.consume(&forbidden, "reader", 1, RECEIVE_WITHIN),
        "reader consume on a namespace not granted",
    );
    assert_eq!(refusal.error, "AuthorizationError", "{refusal:?}");
    let refusal = refused(
        reader.produce(&granted, &payloads[..1]),
        "reader produce with consume only",
    );
    assert_eq!(refusal.error, "AuthorizationError", "{refusal:?}");
    eprintln!(
        "limited role: consumed its namespace, refused elsewhere ({})",
        refusal.message
    );

    // 3. A client certificate: authenticated as its CN, which alone is granted.
    broker
        .grant("public/granted", "certified-reader", &["consume"])
        .unwrap_or_else(|e| panic!("{e}"));
    let certificate = broker
        .client_certificate("certified-reader")
        .unwrap_or_else(|e| panic!("{e}"));
    let certified = SecuredPythonClient::new(broker.tls_url(), ca, PythonAuth::Tls(certificate));
    let got = consumed_once_granted(&certified, &granted, "certified");
    assert_eq!(got, payloads);
    let refusal = refused(
        certified.consume(&forbidden, "certified", 1, RECEIVE_WITHIN),
        "certificate client on a namespace not granted",
    );
    assert_eq!(refusal.error, "AuthorizationError", "{refusal:?}");
    let other = broker
        .client_certificate("not-granted")
        .unwrap_or_else(|e| panic!("{e}"));
    let refusal = refused(
        SecuredPythonClient::new(broker.tls_url(), ca, PythonAuth::Tls(other)).consume(
            &granted,
            "other",
            1,
            RECEIVE_WITHIN,
        ),
        "certificate of a role not granted",
    );
    assert_eq!(refusal.error, "AuthorizationError", "{refusal:?}");
    eprintln!("client certificate: authenticated as its CN");

    // 4. OAuth2: the stand-in's tokens, signed with the broker's key.
    broker
        .grant("public/granted", "oauth-writer", &["produce", "consume"])
        .unwrap_or_else(|e| panic!("{e}"));
    let issuer = IssuerStandIn::start(
        broker.token_signer().clone(),
        [OAuthClient::new(
            "orders-service",
            "orders-secret",
            "oauth-writer",
        )],
        Duration::from_secs(20),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (status, answer) = fetch_token(issuer.addr(), "orders-service", "orders-secret");
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["token_type"], "Bearer");
    assert_eq!(answer["expires_in"], 20);
    let token = answer["access_token"]
        .as_str()
        .expect("an access token")
        .to_owned();
    let oauth = SecuredPythonClient::new(broker.tls_url(), ca, PythonAuth::Token(token));
    assert_eq!(
        done(
            oauth.produce(&granted, &payloads[..1]),
            "OAuth2 token produce"
        ),
        1
    );
    let (status, answer) = fetch_token(issuer.addr(), "orders-service", "wrong-secret");
    assert_eq!(
        (status, answer["error"].as_str()),
        (400, Some("invalid_client"))
    );
    // The client's own OAuth2 flow (discovery, then the token endpoint) with the key file.
    let flow = SecuredPythonClient::new(
        broker.tls_url(),
        ca,
        PythonAuth::OAuth2 {
            issuer_url: issuer.issuer_url().to_owned(),
            credentials_file: issuer
                .credentials_file("orders-service")
                .expect("its credentials file")
                .to_owned(),
            audience: Some("urn:ruststream:test".to_owned()),
            scope: None,
        },
    );
    let got = done(
        flow.consume(&granted, "oauth", MESSAGES + 1, RECEIVE_WITHIN),
        "OAuth2 flow consume",
    );
    assert_eq!(got.len(), MESSAGES + 1, "{got:?}");
    let requests = issuer.requests();
    eprintln!(
        "OAuth2: {} tokens issued; the Python client's request: {:?}",
        issuer.tokens_issued(),
        requests.last()
    );
    assert_eq!(issuer.tokens_issued(), 2, "{requests:?}");
    let flow_request = requests.last().expect("the flow's request");
    assert_eq!(flow_request.refused, None);
    assert_eq!(
        flow_request.audience.as_deref(),
        Some("urn:ruststream:test")
    );

    // 5. What must fail does.
    let anonymous = SecuredPythonClient::new(broker.tls_url(), ca, PythonAuth::None)
        .operation_timeout(REFUSED_WITHIN);
    let refusal = refused(
        anonymous.consume(&granted, "anonymous", 1, RECEIVE_WITHIN),
        "no credentials",
    );
    eprintln!("no credentials: {refusal:?}");
    let expired = broker
        .expired_client_certificate("certified-reader")
        .unwrap_or_else(|e| panic!("{e}"));
    let refusal = refused(
        SecuredPythonClient::new(broker.tls_url(), ca, PythonAuth::Tls(expired))
            .operation_timeout(REFUSED_WITHIN)
            .consume(&granted, "expired", 1, RECEIVE_WITHIN),
        "an expired client certificate",
    );
    eprintln!("expired client certificate: {refusal:?}");
    let refusal = refused(
        SecuredPythonClient::new(
            broker.tls_url(),
            Some(broker.wrong_ca_certificate()),
            PythonAuth::Token(broker.superuser_token().to_owned()),
        )
        .operation_timeout(REFUSED_WITHIN)
        .consume(&granted, "wrong-ca", 1, RECEIVE_WITHIN),
        "a CA that did not sign the broker's certificate",
    );
    eprintln!("wrong CA: {refusal:?}");
    eprintln!(
        "all checks done in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// What `outcome` did, or a failure naming `what`.
fn done<T>(
    outcome: Result<PythonOutcome<T>, ruststream_test_brokers::BrokerError>,
    what: &str,
) -> T {
    match outcome.unwrap_or_else(|e| panic!("{what}: {e}")) {
        PythonOutcome::Done(value) => value,
        PythonOutcome::Refused(refusal) => panic!("{what} was refused: {refusal:?}"),
    }
}

/// The refusal of `outcome`, or a failure naming `what` (which must be refused).
fn refused<T: std::fmt::Debug>(
    outcome: Result<PythonOutcome<T>, ruststream_test_brokers::BrokerError>,
    what: &str,
) -> PythonRefusal {
    match outcome.unwrap_or_else(|e| panic!("{what}: {e}")) {
        PythonOutcome::Refused(refusal) => refusal,
        PythonOutcome::Done(value) => panic!("{what} was not refused: it did {value:?}"),
    }
}

/// The payloads `client` consumes from `topic` as subscription `subscription`, right after a
/// grant: the broker's policy cache may take a moment to see it, so one refusal for
/// authorization is tried again after a second.
fn consumed_once_granted(
    client: &SecuredPythonClient,
    topic: &str,
    subscription: &str,
) -> Vec<String> {
    for attempt in 0..2 {
        match client.consume(topic, subscription, MESSAGES, RECEIVE_WITHIN) {
            Ok(PythonOutcome::Done(payloads)) => return payloads,
            Ok(PythonOutcome::Refused(refusal))
                if attempt == 0 && refusal.error == "AuthorizationError" =>
            {
                eprintln!("{subscription}: refused right after the grant; once more in 1 s");
                std::thread::sleep(Duration::from_secs(1));
            }
            other => panic!("{subscription} consume on a granted namespace: {other:?}"),
        }
    }
    unreachable!("the second attempt returns or panics")
}

/// POST the client-credentials grant to the stand-in's token endpoint, as a client does; the
/// status and the JSON answer.
fn fetch_token(addr: SocketAddr, client_id: &str, secret: &str) -> (u16, serde_json::Value) {
    let body =
        format!("grant_type=client_credentials&client_id={client_id}&client_secret={secret}");
    let mut stream = TcpStream::connect(addr).expect("connect to the issuer stand-in");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "POST /oauth/token HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").expect("an HTTP answer");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .expect("a status");
    (status, serde_json::from_str(body).expect("a JSON answer"))
}
