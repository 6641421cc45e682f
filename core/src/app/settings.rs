//! Settings a broker takes from the process's environment and command line.

use alloc::collections::BTreeMap;
use alloc::string::String;

/// A setting a broker lets the process override: the app's code gives the default, the
/// environment variable `env` replaces it, the command-line flag `--flag` replaces both.
///
/// Brokers declare theirs ([`Broker::settings`](super::Broker::settings)); the runner offers
/// each as a flag and an environment variable and hands the values given to the brokers in
/// [`Settings`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SettingSpec {
    /// The key the broker looks the value up by (`pulsar.url`).
    pub key: &'static str,
    /// The environment variable (`RUSTSTREAM_PULSAR_URL`).
    pub env: &'static str,
    /// The long flag, without dashes (`pulsar-url`).
    pub flag: &'static str,
    /// One line of help.
    pub help: &'static str,
    /// A secret (a token): never printed, not even in `--help`.
    pub secret: bool,
}

impl SettingSpec {
    /// A setting that is not a secret.
    pub const fn new(
        key: &'static str,
        env: &'static str,
        flag: &'static str,
        help: &'static str,
    ) -> Self {
        SettingSpec {
            key,
            env,
            flag,
            help,
            secret: false,
        }
    }

    /// The same setting, a secret.
    pub const fn secret(mut self) -> Self {
        self.secret = true;
        self
    }
}

/// The values the process gave for declared settings, by key. Handed to brokers at start in
/// the [`StartContext`](super::StartContext); a key without a value keeps the app's default.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Settings {
    values: BTreeMap<String, String>,
}

impl Settings {
    /// No value given.
    pub fn new() -> Self {
        Self::default()
    }

    /// Give `value` for `key`.
    pub fn set(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.values.insert(key.into(), value.into());
    }

    /// The value given for `key`, if any.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }
}

impl core::fmt::Debug for Settings {
    /// Keys only: values may be secrets.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_set().entries(self.values.keys()).finish()
    }
}
