//! The flags of `<service> asyncapi`.

use std::path::PathBuf;

/// The flags of `asyncapi`.
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
#[non_exhaustive]
pub struct AsyncapiArgs {
    /// Write YAML instead of JSON.
    #[arg(long)]
    pub yaml: bool,
    /// Write the document to FILE instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Compare the service with the committed document FILE (JSON or YAML) and exit with 1,
    /// naming each change that breaks a producer or a consumer (a channel or operation
    /// removed, a payload field removed or made required, a subscription type changed).
    #[arg(long, value_name = "FILE")]
    pub check: Option<PathBuf>,
}
