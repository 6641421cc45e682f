//! The OAuth2 issuer stand-in over HTTP, as a client sees it: discovery, JWKS, the
//! client-credentials grant (form body, HTTP Basic, JSON), refusals, its counts and credentials
//! files, and that dropping it stops it. No broker here (`secured_apache.rs` shows the broker
//! accepts its tokens).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use ruststream_test_brokers::{IssuerStandIn, OAuthClient, TokenSigner};

/// One HTTP/1.1 request to `addr`; the status and the body.
fn call(addr: SocketAddr, request: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).expect("connect to the stand-in");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").expect("an HTTP answer");
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, body.to_owned())
}

fn get(addr: SocketAddr, path: &str) -> (u16, serde_json::Value) {
    let (status, body) = call(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"),
    );
    (status, serde_json::from_str(&body).expect("JSON"))
}

fn post(addr: SocketAddr, headers: &str, body: &str) -> (u16, serde_json::Value) {
    let (status, body) = call(
        addr,
        &format!(
            "POST /oauth/token HTTP/1.1\r\nHost: {addr}\r\n{headers}Content-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            body.len()
        ),
    );
    (status, serde_json::from_str(&body).expect("JSON"))
}

const FORM: &str = "Content-Type: application/x-www-form-urlencoded\r\n";

/// The claims of a JWT, decoded (not verified: the broker does that in secured_apache.rs).
fn claims(token: &str) -> serde_json::Value {
    let payload: String = token
        .split('.')
        .nth(1)
        .expect("a JWT")
        .chars()
        .map(|c| match c {
            '-' => '+',
            '_' => '/',
            c => c,
        })
        .collect();
    let padded = format!("{payload}{}", "=".repeat((4 - payload.len() % 4) % 4));
    serde_json::from_slice(&openssl::base64::decode_block(&padded).expect("base64"))
        .expect("JSON claims")
}

#[test]
fn the_stand_in_discovers_issues_refuses_counts_and_stops() {
    let signer = TokenSigner::generate().expect("signing key");
    let issuer = IssuerStandIn::start(
        signer,
        [
            OAuthClient::new("orders-service", "orders-secret", "orders-writer"),
            OAuthClient::new("audit", "audit:secret@", "auditor"),
        ],
        Duration::from_secs(20),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let addr = issuer.addr();
    assert_eq!(issuer.issuer_url(), format!("http://{addr}/"));
    assert!(
        !format!("{issuer:?}").contains("orders-secret"),
        "Debug shows a secret: {issuer:?}"
    );

    // Discovery, also at the double slash some clients join to the issuer URL.
    for path in [
        "/.well-known/openid-configuration",
        "//.well-known/openid-configuration",
    ] {
        let (status, metadata) = get(addr, path);
        assert_eq!(status, 200, "{path}");
        assert_eq!(metadata["issuer"], issuer.issuer_url());
        assert_eq!(metadata["token_endpoint"], issuer.token_endpoint());
        assert_eq!(
            metadata["response_types_supported"],
            serde_json::json!(["code"])
        );
        assert_eq!(
            metadata["subject_types_supported"],
            serde_json::json!(["public"])
        );
        assert_eq!(
            metadata["id_token_signing_alg_values_supported"],
            serde_json::json!(["RS256"])
        );
        assert!(metadata["authorization_endpoint"].is_string());
        let jwks = metadata["jwks_uri"].as_str().unwrap();
        let jwks_path = jwks.strip_prefix(&format!("http://{addr}")).unwrap();
        let (status, keys) = get(addr, jwks_path);
        assert_eq!(status, 200);
        assert_eq!(keys["keys"][0]["kty"], "RSA");
    }

    // Form body, with audience and scope.
    let (status, answer) = post(
        addr,
        FORM,
        "grant_type=client_credentials&client_id=orders-service&client_secret=orders-secret\
         &audience=urn%3Apulsar%3Atest&scope=produce+consume",
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["token_type"], "Bearer");
    assert_eq!(answer["expires_in"], 20);
    let token = answer["access_token"].as_str().unwrap();
    let claims_of_token = claims(token);
    assert_eq!(claims_of_token["sub"], "orders-writer");
    assert_eq!(claims_of_token["aud"], "urn:pulsar:test");
    assert_eq!(claims_of_token["scope"], "produce consume");
    assert_eq!(
        claims_of_token["exp"].as_u64().unwrap() - claims_of_token["iat"].as_u64().unwrap(),
        20
    );

    // HTTP Basic (id and secret form-urlencoded first, RFC 6749 2.3.1).
    let basic = openssl::base64::encode_block(b"audit:audit%3Asecret%40");
    let (status, answer) = post(
        addr,
        &format!("{FORM}Authorization: Basic {basic}\r\n"),
        "grant_type=client_credentials",
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        claims(answer["access_token"].as_str().unwrap())["sub"],
        "auditor"
    );

    // A JSON body.
    let (status, answer) = post(
        addr,
        "Content-Type: application/json\r\n",
        r#"{"grant_type":"client_credentials","client_id":"orders-service","client_secret":"orders-secret"}"#,
    );
    assert_eq!(status, 200, "{answer}");

    // Refusals: a wrong secret, an unknown client, another grant.
    let (status, answer) = post(
        addr,
        FORM,
        "grant_type=client_credentials&client_id=orders-service&client_secret=wrong-secret",
    );
    assert_eq!(
        (status, answer["error"].as_str()),
        (400, Some("invalid_client"))
    );
    assert!(!answer.to_string().contains("wrong-secret"));
    let (status, answer) = post(
        addr,
        FORM,
        "grant_type=client_credentials&client_id=nobody&client_secret=x",
    );
    assert_eq!(
        (status, answer["error"].as_str()),
        (400, Some("invalid_client"))
    );
    let (status, answer) = post(addr, FORM, "grant_type=password&client_id=orders-service");
    assert_eq!(
        (status, answer["error"].as_str()),
        (400, Some("unsupported_grant_type"))
    );

    assert_eq!(issuer.tokens_issued(), 3);
    let requests = issuer.requests();
    assert_eq!(requests.len(), 6);
    assert!(requests[1].basic_auth);
    assert_eq!(requests[3].refused, Some("invalid_client"));
    assert!(!format!("{requests:?}").contains("secret\""));

    // The Java client's key file.
    let file = issuer
        .credentials_file("orders-service")
        .expect("a credentials file");
    let key_file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    assert_eq!(key_file["client_id"], "orders-service");
    assert_eq!(key_file["client_secret"], "orders-secret");
    assert_eq!(key_file["issuer_url"], issuer.issuer_url());
    assert!(issuer.credentials_file("nobody").is_none());
    let wrong = issuer
        .credentials_file_with("orders-service", "not-the-secret")
        .unwrap();
    let wrong: serde_json::Value = serde_json::from_slice(&std::fs::read(&wrong).unwrap()).unwrap();
    assert_eq!(wrong["client_secret"], "not-the-secret");
    let file = file.to_owned();

    drop(issuer);
    assert!(
        TcpStream::connect_timeout(&addr, Duration::from_secs(2)).is_err(),
        "the stand-in still listens on {addr} after drop"
    );
    assert!(!file.exists(), "{} was not removed", file.display());
}
