//! Why an app did not start.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use super::BoxError;

/// The app could not start. Registration problems are all reported at once.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// Registrations that cannot work; nothing was started.
    Invalid {
        /// The broker they were made on.
        broker: &'static str,
        /// Each problem.
        problems: Vec<BoxError>,
    },
    /// The app was assembled in an order that loses part of it.
    Misuse(String),
    /// `on_startup` failed.
    Startup(#[source] BoxError),
    /// A broker could not connect or subscribe.
    Connect {
        /// The broker.
        broker: &'static str,
        /// What failed.
        source: BoxError,
    },
}

// By hand, unlike `Error`: the list of problems and its plural are no single `#[error]` string.
impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::Invalid { broker, problems } => {
                write!(
                    f,
                    "the service cannot start: {} invalid {broker} registration{}",
                    problems.len(),
                    if problems.len() == 1 { "" } else { "s" }
                )?;
                for p in problems {
                    write!(f, "\n  - {p}")?;
                }
                Ok(())
            }
            StartError::Misuse(text) => write!(f, "the service cannot start: {text}"),
            StartError::Startup(e) => write!(f, "on_startup failed: {e}"),
            StartError::Connect { broker, source } => {
                write!(f, "the {broker} broker could not start: {source}")
            }
        }
    }
}
