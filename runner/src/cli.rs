//! The command line.

use std::fmt;

/// What the command line asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Cli {
    /// `--embedded`.
    pub embedded: bool,
    /// `--publish TOPIC=FILE`, in order.
    pub publish: Vec<(String, String)>,
    /// `--help`.
    pub help: bool,
}

/// The usage text.
pub(crate) const USAGE: &str = "USAGE: <service> [run] [--embedded] [--publish TOPIC=FILE]...

  run                  start the service (the default command)
  --embedded           run on the brokers' in-process stand-ins, on a virtual clock that skips
                       ahead whenever the service is idle; ends once nothing is left to do
  --publish TOPIC=FILE publish each line of FILE (one JSON payload per line) to TOPIC after
                       startup
  --help               print this text";

impl Cli {
    /// Parse the arguments after the program name.
    pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Cli, CliError> {
        let mut cli = Cli::default();
        let mut args = args.into_iter().peekable();
        if args.peek().map(String::as_str) == Some("run") {
            args.next();
        }
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--embedded" => cli.embedded = true,
                "--help" | "-h" => cli.help = true,
                "--publish" => {
                    let value = args.next().ok_or_else(|| {
                        CliError("`--publish` needs a value: `--publish TOPIC=FILE`".into())
                    })?;
                    cli.publish.push(split_publish(&value)?);
                }
                other => {
                    if let Some(value) = other.strip_prefix("--publish=") {
                        cli.publish.push(split_publish(value)?);
                    } else {
                        return Err(CliError(format!(
                            "unknown argument `{other}`; the only command is `run`"
                        )));
                    }
                }
            }
        }
        Ok(cli)
    }
}

fn split_publish(value: &str) -> Result<(String, String), CliError> {
    match value.split_once('=') {
        Some((topic, file)) if !topic.is_empty() && !file.is_empty() => {
            Ok((topic.to_owned(), file.to_owned()))
        }
        _ => Err(CliError(format!(
            "`--publish {value}` must be TOPIC=FILE, e.g. `--publish refunds=samples.jsonl`"
        ))),
    }
}

/// A command line that does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError(String);

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CliError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, CliError> {
        Cli::parse(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn run_is_the_default_command() {
        assert_eq!(parse(&[]).unwrap(), Cli::default());
        assert_eq!(parse(&["run"]).unwrap(), Cli::default());
    }

    #[test]
    fn flags() {
        let cli = parse(&[
            "run",
            "--embedded",
            "--publish",
            "refunds=a.jsonl",
            "--publish=x=y",
        ])
        .unwrap();
        assert!(cli.embedded);
        assert_eq!(
            cli.publish,
            [
                ("refunds".into(), "a.jsonl".into()),
                ("x".into(), "y".into())
            ]
        );
    }

    #[test]
    fn mistakes_say_what_to_write() {
        assert_eq!(
            parse(&["serve"]).unwrap_err().to_string(),
            "unknown argument `serve`; the only command is `run`"
        );
        assert_eq!(
            parse(&["--publish", "refunds"]).unwrap_err().to_string(),
            "`--publish refunds` must be TOPIC=FILE, e.g. `--publish refunds=samples.jsonl`"
        );
    }
}
