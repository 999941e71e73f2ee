//! `envctl ps`: envctl's containers with profile, image, status, ports, GPUs and drift
//! (the profile on disk no longer matches the container's config hash), and where each
//! came from: `up`, or another tool that ran an export (`compose (PROJECT)`). The user's
//! own by default; `--all-users` lists everyone's with an OWNER column. `--hosts a,b,c`
//! lists several daemons in one table with a HOST column (`ops::hosts`): each asked at
//! once, an unreachable one a row saying why. `ops::ps` gathers the rows; this file
//! renders them.

use serde::Serialize;

use super::{Context, runtime};
use crate::error::Error;
use crate::exit::ExitStatus;
use crate::ops::ps::{HostRows, Row};
use crate::ui::table::print_table;

/// `envctl ps`'s arguments, as clap parses them.
#[derive(Debug, clap::Args)]
pub struct PsArgs {
    /// Include stopped containers
    #[arg(short, long)]
    pub all: bool,
    /// Show image references and ids whole (pinned digests are cut to 12 hex digits)
    #[arg(long)]
    pub no_trunc: bool,
    /// List every user's envctl containers, with their owner (default: your own)
    #[arg(long)]
    pub all_users: bool,
    /// Several daemons in one table, asked at once: docker CLI context names or URLs
    /// (`tcp://…`, `ssh://…`), comma-separated; an unreachable one is a row saying why
    #[arg(long, value_delimiter = ',', value_name = "HOSTS")]
    pub hosts: Vec<String>,
}

/// The image as the table shows it: a pinned reference keeps 12 hex digits of its digest
/// (the id would only repeat it), a tag gets the image id's first 12; `--no-trunc` shows
/// both whole. A locked image was ~200 columns wide.
fn shown_image(image: &str, image_id: &str, no_trunc: bool) -> String {
    if no_trunc {
        return format!("{image} (sha256:{image_id})");
    }
    match image.split_once("@sha256:") {
        Some((name, digest)) => {
            format!(
                "{name}@sha256:{}",
                digest.chars().take(12).collect::<String>()
            )
        }
        None => format!(
            "{image} ({})",
            image_id.chars().take(12).collect::<String>()
        ),
    }
}

/// With `--hosts`: what each host answered.
#[derive(Debug, Serialize)]
struct HostState {
    host: String,
    endpoint: String,
    reachable: bool,
    /// How many containers it listed; none when unreachable.
    containers: Option<usize>,
    /// Why it could not be listed: the message with its causes, a stable kind, the hint.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error_kind: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hint: Option<String>,
    /// The table's word for why: the message without its causes.
    #[serde(skip)]
    said: Option<String>,
}

pub fn run(arguments: PsArgs, context: &Context) -> Result<ExitStatus, Error> {
    let PsArgs {
        all,
        no_trunc,
        all_users,
        hosts,
    } = arguments;
    if !hosts.is_empty() {
        return run_hosts(all, no_trunc, all_users, &hosts, context);
    }
    let rows = runtime()?.block_on(crate::ops::ps::rows(all, all_users, context))?;
    if context.json {
        #[derive(Serialize)]
        struct Listing<'a> {
            containers: &'a [Row],
        }
        context.printer.json(&Listing { containers: &rows })?;
        return Ok(ExitStatus::Success);
    }
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|row| table_row(row, all_users, no_trunc))
        .collect();
    print_table(&context.printer, &headers(all_users, false), &table)?;
    if rows.is_empty() {
        hint_when_empty(all, all_users, context)?;
    }
    warn_changed(&rows, context);
    warn_failed(&rows, context);
    Ok(ExitStatus::Success)
}

/// An empty table says why on stderr (stdout keeps the header alone): the stopped
/// containers `-a` would show, or none at all and how to make one.
fn hint_when_empty(all: bool, all_users: bool, context: &Context) -> Result<(), Error> {
    if context.printer.is_quiet() {
        return Ok(());
    }
    let whose = if all_users { "" } else { " of yours" };
    // Asked again only when the table is empty: what `-a` would add is all stopped. The
    // table was listed; a second answer that fails leaves the hint unsaid, not `ps` failed.
    let stopped = if all {
        0
    } else {
        match runtime()?.block_on(crate::ops::ps::rows(true, all_users, context)) {
            Ok(rows) => rows.len(),
            Err(_) => return Ok(()),
        }
    };
    let a = if all_users { " --all-users" } else { "" };
    if stopped > 0 {
        context.printer.info(&format!(
            "hint: no running containers{whose}; {stopped} stopped: `envctl ps -a{a}`"
        ));
    } else {
        context.printer.info(&format!(
            "hint: no containers{whose}; start one with `envctl up PROFILE` (`envctl profiles list` lists them)"
        ));
    }
    Ok(())
}

/// `ps --hosts`: every host at once, one table with a HOST column; a host that cannot be
/// listed is a row that says why (and its hint on stderr), never a failed command.
fn run_hosts(
    all: bool,
    no_trunc: bool,
    all_users: bool,
    names: &[String],
    context: &Context,
) -> Result<ExitStatus, Error> {
    let answers = runtime()?.block_on(crate::ops::ps::rows_on_hosts(
        names, all, all_users, context,
    ))?;
    let (states, rows) = host_states(answers);
    if context.json {
        #[derive(Serialize)]
        struct Listing<'a> {
            hosts: &'a [HostState],
            containers: &'a [Row],
        }
        context.printer.json(&Listing {
            hosts: &states,
            containers: &rows,
        })?;
        return Ok(ExitStatus::Success);
    }
    let table = hosts_table(&states, &rows, all_users, no_trunc);
    print_table(&context.printer, &headers(all_users, true), &table)?;
    for state in states.iter().filter(|state| !state.reachable) {
        context.printer.warn(&crate::ui::text::host_failed(
            &state.host,
            &state.endpoint,
            "listed",
            state.hint.as_deref(),
        ));
    }
    warn_changed(&rows, context);
    Ok(ExitStatus::Success)
}

/// Each host's state for the report, and the rows of every host that answered.
fn host_states(answers: Vec<HostRows>) -> (Vec<HostState>, Vec<Row>) {
    let mut states = Vec::new();
    let mut rows: Vec<Row> = Vec::new();
    for HostRows {
        host,
        endpoint,
        result,
    } in answers
    {
        match result {
            Ok(listed) => {
                states.push(HostState {
                    host,
                    endpoint,
                    reachable: true,
                    containers: Some(listed.len()),
                    error: None,
                    error_kind: None,
                    hint: None,
                    said: None,
                });
                rows.extend(listed);
            }
            Err(error) => {
                let kind = match &error {
                    Error::Engine(engine) => engine.kind(),
                    _ => "other",
                };
                states.push(HostState {
                    host,
                    endpoint,
                    reachable: false,
                    containers: None,
                    error: Some(crate::error::error_chain(&error)),
                    error_kind: Some(kind),
                    hint: error.hint(),
                    said: Some(error.to_string()),
                });
            }
        }
    }
    (states, rows)
}

/// The table of every host's rows, host by host; a host with none has one row saying so.
fn hosts_table(
    states: &[HostState],
    rows: &[Row],
    all_users: bool,
    no_trunc: bool,
) -> Vec<Vec<String>> {
    let width = headers(all_users, true).len();
    let mut table = Vec::new();
    for state in states {
        let mine = rows
            .iter()
            .filter(|row| row.host.as_deref() == Some(state.host.as_str()));
        let mut listed = 0;
        for row in mine {
            listed += 1;
            table.push(
                std::iter::once(state.host.clone())
                    .chain(table_row(row, all_users, no_trunc))
                    .collect(),
            );
        }
        if listed == 0 {
            // A host with nothing to list, or that could not be listed, still has its row.
            let said = match &state.said {
                Some(error) => format!("unreachable: {error}"),
                None => "no containers".to_string(),
            };
            let mut line = vec![state.host.clone(), "-".to_string()];
            line.resize(width, "-".to_string());
            let status = headers(all_users, true)
                .iter()
                .position(|header| *header == "STATUS")
                .unwrap_or(width - 1);
            line[status] = said;
            table.push(line);
        }
    }
    table
}

/// The table's headers: OWNER first with `--all-users`, HOST before all with `--hosts`.
fn headers(all_users: bool, hosts: bool) -> Vec<&'static str> {
    let headers = [
        "NAME", "PROFILE", "IMAGE", "STATUS", "PORTS", "GPUS", "DRIFT", "ORIGIN",
    ];
    hosts
        .then_some("HOST")
        .into_iter()
        .chain(all_users.then_some("OWNER"))
        .chain(headers)
        .collect()
}

/// One container's cells, in [`headers`]' order (without HOST).
fn table_row(row: &Row, all_users: bool, no_trunc: bool) -> Vec<String> {
    let owner = all_users.then(|| row.owner.clone().unwrap_or_else(|| "-".into()));
    owner
        .into_iter()
        .chain([
            row.name.clone(),
            row.profile.clone(),
            shown_image(&row.image, &row.full_image_id, no_trunc),
            shown_status(row),
            row.ports.join(", "),
            shown_gpus(row),
            row.drift.to_string(),
            row.shown_origin.clone(),
        ])
        .collect()
}

/// The GPUS cell: the GPUs, and those that failed marked `(GPU 2 FAILED)` (issue 43).
fn shown_gpus(row: &Row) -> String {
    let gpus = row.gpus.clone().unwrap_or_else(|| "-".into());
    match row.failed_gpus.as_deref() {
        Some(failed) if !failed.is_empty() => {
            let indexes: Vec<String> = failed.iter().map(|gpu| gpu.index.to_string()).collect();
            format!("{gpus} (GPU {} FAILED)", indexes.join(","))
        }
        _ => gpus,
    }
}

/// Each container on a GPU that failed, with why and how to clear it (issue 43).
fn warn_failed(rows: &[Row], context: &Context) {
    for row in rows {
        for gpu in row.failed_gpus.iter().flatten() {
            context.printer.warn(&format!(
                "`{}` runs on a GPU that failed: {}",
                row.name, gpu.why
            ));
        }
    }
}

/// Each changed container with the command that applies its profile (the name when it
/// is not the profile's default, so the hint reaches that container).
fn warn_changed(rows: &[Row], context: &Context) {
    for row in rows.iter().filter(|row| row.drift == "changed") {
        let target = if row.name == crate::container_plan::container_name(&row.profile) {
            String::new()
        } else {
            format!(" --name {}", row.name)
        };
        let host = row
            .host
            .as_ref()
            .map_or_else(String::new, |host| format!(" (on {host})"));
        // Made from a file the name does not resolve to here: applied where that file is.
        let command = match (&row.profile_file, row.named_elsewhere_here) {
            (Some(file), true) => {
                crate::container_plan::drift::up_from_recorded_file(file, &row.profile)
            }
            _ => format!("envctl up {}", row.profile),
        };
        // Another host's container: the command reaches that daemon (issue 40).
        let command = match &row.host {
            Some(host) => {
                let team = crate::profile::team::find(&context.search_path)
                    .ok()
                    .flatten();
                command.replacen(
                    "envctl up ",
                    &format!("envctl {} up ", daemon_flag(host, team.as_ref())),
                    1,
                )
            }
            None => command,
        };
        context.printer.warn(&format!(
            "profile `{}` changed since `{}`{host} was created; `{command}{target} --recreate` applies it",
            row.profile, row.name
        ));
    }
}

/// The flag that makes a command reach the daemon `host` names in `--hosts`: a team
/// host's target, else the name itself, as `-H URL` or `--context NAME`.
fn daemon_flag(host: &str, team: Option<&crate::profile::team::TeamFile>) -> String {
    let target = team
        .and_then(|team| team.get(host))
        .map_or(host, |host| host.target.as_str());
    if target.contains("://") {
        format!("-H {}", crate::container_plan::shell_quote(target))
    } else {
        format!("--context {}", crate::container_plan::shell_quote(target))
    }
}

/// The daemon's status, and for a stopped container the kernel killed, that it did: an
/// `Exited (137)` alone could be a `kill -9`.
fn shown_status(row: &Row) -> String {
    if row.oom_killed == Some(true) && row.state != "running" {
        format!("{} (OOM killed)", row.status)
    } else {
        row.status.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::shown_image;

    /// Issue 40: a hint for another host's container names that host's daemon.
    #[test]
    fn a_hosts_command_reaches_its_daemon() {
        use super::daemon_flag;
        use crate::profile::team::{TeamFile, TeamHost};
        let team = TeamFile {
            path: "envctl/hosts.toml".into(),
            hosts: vec![
                TeamHost {
                    name: "gpu1".into(),
                    target: "ssh://me@gpu1".into(),
                },
                TeamHost {
                    name: "gpu2".into(),
                    target: "lab-gpu2".into(),
                },
            ],
        };
        assert_eq!(daemon_flag("gpu1", Some(&team)), "-H ssh://me@gpu1");
        assert_eq!(daemon_flag("gpu2", Some(&team)), "--context lab-gpu2");
        assert_eq!(daemon_flag("gpu3", Some(&team)), "--context gpu3");
        assert_eq!(
            daemon_flag("tcp://10.0.0.3:2376", None),
            "-H tcp://10.0.0.3:2376"
        );
    }

    #[test]
    fn a_pinned_image_is_cut_to_a_short_digest_unless_whole_is_asked() {
        let digest = "0123456789abcdef".repeat(4);
        let id = "fedcba9876543210".repeat(4);
        let pinned = format!("pytorch/pytorch:2.8.0@sha256:{digest}");
        assert_eq!(
            shown_image(&pinned, &id, false),
            "pytorch/pytorch:2.8.0@sha256:0123456789ab"
        );
        assert_eq!(
            shown_image("busybox:1", &id, false),
            "busybox:1 (fedcba987654)"
        );
        assert_eq!(
            shown_image(&pinned, &id, true),
            format!("{pinned} (sha256:{id})")
        );
    }
}
