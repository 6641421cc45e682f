//! `MessageKey`: the message's key.

use alloc::string::String;

use crate::handler::Incoming;
use crate::handler::{Extract, Rejection};

/// The partitioning / ordering key of the delivered message, if it has one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MessageKey(pub Option<String>);

impl<S> Extract<S> for MessageKey {
    fn extract(message: &Incoming<'_>, _: &S, _: &'static str) -> Result<Self, Rejection> {
        Ok(MessageKey(message.key.map(String::from)))
    }
}

/// Handlers that take the key say so in the service's description (`<service> asyncapi`).
impl crate::describe::probe::ReadsPart for &&crate::describe::probe::Probe<MessageKey> {
    fn part(&self) -> Option<crate::describe::probe::Part> {
        Some(crate::describe::probe::Part::Key)
    }
}

#[cfg(test)]
// The extra borrow is how the probe works: clippy sees only the fallback's receiver.
#[allow(clippy::needless_borrow)]
mod tests {
    use crate::describe::probe::traits::*;
    use crate::describe::probe::{message, note, Probe};

    #[test]
    fn key_and_properties_parameters_are_noted() {
        let mut info = message("a::Plain", "application/json", None, None);
        note(&mut info, (&&&Probe::<super::MessageKey>::new()).part());
        note(
            &mut info,
            (&&&Probe::<crate::params::MessageId>::new()).part(),
        );
        assert!(info.reads_key);
        assert!(!info.reads_properties);
        note(
            &mut info,
            (&&&Probe::<crate::params::Properties>::new()).part(),
        );
        assert!(info.reads_properties);
    }
}
