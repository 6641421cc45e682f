//! Handlers as mounted on a broker, and as checked before anything connects.
//!
//! [`Registration`] is what `include` recorded; [`check`] turns every registration of a broker
//! into a [`CheckedSubscription`] with its names resolved, or reports every problem at once;
//! [`describe`] tells what the checked ones do, for the service's description.

mod check;
mod checked;
mod declared;
mod describe;

pub(crate) use check::{check, BrokerSettings};
pub(crate) use checked::{Checked, CheckedSubscription};
pub use declared::Mounted;
pub(crate) use declared::Registration;
pub(crate) use describe::describe;
