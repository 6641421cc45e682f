//! Handler parameters that read the delivered message itself: its properties, key, id,
//! redelivery count, times and topic. Each is taken after the payload, in any order, as
//! `State<T>` and `Publisher` are.
//!
//! ```
//! use ruststream::params::{MessageId, Properties, RedeliveryCount};
//! use ruststream::{subscriber, HandlerOutcome};
//!
//! #[subscriber("refunds")]
//! async fn process(
//!     refund: &u64,
//!     id: MessageId,
//!     properties: Properties,
//!     RedeliveryCount(count): RedeliveryCount,
//! ) -> HandlerOutcome {
//!     let tenant = properties.get("tenant").unwrap_or("none");
//!     let _ = (refund, id.to_string(), tenant, count);
//!     HandlerOutcome::ack()
//! }
//! ```

mod id;
mod key;
mod properties;
mod redelivery;
mod time;
mod topic;

pub use id::MessageId;
pub use key::MessageKey;
pub use properties::Properties;
pub use redelivery::RedeliveryCount;
pub use time::{EventTime, PublishTime};
pub use topic::Topic;
