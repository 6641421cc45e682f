//! A secret (a token, a client secret) that never shows in `Debug` or in an error.

use std::fmt;

/// A secret string. `Debug` prints `<redacted>`; the value is had only through
/// [`Secret::expose`], where it is sent or written, never where it is printed.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Secret(String);

impl Secret {
    /// Keep `value` as a secret.
    pub(crate) fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The secret itself, to send or to write to a file a client reads.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// `text` with every occurrence of each non-empty secret in `secrets` replaced by
/// `<redacted>`: for a child's stderr quoted in an error, which could echo what it was given.
pub(crate) fn redact<'a>(text: &str, secrets: impl IntoIterator<Item = &'a str>) -> String {
    let mut text = text.to_owned();
    for secret in secrets {
        if !secret.is_empty() {
            text = text.replace(secret, "<redacted>");
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_the_value_and_redact_removes_it() {
        let secret = Secret::new("s3cr3t-value");
        assert_eq!(format!("{secret:?}"), "<redacted>");
        assert_eq!(secret.expose(), "s3cr3t-value");
        assert_eq!(
            redact(
                "got s3cr3t-value twice: s3cr3t-value",
                [secret.expose(), ""]
            ),
            "got <redacted> twice: <redacted>"
        );
    }
}
