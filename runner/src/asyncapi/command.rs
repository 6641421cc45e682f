//! Running `<service> asyncapi`: describe the app's brokers, then write or check the document.

use std::process::ExitCode;

use ruststream::app::{AppParts, Settings};

use super::AsyncapiArgs;

/// The app's AsyncAPI document, from each broker's description with `settings` applied; or
/// what is wrong with its registrations.
pub(crate) fn describe<S: 'static>(
    parts: &AppParts<S>,
    settings: &Settings,
) -> Result<serde_json::Value, String> {
    let mut descriptions = Vec::new();
    for broker in &parts.brokers {
        descriptions.push(broker.describe(settings).map_err(|e| e.to_string())?);
    }
    Ok(super::document(&parts.info, &descriptions))
}

/// `asyncapi [--yaml] [-o FILE] [--check FILE]`: 0 when written (and unbroken), 1 on a
/// breaking change, 2 when the document cannot be built, read or written.
pub(crate) fn run<S: 'static>(
    parts: &AppParts<S>,
    settings: &Settings,
    args: &AsyncapiArgs,
) -> ExitCode {
    let name = parts.info.name().to_owned();
    let document = match describe(parts, settings) {
        Ok(document) => document,
        Err(e) => {
            eprintln!("{name} asyncapi: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(path) = &args.check {
        let committed = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) => {
                eprintln!(
                    "{name} asyncapi --check: cannot read {}: {e}; write it first with \
                     `{name} asyncapi -o {}`",
                    path.display(),
                    path.display()
                );
                return ExitCode::from(2);
            }
        };
        let committed = match super::read(&committed) {
            Ok(value) => value,
            Err(e) => {
                eprintln!("{name} asyncapi --check: {} is {e}", path.display());
                return ExitCode::from(2);
            }
        };
        let changes = super::breaking_changes(&committed, &document);
        if !changes.is_empty() {
            eprintln!(
                "{name} asyncapi --check: {} breaking change(s) against {}:",
                changes.len(),
                path.display()
            );
            for change in &changes {
                eprintln!("  - {change}");
            }
            return ExitCode::FAILURE;
        }
        let count = |key: &str| document[key].as_object().map_or(0, |o| o.len());
        eprintln!(
            "{name} asyncapi --check: no breaking change against {} ({} channels, {} \
             operations)",
            path.display(),
            count("channels"),
            count("operations")
        );
        if args.output.is_none() {
            return ExitCode::SUCCESS;
        }
    }
    let text = if args.yaml {
        super::to_yaml(&document)
    } else {
        let mut text = serde_json::to_string_pretty(&document).unwrap_or_default();
        text.push('\n');
        text
    };
    match &args.output {
        None => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Some(path) => match std::fs::write(path, text) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{name} asyncapi: cannot write {}: {e}", path.display());
                ExitCode::from(2)
            }
        },
    }
}
