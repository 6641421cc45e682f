//! Who is told a publish's result, once the broker answers.
//!
//! A publish is handed to a producer at once and answered later (a producer batches, and many
//! messages are in flight at a time). Whoever must know the answer gives the port a
//! [`Receipt`]: the caller awaiting the message id ([`Reply`](super::Reply)), the delivery
//! whose acknowledgement waits for its publishes ([`Outbox`](super::Outbox)), a file being
//! published line by line ([`Pipeline`](super::Pipeline)).

use alloc::sync::Arc;

use super::PublishError;
use crate::MessageId;

/// Told the result of publishes, each named by a number the teller chose: what a
/// [`Confirm`] reports to.
pub trait Tell: Send + Sync {
    /// The publish named `token` ended: stored, with its id, or not.
    fn tell(&self, token: u64, result: Result<MessageId, PublishError>);
}

/// One party to tell one publish's result, exactly once.
///
/// A port tells it when the broker answers ([`Confirm::tell`]). One dropped untold (the port
/// could not send the message, the app stopped, the publish was dropped midway) tells
/// [`PublishError::Abandoned`] as it goes: whoever waits is never left waiting.
pub struct Confirm {
    to: Option<Arc<dyn Tell>>,
    token: u64,
}

impl Confirm {
    /// Tell `to` the result of the publish it knows as `token`.
    pub fn new(to: Arc<dyn Tell>, token: u64) -> Self {
        Confirm {
            to: Some(to),
            token,
        }
    }

    /// Tell the result.
    pub fn tell(mut self, result: Result<MessageId, PublishError>) {
        if let Some(to) = self.to.take() {
            to.tell(self.token, result);
        }
    }
}

impl Drop for Confirm {
    fn drop(&mut self) {
        if let Some(to) = self.to.take() {
            to.tell(self.token, Err(PublishError::Abandoned));
        }
    }
}

impl core::fmt::Debug for Confirm {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Confirm")
            .field("token", &self.token)
            .finish_non_exhaustive()
    }
}

/// Everyone to tell one publish's result: nobody, or up to two parties (a delivery whose
/// acknowledgement waits for it, and a caller awaiting the message id).
#[derive(Debug, Default)]
pub struct Receipt {
    first: Option<Confirm>,
    second: Option<Confirm>,
}

impl Receipt {
    /// Nobody waits: the message is sent and its answer dropped.
    #[inline]
    pub fn none() -> Self {
        Receipt::default()
    }

    /// `confirm` is told.
    pub fn to(confirm: Confirm) -> Self {
        Receipt {
            first: Some(confirm),
            second: None,
        }
    }

    /// `confirm` is told too, if there is one.
    pub fn and(mut self, confirm: Option<Confirm>) -> Self {
        match (&self.first, confirm) {
            (_, None) => {}
            (None, confirm) => self.first = confirm,
            (Some(_), confirm) => self.second = confirm,
        }
        self
    }

    /// Whether nobody waits for the answer.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.first.is_none() && self.second.is_none()
    }

    /// Tell everyone `result`, a copy each, where the caller keeps it: nothing is copied
    /// where nobody waits.
    #[inline]
    pub fn tell_copy(self, result: &Result<MessageId, PublishError>) {
        let Receipt { first, second } = self;
        if let Some(first) = first {
            first.tell(result.clone());
        }
        if let Some(second) = second {
            second.tell(result.clone());
        }
    }

    /// Tell everyone the result.
    #[inline]
    pub fn tell(self, result: Result<MessageId, PublishError>) {
        let Receipt { first, second } = self;
        match (first, second) {
            (Some(first), Some(second)) => {
                first.tell(result.clone());
                second.tell(result);
            }
            (Some(only), None) | (None, Some(only)) => only.tell(result),
            (None, None) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;
    use spin::Mutex;

    #[derive(Default)]
    struct Heard(Mutex<Vec<(u64, bool)>>);

    impl Tell for Heard {
        fn tell(&self, token: u64, result: Result<MessageId, PublishError>) {
            self.0.lock().push((token, result.is_ok()));
        }
    }

    #[test]
    fn each_party_is_told_once_and_a_dropped_confirm_tells_a_failure() {
        let heard = Arc::new(Heard::default());
        let receipt =
            Receipt::to(Confirm::new(heard.clone(), 1)).and(Some(Confirm::new(heard.clone(), 2)));
        receipt.tell(Ok(MessageId::new(&[1, 2, -1])));
        drop(Confirm::new(heard.clone(), 3));
        Receipt::none().tell(Ok(MessageId::new(&[0])));
        assert_eq!(*heard.0.lock(), [(1, true), (2, true), (3, false)]);
    }
}
