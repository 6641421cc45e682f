//! The broker URL, checked without connecting.

use std::fmt;

/// A parsed `pulsar://host:port` or `pulsar+ssl://host:port` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BrokerUrl {
    pub(crate) tls: bool,
    pub(crate) host: String,
    pub(crate) port: u16,
}

impl BrokerUrl {
    pub(crate) fn parse(url: &str) -> Result<BrokerUrl, BadUrl> {
        // Errors show the URL only with its credential-carrying parts masked.
        let bad = |why: &str| BadUrl {
            url: redact(url),
            why: why.to_owned(),
        };
        let (tls, rest) = if let Some(rest) = url.strip_prefix("pulsar://") {
            (false, rest)
        } else if let Some(rest) = url.strip_prefix("pulsar+ssl://") {
            (true, rest)
        } else {
            return Err(bad("it must start with `pulsar://` or `pulsar+ssl://`"));
        };
        let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
        if authority.contains('@') {
            return Err(bad(
                "it has a user-info part (before `@`), where a token or password would be \
                 printed wherever the URL is; remove it and pass the token with \
                 `PulsarBroker::with_token(..)`",
            ));
        }
        if rest.contains(['?', '#']) {
            return Err(bad(
                "it has a query or fragment (after `?` or `#`), which pulsar-rs ignores and \
                 where a token would be printed wherever the URL is; remove it and pass a \
                 token with `PulsarBroker::with_token(..)`",
            ));
        }
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.contains('/') {
            return Err(bad("it must be only scheme, host and port, with no path"));
        }
        let (host, port) = match rest.rsplit_once(':') {
            Some((host, port)) if !host.ends_with(']') || host.starts_with('[') => {
                let port: u16 = port.parse().map_err(|_| {
                    bad(&format!(
                        "the port `{port}` is not a number from 1 to 65535"
                    ))
                })?;
                if port == 0 {
                    return Err(bad("the port 0 cannot be connected to"));
                }
                (host, port)
            }
            _ => (rest, if tls { 6651 } else { 6650 }),
        };
        if host.is_empty() {
            return Err(bad("the host is empty"));
        }
        Ok(BrokerUrl {
            tls,
            host: host.to_owned(),
            port,
        })
    }
}

/// `url` as it may be shown in an error or a log: a user-info part (`TOKEN@`) and a query or
/// fragment (`?token=..`) become `***`, since that is where a URL carries credentials.
pub(crate) fn redact(url: &str) -> String {
    let (scheme, rest) = match url.find("://") {
        Some(at) => url.split_at(at + 3),
        None => ("", url),
    };
    let end = rest.find(['?', '#']).unwrap_or(rest.len());
    let (before, after) = rest.split_at(end);
    let authority_end = before.find('/').unwrap_or(before.len());
    let (authority, path) = before.split_at(authority_end);
    let authority = match authority.rfind('@') {
        Some(at) => format!("***{}", &authority[at..]),
        None => authority.to_owned(),
    };
    let tail = match after.chars().next() {
        Some(mark) => format!("{mark}***"),
        None => String::new(),
    };
    format!("{scheme}{authority}{path}{tail}")
}

impl fmt::Display for BrokerUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.tls { "pulsar+ssl" } else { "pulsar" };
        write!(f, "{scheme}://{}:{}", self.host, self.port)
    }
}

/// A broker URL that does not parse, or that carries what could be a credential.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the broker URL `{url}` is refused: {why}; write it as `pulsar://host:6650` (or \
     `pulsar+ssl://host:6651` for TLS)"
)]
pub struct BadUrl {
    /// The URL as given, with its credential-carrying parts masked (see [`redact`]).
    url: String,
    why: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_forms() {
        let u = BrokerUrl::parse("pulsar://localhost:6650").unwrap();
        assert_eq!((u.tls, u.host.as_str(), u.port), (false, "localhost", 6650));
        let u = BrokerUrl::parse("pulsar+ssl://broker.example:6651/").unwrap();
        assert_eq!((u.tls, u.port), (true, 6651));
        assert_eq!(BrokerUrl::parse("pulsar://h").unwrap().port, 6650);
        assert_eq!(u.to_string(), "pulsar+ssl://broker.example:6651");
    }

    #[test]
    fn rejected_forms_say_why() {
        let e = BrokerUrl::parse("http://localhost:6650").unwrap_err();
        assert_eq!(
            e.to_string(),
            "the broker URL `http://localhost:6650` is refused: it must start with \
             `pulsar://` or `pulsar+ssl://`; write it as `pulsar://host:6650` (or \
             `pulsar+ssl://host:6651` for TLS)"
        );
        assert!(BrokerUrl::parse("pulsar://:6650")
            .unwrap_err()
            .to_string()
            .contains("the host is empty"));
        assert!(BrokerUrl::parse("pulsar://h:port")
            .unwrap_err()
            .to_string()
            .contains("`port` is not a number"));
        assert!(BrokerUrl::parse("pulsar://h:6650/x")
            .unwrap_err()
            .to_string()
            .contains("no path"));
    }

    const SECRET: &str = "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0.s1gn";

    #[test]
    fn credentials_in_the_url_are_refused_without_being_printed() {
        let cases = [
            (
                format!("pulsar://{SECRET}@broker:6650"),
                "pulsar://***@broker:6650",
            ),
            (
                format!("pulsar+ssl://user:{SECRET}@broker"),
                "pulsar+ssl://***@broker",
            ),
            (
                format!("pulsar://broker:6650?token={SECRET}"),
                "pulsar://broker:6650?***",
            ),
            (
                format!("pulsar://broker:6650/?token={SECRET}"),
                "pulsar://broker:6650/?***",
            ),
            (
                format!("pulsar://broker:6650#{SECRET}"),
                "pulsar://broker:6650#***",
            ),
            (
                format!("pulsar://{SECRET}@broker:port?x={SECRET}"),
                "pulsar://***@broker:port?***",
            ),
        ];
        for (url, shown) in cases {
            let text = BrokerUrl::parse(&url).unwrap_err().to_string();
            assert!(!text.contains(SECRET), "{text}");
            assert!(!text.contains("s1gn"), "{text}");
            assert!(text.contains(&format!("`{shown}`")), "{text}");
            assert!(text.contains("PulsarBroker::with_token(..)"), "{text}");
        }
    }

    #[test]
    fn other_errors_mask_credentials_too() {
        let text = BrokerUrl::parse(&format!("http://{SECRET}@broker:6650?k={SECRET}"))
            .unwrap_err()
            .to_string();
        assert!(!text.contains(SECRET), "{text}");
        assert!(text.contains("`http://***@broker:6650?***`"), "{text}");
        assert!(text.contains("must start with `pulsar://`"), "{text}");
        let text = BrokerUrl::parse(&format!("{SECRET}@broker:6650"))
            .unwrap_err()
            .to_string();
        assert!(!text.contains(SECRET), "{text}");
    }

    #[test]
    fn redact_keeps_urls_without_credentials() {
        for url in [
            "pulsar://localhost:6650",
            "pulsar+ssl://h:6651/",
            "pulsar://h:6650/x",
        ] {
            assert_eq!(redact(url), url);
        }
    }
}
