//! Whether a started app can do its work: what a readiness probe asks.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

/// The answer of a health check.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Health {
    /// Every part can do its work now (every consumer connected).
    pub ready: bool,
    /// What was checked, one line per part, naming what is not ready.
    pub detail: String,
}

impl Health {
    /// Ready, with `detail`.
    pub fn ready(detail: impl Into<String>) -> Self {
        Health {
            ready: true,
            detail: detail.into(),
        }
    }

    /// Not ready, saying why.
    pub fn not_ready(why: impl Into<String>) -> Self {
        Health {
            ready: false,
            detail: why.into(),
        }
    }
}

/// A health check that can be kept and asked from anywhere (an HTTP handler on its own
/// thread) while the app runs. Asking never blocks: it reads what the broker last observed.
#[derive(Clone)]
pub struct HealthCheck(Arc<dyn Fn() -> Health + Send + Sync>);

impl HealthCheck {
    /// A check that answers `check()`.
    pub fn new(check: impl Fn() -> Health + Send + Sync + 'static) -> Self {
        HealthCheck(Arc::new(check))
    }

    /// Ready when every one of `checks` is; the details one per line.
    pub fn all(checks: Vec<HealthCheck>) -> Self {
        HealthCheck::new(move || {
            let answers: Vec<Health> = checks.iter().map(HealthCheck::check).collect();
            Health {
                ready: answers.iter().all(|h| h.ready),
                detail: answers
                    .iter()
                    .map(|h| h.detail.as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
            }
        })
    }

    /// Ask.
    pub fn check(&self) -> Health {
        (self.0)()
    }
}

impl core::fmt::Debug for HealthCheck {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("HealthCheck").field(&self.check()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_is_ready_only_when_every_part_is() {
        let up = HealthCheck::new(|| Health::ready("a: connected"));
        let down = HealthCheck::new(|| Health::not_ready("b: no answer from the broker"));
        let both = HealthCheck::all(alloc::vec![up.clone(), down]).check();
        assert!(!both.ready);
        assert_eq!(both.detail, "a: connected\nb: no answer from the broker");
        assert!(HealthCheck::all(alloc::vec![up]).check().ready);
    }
}
