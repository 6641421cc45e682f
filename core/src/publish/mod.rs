//! Publishing: the port a broker offers, and how each publish's answer reaches whoever waits
//! for it.
//!
//! A producer batches and keeps many messages in flight, so a publish is handed over at once
//! and answered later. [`Publish`] is the port: [`Publish::send`] hands a message over with a
//! [`Receipt`] naming who to tell the answer; [`Publish::publish`] also waits for it. Who
//! waits:
//!
//! | who | told through | for |
//! |---|---|---|
//! | a caller that needs the message id | [`Reply`] | `Publisher::publish_for_id(..).await`, the app's `publish(..).await` |
//! | the delivery whose handler published it | the driver's [`Outbox`](crate::broker::Outbox), counted by a [`Tracker`](crate::broker::Tracker) | acknowledging the delivery only once its publishes are confirmed |
//! | the messages of a batch handler's call | the call's tally, then the outbox | acknowledging each only once all the call's publishes are confirmed |
//! | a file or a tool publishing many messages | [`Pipeline`] | the first failure, and the end |

mod batch_tally;
mod error;
pub(crate) mod outbox;
mod pipeline;
mod port;
mod publishing;
mod receipt;
mod reply;

pub use crate::batching::Batching;
pub use error::PublishError;
pub use pipeline::Pipeline;
pub use port::Publish;
pub use publishing::Publishing;
pub use receipt::{Confirm, Receipt, Tell};
pub use reply::Reply;
