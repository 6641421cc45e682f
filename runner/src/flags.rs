//! A service's own command-line flags, next to the runner's.

use std::any::Any;
use std::sync::OnceLock;

use clap::{ArgMatches, Args, Command, FromArgMatches};

/// The flags the service declared, parsed once from the process's command line.
static PARSED: OnceLock<Box<dyn Any + Send + Sync>> = OnceLock::new();

/// A service's own flags, a `clap::Args` type, added to the runner's command line: written by
/// `#[ruststream::app(args = MyArgs)]`, read back with [`args`].
pub struct ServiceFlags {
    pub(crate) command: Command,
    pub(crate) store: fn(&ArgMatches) -> Result<(), clap::Error>,
}

impl ServiceFlags {
    /// The flags of `T`.
    pub fn of<T: Args + FromArgMatches + Send + Sync + 'static>() -> Self {
        ServiceFlags {
            command: T::augment_args(Command::new("service")),
            store: |matches| {
                let parsed = T::from_arg_matches(matches)?;
                // A second parse in one process (a test calling `main` twice) keeps the first.
                let _ = PARSED.set(Box::new(parsed));
                Ok(())
            },
        }
    }
}

impl std::fmt::Debug for ServiceFlags {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceFlags")
            .field("command", &self.command.get_name())
            .finish()
    }
}

/// The service's own flags, as given on the command line: call it from `on_startup` (the
/// command line is parsed after `app()` has described the app, before it starts).
///
/// # Panics
///
/// If the app's `main` did not declare flags of type `T` (`#[ruststream::app(args = T)]`), or
/// before the command line was parsed.
pub fn args<T: Any + Send + Sync>() -> &'static T {
    let parsed = PARSED.get().unwrap_or_else(|| {
        panic!(
            "ruststream_runner::args::<{}>(): no service flags were parsed; declare them with \
             `#[ruststream::app(args = {0})]` and read them from `on_startup`",
            std::any::type_name::<T>()
        )
    });
    parsed.downcast_ref::<T>().unwrap_or_else(|| {
        panic!(
            "ruststream_runner::args::<{}>(): the app declared flags of another type",
            std::any::type_name::<T>()
        )
    })
}
