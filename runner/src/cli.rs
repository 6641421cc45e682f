//! The command line, on clap: the runner's own options, a flag and an environment variable for
//! each setting the app's brokers declare, `--help` and `--version` from the app's identity,
//! and the service's own flags.

use clap::{Arg, ArgMatches, Command, FromArgMatches};
use ruststream::app::{AppInfo, SettingSpec, Settings};

pub use crate::dead_letter_args::{DeadLetterCommand, ReplayArgs};

/// What the command line asked the runner for.
// The options are global: accepted before or after the command (`refunds --embedded run` or
// `refunds run --embedded`), as are the broker settings and the service's own flags.
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Parser)]
#[non_exhaustive]
pub struct Cli {
    /// The command; none is `run`, which starts the service.
    #[command(subcommand)]
    pub command: Option<RunnerCommand>,
    /// Run on the brokers' in-process stand-ins, on a virtual clock that skips ahead whenever
    /// the service is idle; the process ends once nothing is left to do.
    #[arg(long, global = true)]
    pub embedded: bool,
    /// Publish each line of FILE (one payload per line) to TOPIC after startup, its bytes as
    /// they are but for the ASCII whitespace around them, with no properties; blank lines and
    /// lines starting with `#` are skipped. Repeatable.
    #[arg(long, value_name = "TOPIC=FILE", value_parser = split_publish, global = true)]
    pub publish: Vec<(String, String)>,
    /// With --publish: set the property `source=FILE:LINE` on each message, naming the line
    /// it came from.
    #[arg(long, requires = "publish", global = true)]
    pub publish_source: bool,
    /// Serve /healthz, /readyz and /metrics (Prometheus) on ADDR, e.g. 127.0.0.1:9090.
    #[cfg(feature = "http")]
    #[arg(long, value_name = "ADDR", env = "RUSTSTREAM_HTTP_ADDR", global = true)]
    pub http: Option<String>,
    /// With --http: also serve the service's AsyncAPI document (/asyncapi.json,
    /// /asyncapi.yaml) and a page of it (/asyncapi).
    #[cfg(feature = "http")]
    #[arg(
        long,
        requires = "http",
        env = "RUSTSTREAM_HTTP_ASYNCAPI",
        global = true
    )]
    pub http_asyncapi: bool,
}

/// A command of the runner.
#[derive(Debug, Clone, PartialEq, Eq, clap::Subcommand)]
#[non_exhaustive]
pub enum RunnerCommand {
    /// Start the service (the default).
    Run,
    /// Dead-lettered messages: move them back.
    #[command(subcommand)]
    DeadLetter(DeadLetterCommand),
    /// Print the service's AsyncAPI 3 document, built from its registrations without
    /// connecting, or check it against a committed one (--check FILE).
    Asyncapi(crate::asyncapi::AsyncapiArgs),
}

/// The command line parsed: the runner's options, the settings given, and the matches the
/// service's own flags are read from.
#[derive(Debug)]
pub(crate) struct Parsed {
    pub(crate) cli: Cli,
    pub(crate) settings: Settings,
    pub(crate) matches: ArgMatches,
}

/// The command for an app: its name and version, the runner's options, one flag per setting
/// (each also read from its environment variable), and `service`'s flags if it has any.
pub(crate) fn command(info: &AppInfo, specs: &[SettingSpec], service: Option<Command>) -> Command {
    let mut command = <Cli as clap::CommandFactory>::command()
        .name(info.name().to_owned())
        .version(info.version().to_owned());
    for spec in specs {
        command = command.arg(
            Arg::new(spec.key)
                .long(spec.flag)
                .env(spec.env)
                .value_name("VALUE")
                .help(spec.help)
                .hide_env_values(spec.secret)
                .global(true)
                .help_heading("Broker settings (the app's values are the defaults)"),
        );
    }
    if let Some(service) = service {
        command = command.args(service.get_arguments().map(|a| a.clone().global(true)));
    }
    command
}

/// Parse `args` (the program name first) against [`command`].
pub(crate) fn parse<I, T>(
    command: Command,
    specs: &[SettingSpec],
    args: I,
) -> Result<Parsed, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let matches = command.try_get_matches_from(args)?;
    let cli = Cli::from_arg_matches(&matches)?;
    let mut settings = Settings::new();
    for spec in specs {
        if let Some(value) = matches.get_one::<String>(spec.key) {
            settings.set(spec.key, value.clone());
        }
    }
    Ok(Parsed {
        cli,
        settings,
        matches,
    })
}

fn split_publish(value: &str) -> Result<(String, String), String> {
    match value.split_once('=') {
        Some((topic, file)) if !topic.is_empty() && !file.is_empty() => {
            Ok((topic.to_owned(), file.to_owned()))
        }
        _ => Err(format!(
            "`{value}` must be TOPIC=FILE, e.g. `--publish refunds=samples.jsonl`"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPECS: [SettingSpec; 2] = [
        SettingSpec::new("b.url", "RUSTSTREAM_TEST_CLI_URL", "b-url", "the URL"),
        SettingSpec::new(
            "b.token",
            "RUSTSTREAM_TEST_CLI_TOKEN",
            "b-token",
            "the token",
        )
        .secret(),
    ];

    fn parse_args(args: &[&str]) -> Result<Parsed, clap::Error> {
        let info = AppInfo::new("refunds", "1.2.3");
        parse(
            command(&info, &SPECS, None),
            &SPECS,
            std::iter::once("refunds").chain(args.iter().copied()),
        )
    }

    #[test]
    fn run_is_the_default_command() {
        assert_eq!(parse_args(&[]).unwrap().cli.command, None);
        assert_eq!(
            parse_args(&["run"]).unwrap().cli.command,
            Some(RunnerCommand::Run)
        );
    }

    #[test]
    fn options_and_settings_go_before_or_after_the_command() {
        for args in [
            &["--embedded", "--b-url", "pulsar://x:1", "run"][..],
            &["run", "--embedded", "--b-url", "pulsar://x:1"][..],
        ] {
            let parsed = parse_args(args).unwrap();
            assert!(parsed.cli.embedded, "{args:?}");
            assert_eq!(
                parsed.settings.get("b.url"),
                Some("pulsar://x:1"),
                "{args:?}"
            );
        }
    }

    fn replay_args(args: &[&str]) -> Result<(ReplayArgs, Parsed), clap::Error> {
        let parsed = parse_args(&[&["dead-letter", "replay"][..], args].concat())?;
        match &parsed.cli.command {
            Some(RunnerCommand::DeadLetter(DeadLetterCommand::Replay(replay))) => {
                Ok((replay.clone(), parsed))
            }
            other => panic!("not a replay: {other:?}"),
        }
    }

    #[test]
    fn dead_letter_replay_reads_its_flags_into_options() {
        use ruststream::replay::{PropertyFilter, Rate, DEFAULT_REPLAY_SUBSCRIPTION};

        let (args, parsed) = replay_args(&[
            "--from",
            "refunds-dlq",
            "--to",
            "refunds-again",
            "--filter",
            "DEAD_LETTER_REASON=timeout",
            "--filter=region=eu",
            "--limit",
            "10",
            "--rate",
            "50/s",
            "--dry-run",
            "--b-url",
            "pulsar://127.0.0.1:6651",
        ])
        .unwrap();
        let options = args.options();
        assert_eq!(options.from, "refunds-dlq");
        assert_eq!(options.to.as_deref(), Some("refunds-again"));
        assert_eq!(
            options.filters,
            [
                PropertyFilter::new("DEAD_LETTER_REASON", "timeout"),
                PropertyFilter::new("region", "eu")
            ]
        );
        assert_eq!(options.limit, Some(10));
        assert_eq!(options.rate, Some("50/s".parse::<Rate>().unwrap()));
        assert!(options.dry_run);
        assert_eq!(options.subscription, DEFAULT_REPLAY_SUBSCRIPTION);
        assert_eq!(
            options.batch_index_acks, None,
            "the broker's own unless asked"
        );
        assert_eq!(
            parsed.settings.get("b.url"),
            Some("pulsar://127.0.0.1:6651")
        );

        let (args, _) = replay_args(&["--from", "d", "--batch-index-acks"]).unwrap();
        let options = args.options();
        assert_eq!(options.batch_index_acks, Some(true));
        assert!(!options.dry_run && options.to.is_none() && options.filters.is_empty());
    }

    #[test]
    fn a_replay_with_a_wrong_flag_says_what_to_write() {
        let error = replay_args(&[]).unwrap_err().to_string();
        assert!(error.contains("--from <TOPIC>"), "{error}");
        let error = replay_args(&["--from", "d", "--filter", "reason"])
            .unwrap_err()
            .to_string();
        assert!(error.contains("write PROPERTY=VALUE"), "{error}");
        let error = replay_args(&["--from", "d", "--rate", "fast"])
            .unwrap_err()
            .to_string();
        assert!(error.contains("N/s, N/min or N"), "{error}");
    }

    #[test]
    fn flags() {
        let parsed = parse_args(&[
            "run",
            "--embedded",
            "--publish",
            "refunds=a.jsonl",
            "--publish=x=y",
            "--b-url",
            "pulsar://127.0.0.1:6650",
        ])
        .unwrap();
        assert!(parsed.cli.embedded);
        assert!(!parsed.cli.publish_source, "off unless asked for");
        assert_eq!(
            parsed.cli.publish,
            [
                ("refunds".into(), "a.jsonl".into()),
                ("x".into(), "y".into())
            ]
        );
        assert_eq!(
            parsed.settings.get("b.url"),
            Some("pulsar://127.0.0.1:6650")
        );
        assert_eq!(parsed.settings.get("b.token"), None);
    }

    #[test]
    fn mistakes_say_what_to_write() {
        let error = parse_args(&["serve"]).unwrap_err().to_string();
        assert!(error.contains("unrecognized subcommand 'serve'"), "{error}");
        let error = parse_args(&["--publish-source"]).unwrap_err().to_string();
        assert!(error.contains("--publish <TOPIC=FILE>"), "{error}");
        let error = parse_args(&["--publish", "refunds"])
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("`refunds` must be TOPIC=FILE, e.g. `--publish refunds=samples.jsonl`"),
            "{error}"
        );
    }

    #[test]
    fn version_and_help_name_the_app_and_hide_secrets() {
        let version = parse_args(&["--version"]).unwrap_err();
        assert_eq!(version.kind(), clap::error::ErrorKind::DisplayVersion);
        assert_eq!(version.to_string().trim(), "refunds 1.2.3");
        let help = parse_args(&["--help"]).unwrap_err().to_string();
        assert!(help.contains("--b-url <VALUE>"), "{help}");
        assert!(help.contains("RUSTSTREAM_TEST_CLI_URL"), "{help}");
    }

    #[test]
    fn the_environment_gives_a_setting_the_flag_overrides_it_and_help_hides_a_secret() {
        // Variables no other test reads, so that tests running at once do not see them.
        const ENV_SPECS: [SettingSpec; 2] = [
            SettingSpec::new("b.url", "RUSTSTREAM_TEST_ENV_URL", "b-url", "the URL"),
            SettingSpec::new(
                "b.token",
                "RUSTSTREAM_TEST_ENV_TOKEN",
                "b-token",
                "the token",
            )
            .secret(),
        ];
        let parse_env = |args: &[&str]| {
            let info = AppInfo::new("refunds", "1.2.3");
            parse(
                command(&info, &ENV_SPECS, None),
                &ENV_SPECS,
                std::iter::once("refunds").chain(args.iter().copied()),
            )
        };
        std::env::set_var("RUSTSTREAM_TEST_ENV_TOKEN", "secret-from-env");
        std::env::set_var("RUSTSTREAM_TEST_ENV_URL", "pulsar://from-env:6650");
        let parsed = parse_env(&[]).unwrap();
        assert_eq!(parsed.settings.get("b.token"), Some("secret-from-env"));
        assert_eq!(parsed.settings.get("b.url"), Some("pulsar://from-env:6650"));
        assert!(!format!("{:?}", parsed.settings).contains("secret-from-env"));
        let parsed = parse_env(&["--b-url", "pulsar://from-flag:6650"]).unwrap();
        assert_eq!(
            parsed.settings.get("b.url"),
            Some("pulsar://from-flag:6650")
        );
        let help = parse_env(&["--help"]).unwrap_err().to_string();
        assert!(!help.contains("secret-from-env"), "{help}");
        assert!(
            help.contains("pulsar://from-env:6650"),
            "not a secret: {help}"
        );
        std::env::remove_var("RUSTSTREAM_TEST_ENV_TOKEN");
        std::env::remove_var("RUSTSTREAM_TEST_ENV_URL");
    }

    #[derive(Debug, clap::Args)]
    struct Region {
        /// The region this instance serves.
        #[arg(long, env = "RUSTSTREAM_TEST_REGION_UNSET", default_value = "eu")]
        region: String,
    }

    #[test]
    fn a_service_adds_its_own_flags_and_reads_them_back() {
        let flags = crate::ServiceFlags::of::<Region>();
        let info = AppInfo::new("refunds", "1.2.3");
        let help = command(&info, &SPECS, Some(flags.command.clone()))
            .try_get_matches_from(["refunds", "--help"])
            .unwrap_err()
            .to_string();
        assert!(help.contains("--region <REGION>"), "{help}");
        let parsed = parse(
            command(&info, &SPECS, Some(flags.command.clone())),
            &SPECS,
            ["refunds", "run", "--region", "us", "--embedded"],
        )
        .unwrap();
        assert!(parsed.cli.embedded);
        (flags.store)(&parsed.matches).unwrap();
        assert_eq!(crate::args::<Region>().region, "us");
    }
}
