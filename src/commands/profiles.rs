//! `envctl profiles list | show | check | new`.

use std::path::{Path, PathBuf};

use console::Style;
use serde::Serialize;

use super::Context;
use crate::cli::ProfilesCommand;
use crate::error::Error;
use crate::exit::ExitStatus;
use crate::profile::diagnostic::file_diagnostic;
use crate::profile::error::plural;
use crate::profile::resolve::is_path_argument;
use crate::profile::validate::check_profile_name;
use crate::profile::{
    Diagnostic, ProfileError, ProfileFile, ResolvedProfile, SourceKind, template,
};
use crate::ui::table::print_table;

/// `envctl profiles show`'s arguments, as clap parses them.
#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// A profile name, or a path to a .toml file
    #[arg(add = clap_complete::ArgValueCandidates::new(crate::complete::profiles))]
    pub profile: String,
}

/// `envctl profiles check`'s arguments, as clap parses them.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Profile files or names
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<String>,
}

/// `envctl profiles new`'s arguments, as clap parses them.
#[derive(Debug, clap::Args)]
pub struct NewArgs {
    /// The new profile's name
    pub name: String,
    /// Copy this profile (resolved) instead of the starter template
    #[arg(long, value_name = "PROFILE")]
    pub from: Option<String>,
    /// Folder to write into
    #[arg(long, value_name = "DIR", default_value = "envctl")]
    pub directory: PathBuf,
}

pub fn run(command: ProfilesCommand, context: &Context) -> Result<ExitStatus, Error> {
    match command {
        ProfilesCommand::List => list(context),
        ProfilesCommand::Show(arguments) => show(&arguments.profile, context),
        ProfilesCommand::Check(arguments) => check(&arguments.files, context),
        ProfilesCommand::New(arguments) => new(
            &arguments.name,
            arguments.from.as_deref(),
            &arguments.directory,
            context,
        ),
    }
}

fn list(context: &Context) -> Result<ExitStatus, Error> {
    let (profiles, warnings) = context.search_path.list();
    for warning in &warnings {
        context.printer.warn(warning);
    }
    if context.json {
        #[derive(Serialize)]
        struct Listing<'a> {
            profiles: &'a [crate::profile::ListedProfile],
        }
        context.printer.json(&Listing {
            profiles: &profiles,
        })?;
    } else {
        let rows: Vec<Vec<String>> = profiles
            .iter()
            .map(|profile| {
                vec![
                    profile.name.clone(),
                    profile.source.to_string(),
                    profile.image.clone().unwrap_or_else(|| {
                        format!("(invalid: {})", plural(profile.problems, "problem"))
                    }),
                    profile.description.clone().unwrap_or_default(),
                ]
            })
            .collect();
        print_table(
            &context.printer,
            &["NAME", "SOURCE", "IMAGE", "DESCRIPTION"],
            &rows,
        )?;
    }
    for invalid in profiles.iter().filter(|profile| profile.problems > 0) {
        context.printer.warn(&format!(
            "profile `{}` is invalid; run `envctl profiles check {}`",
            invalid.name,
            crate::container_plan::shell_quote(&invalid.file)
        ));
    }
    Ok(ExitStatus::Success)
}

fn show(argument: &str, context: &Context) -> Result<ExitStatus, Error> {
    let resolved = masked(context.search_path.resolve(argument)?);
    if context.json {
        #[derive(Serialize)]
        struct Shown<'a> {
            profile: &'a ResolvedProfile,
        }
        context.printer.json(&Shown { profile: &resolved })?;
        return Ok(ExitStatus::Success);
    }
    let printer = &context.printer;
    let dim = |text: &str| printer.style_stdout(Style::new().dim(), text);
    printer.data(&dim(&format!(
        "# profile `{}` ({})",
        resolved.profile.name, resolved.source
    )))?;
    printer.data(&dim(&format!(
        "# file: {}",
        resolved.chain.join(" → extends ")
    )))?;
    printer.data(&dim(&format!(
        "# config hash: {}",
        &resolved.config_hash[..16]
    )))?;
    let lines = template::lines(&resolved.profile);
    let width = lines
        .iter()
        .filter(|line| line.key.is_some())
        .map(|line| console::measure_text_width(&line.text))
        .max()
        .unwrap_or(0)
        .min(72);
    for line in lines {
        let origin = match &line.key {
            Some(key) => Some(match resolved.origins.get(key) {
                Some(file) => file.clone(),
                None => "default".into(),
            }),
            None => None,
        };
        match origin {
            Some(origin) if resolved.chain.len() > 1 || origin == "default" => {
                let padded = console::pad_str(&line.text, width, console::Alignment::Left, None);
                printer.data(&format!("{padded}  {}", dim(&format!("# {origin}"))))?;
            }
            _ => printer.data(&line.text)?,
        }
    }
    Ok(ExitStatus::Success)
}

/// The profile with every secret-looking env value (`crate::secret`) read as `<masked>`:
/// `show` prints it, in text and JSON, and never the value (`doctor` warns about it).
fn masked(mut resolved: ResolvedProfile) -> ResolvedProfile {
    for (key, value) in &mut resolved.profile.env {
        if crate::secret::is_secret(key, value) {
            *value = crate::secret::MASK.to_string();
        }
    }
    resolved
}

/// One file's verdict in `profiles check --json`.
#[derive(Serialize)]
struct Checked {
    file: String,
    valid: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    profile: Option<String>,
    diagnostics: Vec<Diagnostic>,
}

fn check(arguments: &[String], context: &Context) -> Result<ExitStatus, Error> {
    let mut results = Vec::new();
    for argument in arguments {
        let outcome = if is_path_argument(argument) {
            let path = PathBuf::from(argument);
            context.search_path.resolve_file(ProfileFile::Disk {
                path,
                kind: SourceKind::Path,
            })
        } else {
            context.search_path.resolve(argument)
        };
        let checked = match outcome {
            Ok(resolved) => Checked {
                file: resolved.file,
                valid: true,
                profile: Some(resolved.profile.name),
                diagnostics: Vec::new(),
            },
            Err(ProfileError::Invalid { diagnostics }) => Checked {
                file: argument.clone(),
                valid: false,
                profile: None,
                diagnostics,
            },
            Err(other) => Checked {
                file: argument.clone(),
                valid: false,
                profile: None,
                diagnostics: vec![file_diagnostic(argument, other.to_string(), other.hint())],
            },
        };
        if checked.valid {
            context.printer.info(&format!(
                "{} {} is valid (profile `{}`)",
                "✓",
                checked.file,
                checked.profile.as_deref().unwrap_or_default()
            ));
        }
        results.push(checked);
    }
    if context.json {
        #[derive(Serialize)]
        struct Report<'a> {
            valid: bool,
            files: &'a [Checked],
        }
        context.printer.json(&Report {
            valid: results.iter().all(|checked| checked.valid),
            files: &results,
        })?;
    }
    let diagnostics: Vec<Diagnostic> = results
        .into_iter()
        .flat_map(|checked| checked.diagnostics)
        .collect();
    if diagnostics.is_empty() {
        Ok(ExitStatus::Success)
    } else {
        Err(ProfileError::Invalid { diagnostics }.into())
    }
}

fn new(
    name: &str,
    from: Option<&str>,
    directory: &Path,
    context: &Context,
) -> Result<ExitStatus, Error> {
    check_profile_name(name).map_err(|message| Error::Usage {
        message,
        hint: Some("for example: envctl profiles new team-pytorch".into()),
    })?;
    let text = match from {
        Some(source) => {
            let resolved = context.search_path.resolve(source)?;
            let (profile, notes) = template::for_a_new_project(resolved.profile);
            template::render(
                &profile,
                &format!(
                    "Profile `{name}`, created by envctl {} from `{}` ({}).{notes}\nEdit it, then check it: envctl profiles check {}",
                    env!("CARGO_PKG_VERSION"),
                    profile.name,
                    resolved.file,
                    crate::container_plan::shell_quote(
                        &directory.join(format!("{name}.toml")).to_string_lossy()
                    ),
                ),
            )
        }
        None => template::STARTER.to_string(),
    };
    let path = directory.join(format!("{name}.toml"));
    std::fs::create_dir_all(directory).map_err(|source| ProfileError::Write {
        path: directory.to_path_buf(),
        source,
    })?;
    // Written whole through `files` (never a half-written profile), refusing anything
    // already there, atomically: never overwrite a team's profile.
    crate::files::write_atomically(&path, text.as_bytes(), crate::files::Existing::Refuse)
        .map_err(|error| match error {
            // A file, or anything else of that name (a folder, a link): never replaced.
            crate::files::WriteError::Exists | crate::files::WriteError::NotRegular { .. } => {
                ProfileError::AlreadyExists { path: path.clone() }
            }
            crate::files::WriteError::Io(source) => ProfileError::Write {
                path: path.clone(),
                source,
            },
        })?;
    if context.json {
        #[derive(Serialize)]
        struct Created<'a> {
            created: String,
            name: &'a str,
            from: Option<&'a str>,
        }
        context.printer.json(&Created {
            created: path.display().to_string(),
            name,
            from,
        })?;
    } else {
        context.printer.info(&format!("created {}", path.display()));
        // `show NAME` only finds it where profiles are searched; else name the file.
        let shown = match context.search_path.find(name) {
            Ok(crate::profile::ProfileFile::Disk { path: found, .. }) if found == path => {
                name.to_string()
            }
            _ => crate::container_plan::shell_quote(&path.to_string_lossy()),
        };
        context.printer.info(&format!(
            "next: edit it, then `envctl profiles check {}` and `envctl profiles show {shown}`",
            crate::container_plan::shell_quote(&path.to_string_lossy())
        ));
    }
    Ok(ExitStatus::Success)
}
