//! The application's identity.

use alloc::string::String;

/// The service's name and version, used in logs and as the default producer name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppInfo {
    name: String,
    version: String,
}

impl AppInfo {
    /// A service called `name` at `version`.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        AppInfo {
            name: name.into(),
            version: version.into(),
        }
    }

    /// The service's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The service's version.
    pub fn version(&self) -> &str {
        &self.version
    }
}
