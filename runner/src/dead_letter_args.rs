//! `<service> dead-letter replay`: its flags, read into the options of a replay.

use ruststream::replay::{PropertyFilter, Rate, ReplayOptions, DEFAULT_REPLAY_SUBSCRIPTION};

/// A `dead-letter` command.
#[derive(Debug, Clone, PartialEq, Eq, clap::Subcommand)]
#[non_exhaustive]
pub enum DeadLetterCommand {
    /// Move dead-lettered messages back to the topic each came from (its REAL_TOPIC property)
    /// or to --to, keeping payload, key and properties (less the dead-letter ones, plus
    /// REPLAYED_FROM). Each is acknowledged on the dead-letter topic only once the broker
    /// confirmed its copy. Ctrl-C stops after the message in flight. With --embedded it runs
    /// on the in-process Pulsar, which starts empty.
    Replay(ReplayArgs),
}

/// The flags of `dead-letter replay`.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
#[non_exhaustive]
pub struct ReplayArgs {
    /// The dead-letter topic to read, short (in the broker's namespace) or fully qualified.
    #[arg(long, value_name = "TOPIC")]
    pub from: String,
    /// Move every message to TOPIC instead of the topic it came from.
    #[arg(long, value_name = "TOPIC")]
    pub to: Option<String>,
    /// Move only messages whose property PROPERTY is VALUE; repeat for several (all must
    /// match). The others stay.
    #[arg(long, value_name = "PROPERTY=VALUE")]
    pub filter: Vec<PropertyFilter>,
    /// Move at most N messages.
    #[arg(long, value_name = "N")]
    pub limit: Option<u64>,
    /// Move at most this fast: N/s, N/min, or N (a second).
    #[arg(long, value_name = "N/s")]
    pub rate: Option<Rate>,
    /// Print what would move; publish and acknowledge nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// The subscription the dead-letter topic is read with; a replay stopped or killed
    /// continues where it left off when run again with the same one.
    #[arg(long, value_name = "NAME", default_value = DEFAULT_REPLAY_SUBSCRIPTION)]
    pub subscription: String,
    /// Acknowledge each message of a batched entry on its own as it is moved. Only for a
    /// broker with acknowledgmentAtBatchIndexLevelEnabled=true: another broker would take it
    /// for the whole entry and drop the entry's other messages.
    #[arg(long)]
    pub batch_index_acks: bool,
}

impl ReplayArgs {
    /// The replay these flags ask for.
    pub fn options(&self) -> ReplayOptions {
        let mut options = ReplayOptions::new(self.from.clone())
            .dry_run(self.dry_run)
            .subscription(self.subscription.clone());
        if let Some(to) = &self.to {
            options = options.to(to.clone());
        }
        for filter in &self.filter {
            options = options.filter(filter.clone());
        }
        if let Some(limit) = self.limit {
            options = options.limit(limit);
        }
        if let Some(rate) = self.rate {
            options = options.rate(rate);
        }
        if self.batch_index_acks {
            options = options.batch_index_acks(true);
        }
        options
    }
}
