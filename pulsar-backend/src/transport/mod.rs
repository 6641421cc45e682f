//! What both transports (the in-process Pulsar and pulsar-rs on a server) provide, and the one
//! running-broker type built over either.
//!
//! A transport subscribes the checked subscriptions and publishes; [`RunningPulsar`] starts a
//! driver per subscription on its consumers and answers the app's calls through it.

mod compressing;
mod launch;
mod port;
mod running;

pub(crate) use launch::{start_on, LaunchSettings};
pub(crate) use port::Transport;
pub(crate) use running::RunningPulsar;
