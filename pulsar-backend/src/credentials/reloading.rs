//! A token given, or read anew from a file or an environment variable each time pulsar-rs
//! asks for one (on every connection, and on every `AuthChallenge` once the last expired).

use std::path::PathBuf;

use pulsar::authentication::Authentication;
use pulsar::error::AuthenticationError;

use super::Secret;

/// Where the token comes from.
enum Source {
    Given(Secret),
    File(PathBuf),
    Env(String),
}

/// Pulsar's `token` authentication, its token looked up each time.
pub(super) struct Token(Source);

impl Token {
    pub(super) fn given(token: Secret) -> Self {
        Token(Source::Given(token))
    }

    pub(super) fn file(path: PathBuf) -> Self {
        Token(Source::File(path))
    }

    pub(super) fn env(var: String) -> Self {
        Token(Source::Env(var))
    }

    /// The token now; the error names where it was looked for, never what it holds.
    pub(super) fn read(&self) -> Result<String, String> {
        let token = match &self.0 {
            Source::Given(token) => return Ok(token.0.to_string()),
            Source::File(path) => std::fs::read_to_string(path).map_err(|e| {
                format!(
                    "cannot read the token file `{}` given to `PulsarBroker::with_token_file`: {e}",
                    path.display()
                )
            })?,
            Source::Env(var) => std::env::var(var).map_err(|e| {
                format!(
                    "cannot read the token from the environment variable `{var}` given to \
                     `PulsarBroker::with_token_from_env`: {e}"
                )
            })?,
        };
        let token = token.trim();
        if token.is_empty() {
            let place = match &self.0 {
                Source::File(path) => format!("the token file `{}`", path.display()),
                Source::Env(var) => format!("the environment variable `{var}`"),
                Source::Given(_) => "the token given".to_owned(),
            };
            return Err(format!("{place} is empty: put the token there"));
        }
        Ok(token.to_owned())
    }
}

#[async_trait::async_trait]
impl Authentication for Token {
    fn auth_method_name(&self) -> String {
        "token".to_owned()
    }

    async fn initialize(&mut self) -> Result<(), AuthenticationError> {
        self.read().map(drop).map_err(AuthenticationError::Custom)
    }

    async fn auth_data(&mut self) -> Result<Vec<u8>, AuthenticationError> {
        self.read()
            .map(String::into_bytes)
            .map_err(AuthenticationError::Custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_read_again_each_time_and_errors_name_the_place_not_the_token() {
        let dir = std::env::temp_dir().join(format!("ruststream-token-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("token");
        std::fs::write(&path, "first-secret\n").unwrap();
        let token = Token::file(path.clone());
        assert_eq!(token.read().unwrap(), "first-secret");
        std::fs::write(&path, "second-secret").unwrap();
        assert_eq!(token.read().unwrap(), "second-secret", "rotated");
        std::fs::write(&path, "  ").unwrap();
        let error = token.read().unwrap_err();
        assert!(error.contains("is empty"), "{error}");
        std::fs::remove_file(&path).unwrap();
        let error = token.read().unwrap_err();
        assert!(error.contains("cannot read the token file"), "{error}");
        assert!(!error.contains("secret"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_missing_variable_is_named() {
        let token = Token::env("RUSTSTREAM_TEST_NO_SUCH_TOKEN_VARIABLE".to_owned());
        let error = token.read().unwrap_err();
        assert!(
            error.contains("RUSTSTREAM_TEST_NO_SUCH_TOKEN_VARIABLE"),
            "{error}"
        );
    }
}
