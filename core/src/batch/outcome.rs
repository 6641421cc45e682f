//! What a batch handler returns.

use alloc::boxed::Box;
use alloc::format;
use alloc::sync::Arc;
use alloc::vec::Vec;

use crate::outcome::{Answer, IntoOutcome};
use crate::HandlerOutcome;

/// A batch handler's answer: one outcome for every message of the batch, with exceptions by
/// index, or one outcome per message. Each message is then settled by its own outcome, as a
/// single handler's would be (its attempts, its dead-letter topic, its key's order).
///
/// The index is the message's place in the slice the handler was given (messages that did not
/// decode are not in it).
///
/// ```
/// use std::time::Duration;
/// use ruststream::batch::BatchOutcome;
/// use ruststream::HandlerOutcome;
///
/// // Everything stored but the fourth, which waits a minute.
/// let outcome = BatchOutcome::all(HandlerOutcome::ack())
///     .except(3, HandlerOutcome::retry_after(Duration::from_secs(60)));
/// let answers = outcome.into_answers(5);
/// assert_eq!(answers[3].outcome, HandlerOutcome::retry_after(Duration::from_secs(60)));
/// assert_eq!(answers[4].outcome, HandlerOutcome::ack());
///
/// // One per message, in order.
/// let outcome = BatchOutcome::each([HandlerOutcome::ack(), HandlerOutcome::drop()]);
/// assert_eq!(outcome.into_answers(2)[1].outcome, HandlerOutcome::drop());
/// ```
#[derive(Debug)]
pub struct BatchOutcome {
    /// The outcome of every message not listed.
    all: HandlerOutcome,
    /// The error behind `all`, shared by every message it applies to.
    error: Option<Arc<dyn core::error::Error + Send + Sync>>,
    /// Exceptions by index, in the order given (a later one for an index wins).
    except: Vec<(usize, Answer)>,
    /// Built with [`BatchOutcome::each`]: how many outcomes were given.
    listed: Option<usize>,
}

impl From<HandlerOutcome> for BatchOutcome {
    fn from(outcome: HandlerOutcome) -> Self {
        BatchOutcome::all(outcome)
    }
}

impl BatchOutcome {
    /// `outcome` for every message.
    pub fn all(outcome: HandlerOutcome) -> Self {
        BatchOutcome {
            all: outcome,
            error: None,
            except: Vec::new(),
            listed: None,
        }
    }

    /// Every message acknowledged.
    pub fn ack() -> Self {
        BatchOutcome::all(HandlerOutcome::ack())
    }

    /// One outcome per message, in the order of the slice. A message past the end of the
    /// list gets [`HandlerOutcome::retry`], with an error that says how many were given: it
    /// comes back rather than being settled by a guess.
    pub fn each<O: IntoOutcome>(outcomes: impl IntoIterator<Item = O>) -> Self {
        let except: Vec<(usize, Answer)> = outcomes
            .into_iter()
            .map(IntoOutcome::into_outcome)
            .enumerate()
            .collect();
        BatchOutcome {
            all: HandlerOutcome::retry(),
            error: None,
            listed: Some(except.len()),
            except,
        }
    }

    /// The same, with message `index` settled as `outcome` says instead.
    pub fn except(mut self, index: usize, outcome: impl IntoOutcome) -> Self {
        self.except.push((index, outcome.into_outcome()));
        self
    }

    /// The outcome of each of `len` messages, in order. Exceptions past `len` are ignored.
    pub fn into_answers(self, len: usize) -> Vec<Answer> {
        self.spread(len).collect()
    }

    /// The one outcome of every message, where there is neither an exception nor an error
    /// (the common answer: `HandlerOutcome::ack()` for the batch).
    pub(crate) fn uniform(&self) -> Option<HandlerOutcome> {
        (self.except.is_empty() && self.error.is_none() && self.listed.is_none())
            .then_some(self.all)
    }

    /// The outcome of each of `len` messages, in order, one at a time (no list is built
    /// where there is no exception).
    pub fn spread(self, len: usize) -> impl Iterator<Item = Answer> {
        let BatchOutcome {
            all,
            error,
            mut except,
            listed,
        } = self;
        // By index, the later of two for one index last (a stable sort keeps their order).
        except.sort_by_key(|(index, _)| *index);
        let mut except = except.into_iter().peekable();
        let error = match (error, listed) {
            (Some(error), _) => Some(error),
            (None, Some(given)) if given < len => Some(Arc::from(Box::<
                dyn core::error::Error + Send + Sync,
            >::from(format!(
                "the batch handler returned {given} outcomes for a batch of {len} messages; \
                 the ones without an outcome are retried"
            )))),
            (None, _) => None,
        };
        (0..len).map(move |at| {
            let mut found = None;
            while let Some((index, _)) = except.peek() {
                if *index > at {
                    break;
                }
                let (index, answer) = except.next().expect("peeked");
                if index == at {
                    found = Some(answer);
                }
            }
            found.unwrap_or_else(|| Answer {
                error: error
                    .clone()
                    .map(|e| Box::new(Shared(e)) as Box<dyn core::error::Error + Send + Sync>),
                ..Answer::new(all)
            })
        })
    }
}

/// An error shared by every message of a batch it applies to.
#[derive(Debug)]
struct Shared(Arc<dyn core::error::Error + Send + Sync>);

impl core::fmt::Display for Shared {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Display::fmt(&self.0, f)
    }
}

impl core::error::Error for Shared {}

/// What a batch handler may return: a [`BatchOutcome`], a [`HandlerOutcome`] for the whole
/// batch, a `Vec` of outcomes (one per message), or a `Result` of one of these and an error
/// type that is `IntoOutcome`, so that `?` works: an error settles every message as it says
/// (a boxed error: `retry()`), the error logged with each.
#[diagnostic::on_unimplemented(
    message = "a batch handler cannot return `{Self}`",
    label = "the batch handler's return type",
    note = "return a `BatchOutcome` (one outcome for all with `.except(index, ..)`, or \
            `BatchOutcome::each(..)`), a `HandlerOutcome` for the whole batch, a \
            `Vec<HandlerOutcome>`, or a `Result` of one of these and an error that implements \
            `IntoOutcome`"
)]
pub trait IntoBatchOutcome {
    /// The batch's outcome.
    fn into_batch_outcome(self) -> BatchOutcome;
}

impl IntoBatchOutcome for BatchOutcome {
    fn into_batch_outcome(self) -> BatchOutcome {
        self
    }
}

impl IntoBatchOutcome for HandlerOutcome {
    fn into_batch_outcome(self) -> BatchOutcome {
        BatchOutcome::all(self)
    }
}

impl<O: IntoOutcome> IntoBatchOutcome for Vec<O> {
    fn into_batch_outcome(self) -> BatchOutcome {
        BatchOutcome::each(self)
    }
}

impl<T: IntoBatchOutcome, E: IntoOutcome> IntoBatchOutcome for Result<T, E> {
    fn into_batch_outcome(self) -> BatchOutcome {
        match self {
            Ok(value) => value.into_batch_outcome(),
            Err(error) => {
                let Answer { outcome, error } = error.into_outcome();
                BatchOutcome {
                    error: error.map(Arc::from),
                    ..BatchOutcome::all(outcome)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use alloc::vec;

    #[test]
    fn exceptions_override_the_outcome_for_all_and_a_later_one_wins() {
        let answers = BatchOutcome::ack()
            .except(1, HandlerOutcome::drop())
            .except(1, HandlerOutcome::retry())
            .except(9, HandlerOutcome::drop())
            .into_answers(3);
        let outcomes: Vec<_> = answers.iter().map(|a| a.outcome).collect();
        assert_eq!(
            outcomes,
            vec![
                HandlerOutcome::Ack,
                HandlerOutcome::Retry,
                HandlerOutcome::Ack
            ]
        );
    }

    #[test]
    fn a_short_list_retries_the_rest_and_says_why() {
        let answers = BatchOutcome::each([HandlerOutcome::ack()]).into_answers(3);
        assert_eq!(answers[0].outcome, HandlerOutcome::Ack);
        assert!(answers[0].error.is_none());
        assert_eq!(answers[2].outcome, HandlerOutcome::Retry);
        assert_eq!(
            answers[2].error.as_ref().unwrap().to_string(),
            "the batch handler returned 1 outcomes for a batch of 3 messages; the ones \
             without an outcome are retried"
        );
    }

    #[test]
    fn an_error_settles_every_message_and_each_keeps_it() {
        let failed: Result<BatchOutcome, Box<dyn core::error::Error + Send + Sync>> =
            Err("the database is locked".into());
        let answers = failed.into_batch_outcome().into_answers(2);
        for answer in &answers {
            assert_eq!(answer.outcome, HandlerOutcome::Retry);
            assert_eq!(
                answer.error.as_ref().unwrap().to_string(),
                "the database is locked"
            );
        }
        let vec = vec![HandlerOutcome::drop(), HandlerOutcome::ack()].into_batch_outcome();
        assert_eq!(vec.into_answers(2)[0].outcome, HandlerOutcome::Drop);
    }
}
