//! A batch handler's publishes: the batch made them, so every message its handler was called
//! for waits for all of them.
//!
//! A single handler's publishes are answered to its delivery one by one (the [`Outbox`] names
//! the delivery's token). A batch handler's publishes belong to no one message of the batch,
//! so they are tallied here instead; once the handler ended and every one of them was
//! answered, each message the handler was called for is told one answer: confirmed if all
//! were, the first failure otherwise. Each such message's end then counts one publish, and its
//! acknowledgement waits for that one answer, as a single handler's waits for its own. One
//! answer per message, not one per publish and message: a batch of a hundred that publishes a
//! hundred tells the machine a hundred answers, not ten thousand.

use alloc::sync::Arc;
use alloc::vec::Vec;

use spin::Mutex;

use super::outbox::{Outbox, Token};
use super::{PublishError, Tell};
use crate::MessageId;

/// The publishes of one batch handler's call, and the messages that wait for them (made by
/// [`HandlerPort::counted_batch`](super::HandlerPort::counted_batch) once the handler takes a
/// `Publisher`).
#[derive(Debug)]
pub(super) struct BatchTally {
    outbox: Arc<Outbox>,
    /// The tokens of the messages the handler was called for.
    waiting: Vec<Token>,
    state: Mutex<Tally>,
}

#[derive(Debug, Default)]
struct Tally {
    /// How many publishes the handler made, once it ended.
    issued: Option<u32>,
    answered: u32,
    /// The first publish that failed, if one did.
    failed: Option<PublishError>,
}

impl BatchTally {
    pub(super) fn new(outbox: Arc<Outbox>, waiting: Vec<Token>) -> Self {
        BatchTally {
            outbox,
            waiting,
            state: Mutex::new(Tally::default()),
        }
    }

    /// The handler ended, having made `issued` publishes: how many each waiting message's end
    /// counts (one, or none if the handler published nothing).
    pub(super) fn seal(&self, issued: u32) -> u32 {
        let done = {
            let mut state = self.state.lock();
            state.issued = Some(issued);
            (issued > 0 && state.answered >= issued).then(|| state.failed.take())
        };
        if let Some(failed) = done {
            self.release(failed);
        }
        u32::from(issued > 0)
    }

    /// Tell every waiting message how its batch's publishes went.
    fn release(&self, failed: Option<PublishError>) {
        for token in &self.waiting {
            let result = match &failed {
                None => Ok(MessageId::new(&[])),
                Some(error) => Err(error.clone()),
            };
            self.outbox.tell(u64::from(token.0), result);
        }
    }
}

impl Tell for BatchTally {
    fn tell(&self, _token: u64, result: Result<MessageId, PublishError>) {
        let done = {
            let mut state = self.state.lock();
            state.answered += 1;
            if let (Err(error), None) = (result, &state.failed) {
                state.failed = Some(error);
            }
            (state.issued == Some(state.answered)).then(|| state.failed.take())
        };
        if let Some(failed) = done {
            self.release(failed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::broker::Origin;
    use crate::publish::Confirm;
    use alloc::vec;

    fn answers(outbox: &Outbox) -> Vec<(Token, Origin, bool)> {
        let mut answers = Vec::new();
        outbox.take(&mut answers);
        answers
            .iter()
            .map(|a| (a.token, a.origin, a.result.is_ok()))
            .collect()
    }

    #[test]
    fn each_waiting_message_is_told_once_after_the_end_and_the_last_answer() {
        let outbox = Outbox::new();
        let tally = Arc::new(BatchTally::new(outbox.clone(), vec![Token(4), Token(6)]));
        let first = Confirm::new(tally.clone(), 0);
        let second = Confirm::new(tally.clone(), 0);
        first.tell(Ok(MessageId::new(&[1, 0, -1])));
        assert_eq!(tally.seal(2), 1, "each message counts one publish");
        assert!(!outbox.has_answers(), "one publish is not answered yet");
        second.tell(Ok(MessageId::new(&[1, 1, -1])));
        assert_eq!(
            answers(&outbox),
            [
                (Token(4), Origin::Handler, true),
                (Token(6), Origin::Handler, true)
            ]
        );
    }

    #[test]
    fn a_failure_is_told_to_every_message_even_when_all_answered_before_the_end() {
        let outbox = Outbox::new();
        let tally = Arc::new(BatchTally::new(outbox.clone(), vec![Token(1), Token(2)]));
        drop(Confirm::new(tally.clone(), 0));
        Confirm::new(tally.clone(), 0).tell(Ok(MessageId::new(&[1, 0, -1])));
        assert!(!outbox.has_answers(), "the handler has not ended");
        assert_eq!(tally.seal(2), 1);
        assert_eq!(
            answers(&outbox),
            [
                (Token(1), Origin::Handler, false),
                (Token(2), Origin::Handler, false)
            ]
        );
    }

    #[test]
    fn a_handler_that_published_nothing_leaves_nothing_to_wait_for() {
        let outbox = Outbox::new();
        let tally = BatchTally::new(outbox.clone(), vec![Token(1)]);
        assert_eq!(tally.seal(0), 0);
        assert!(!outbox.has_answers());
    }
}
