//! One call of a batch handler, as `#[subscriber(..)]` writes it: decode, call, spread the
//! outcome over the messages.

use alloc::vec::Vec;

use super::{Batch, IntoBatchOutcome, Spare};
use crate::handler::{Incoming, Payload, Rejection};
use crate::outcome::Answer;

/// The payloads of a batch that decoded, with where each message went: what a batch handler
/// is called with, and what its outcome is spread back over. Used by `#[subscriber(..)]`. Its
/// lists are the [`Spare`] ones, given back by [`Decoded::finish`].
#[derive(Debug)]
pub struct Decoded<T> {
    values: Vec<T>,
    /// For each value, its message's place in the batch.
    index: Vec<usize>,
    /// The messages that did not decode, by place, in order (most batches have none).
    rejected: Vec<(usize, Rejection)>,
    /// How many messages the batch has.
    len: usize,
}

impl<T: Payload + Send + 'static> Decoded<T> {
    /// Decode every message of `messages` for handler `handler`, into the lists of `spare`;
    /// one that does not decode is left out of the values, rejected on its own. Each value
    /// replaces one the last batch left in the list, dropped right after it (see [`Spare`]
    /// for why); those left over are dropped at the end.
    pub fn decode(messages: &[Incoming<'_>], handler: &'static str, spare: &mut Spare) -> Self {
        let mut values = spare.values(messages.len());
        let mut index = spare.index(messages.len());
        let mut rejected = Vec::new();
        let mut decoded = 0;
        for (at, message) in messages.iter().enumerate() {
            match T::decode(message.payload, handler) {
                Ok(value) => {
                    match values.get_mut(decoded) {
                        Some(old) => *old = value,
                        None => values.push(value),
                    }
                    decoded += 1;
                    index.push(at);
                }
                Err(rejection) => rejected.push((at, rejection)),
            }
        }
        values.truncate(decoded);
        Decoded {
            values,
            index,
            rejected,
            len: messages.len(),
        }
    }

    /// Every message's answer: the handler's `outcome`, spread over the messages that
    /// decoded, and the rejection of each that did not. (With nothing decoded, the handler
    /// is not called, and any `outcome` finishes.) The values are dropped here, and the lists
    /// go back to `spare`.
    pub fn finish(
        self,
        outcome: impl IntoBatchOutcome,
        spare: &mut Spare,
    ) -> Vec<Result<Answer, Rejection>> {
        let Decoded {
            values,
            index,
            rejected,
            len,
        } = self;
        spare.keep_values(values);
        let outcome = outcome.into_batch_outcome();
        let mut answers = spare.answers(len);
        match (rejected.is_empty(), outcome.uniform()) {
            // Every message decoded and has the one outcome: no lookup per message.
            (true, Some(all)) => answers.extend((0..len).map(|_| Ok(Answer::new(all)))),
            _ => {
                let mut given = outcome.spread(index.len());
                let mut rejected = rejected.into_iter().peekable();
                answers.extend((0..len).map(
                    |at| match rejected.next_if(|(place, _)| *place == at) {
                        Some((_, rejection)) => Err(rejection),
                        None => Ok(given.next().expect("one outcome per message that decoded")),
                    },
                ));
            }
        }
        spare.keep_index(index);
        answers
    }
}

impl<T> Decoded<T> {
    /// The payloads that decoded, in order.
    pub fn values(&self) -> &[T] {
        &self.values
    }

    /// Their messages, aligned with [`Decoded::values`].
    pub fn batch<'a>(&'a self, messages: &'a [Incoming<'a>]) -> Batch<'a> {
        Batch::new(messages, &self.index)
    }

    /// Whether nothing decoded: the handler is not called.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::BatchOutcome;
    use crate::HandlerOutcome;

    #[test]
    fn a_batch_replaces_the_last_ones_values_and_drops_those_left_over() {
        let messages = |payloads: &'static [&'static [u8]]| -> Vec<Incoming<'static>> {
            payloads
                .iter()
                .map(|p| Incoming::new(p, &[], "t"))
                .collect()
        };
        let mut spare = Spare::default();
        let first = messages(&[b"1", b"2", b"3"]);
        let decoded = Decoded::<u32>::decode(&first, "sum", &mut spare);
        let _ = decoded.finish(BatchOutcome::ack(), &mut spare);
        let second = messages(&[b"{", b"5"]);
        let decoded = Decoded::<u32>::decode(&second, "sum", &mut spare);
        assert_eq!(decoded.values(), &[5], "only this batch's values");
        assert_eq!(decoded.batch(&second).len(), 1);
        let answers = decoded.finish(BatchOutcome::ack(), &mut spare);
        assert!(matches!(&answers[0], Err(Rejection::Decode { .. })));
        assert!(matches!(&answers[1], Ok(a) if a.outcome == HandlerOutcome::Ack));
        assert_eq!(answers.len(), 2);
    }

    #[test]
    fn a_message_that_does_not_decode_is_rejected_alone_and_the_rest_are_indexed() {
        let payloads: [&[u8]; 3] = [b"1", b"{", b"3"];
        let messages: Vec<Incoming<'_>> = payloads
            .iter()
            .map(|p| Incoming::new(p, &[], "t").with_key(Some("k")))
            .collect();
        let mut spare = Spare::default();
        let decoded = Decoded::<u32>::decode(&messages, "sum", &mut spare);
        assert_eq!(decoded.values(), &[1, 3]);
        assert_eq!(decoded.batch(&messages).len(), 2);
        assert_eq!(decoded.batch(&messages).key(1), Some("k"));
        let answers = decoded.finish(
            BatchOutcome::ack().except(1, HandlerOutcome::retry()),
            &mut spare,
        );
        assert!(matches!(&answers[0], Ok(a) if a.outcome == HandlerOutcome::Ack));
        assert!(matches!(&answers[1], Err(Rejection::Decode { .. })));
        assert!(matches!(&answers[2], Ok(a) if a.outcome == HandlerOutcome::Retry));
    }
}
