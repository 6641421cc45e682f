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
        let bad = |why: &str| BadUrl {
            url: url.to_owned(),
            why: why.to_owned(),
        };
        let (tls, rest) = if let Some(rest) = url.strip_prefix("pulsar://") {
            (false, rest)
        } else if let Some(rest) = url.strip_prefix("pulsar+ssl://") {
            (true, rest)
        } else {
            return Err(bad("it must start with `pulsar://` or `pulsar+ssl://`"));
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.contains('/') || rest.contains('?') {
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

impl fmt::Display for BrokerUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.tls { "pulsar+ssl" } else { "pulsar" };
        write!(f, "{scheme}://{}:{}", self.host, self.port)
    }
}

/// A broker URL that does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadUrl {
    url: String,
    why: String,
}

impl fmt::Display for BadUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the broker URL `{}` does not parse: {}; write it as `pulsar://host:6650` (or \
             `pulsar+ssl://host:6651` for TLS)",
            self.url, self.why
        )
    }
}

impl std::error::Error for BadUrl {}

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
            "the broker URL `http://localhost:6650` does not parse: it must start with \
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
}
