//! `envctl down [TARGET]` (no TARGET: `ops::target::obvious_container`): stop the container; `--rm` removes it, `--volumes` also its named
//! volumes. Only containers envctl created; host folders mounted into them are never
//! touched.
//!
//! `envctl down --rm --slurm-job ID` (or `--label KEY=VALUE`) sweeps every container envctl
//! made that carries the label, for a Slurm `Epilog=` script: a container outlives its job
//! when `envctl run` is SIGKILLed before it could remove it. Root (as Epilog runs) sweeps
//! every user's; anyone else their own unless `--other-user`.
//!
//! `ops::down` does both; this file says what was done.

use serde::Serialize;

use super::{Context, runtime};
use crate::error::Error;
use crate::exit::ExitStatus;
use crate::ops::down::{self, Downed};

/// `envctl down`'s arguments, as clap parses them.
#[derive(Debug, clap::Args)]
pub struct DownArgs {
    /// A container name or id (12+ hex digits), else a profile name or path; left out:
    /// the obvious container (see `envctl exec --help`)
    #[arg(add = clap_complete::ArgValueCandidates::new(crate::complete::targets))]
    pub target: Option<String>,
    /// Also remove the container
    #[arg(long)]
    pub rm: bool,
    /// Also remove the named volumes it uses (implies --rm)
    #[arg(long)]
    pub volumes: bool,
    /// Seconds to wait for a clean stop before killing (at most 86400)
    #[arg(long, default_value_t = 10, value_name = "SECONDS",
          value_parser = clap::value_parser!(u32).range(0..=86_400))]
    pub timeout: u32,
    /// Every container envctl made in this Slurm job (label `envctl.slurm-job`), for an
    /// `Epilog=` script: `envctl down --rm --slurm-job "$SLURM_JOB_ID"`
    #[arg(long, value_name = "ID", conflicts_with_all = ["target", "label"])]
    pub slurm_job: Option<String>,
    /// Every container envctl made that carries this label (KEY=VALUE)
    #[arg(long, value_name = "KEY=VALUE", conflicts_with = "target")]
    pub label: Option<String>,
}

pub fn run(arguments: DownArgs, context: &Context) -> Result<ExitStatus, Error> {
    let DownArgs {
        target,
        rm: remove,
        volumes,
        timeout: timeout_seconds,
        slurm_job,
        label,
    } = arguments;
    if let Some(label) = down::sweep_label(slurm_job.as_deref(), label.as_deref())? {
        return sweep(&label, remove || volumes, timeout_seconds, context);
    }
    let target = target.as_deref();
    let stopping = runtime()?.block_on(async {
        // The first SIGINT or SIGTERM ends `down` at once (130/143), whatever `--timeout`:
        // the daemon goes on with the stop it was asked for.
        let work = down::down(target, remove, volumes, timeout_seconds, context);
        tokio::select! {
            outcome = work => outcome.map(Ok),
            code = super::termination_signal() => Ok(Err(code)),
        }
    })?;
    let outcome = match stopping {
        Ok(outcome) => outcome,
        Err(code) => {
            context.printer.warn(
                "interrupted: the daemon goes on with the stop it was asked for (`envctl ps -a` shows the container's state)",
            );
            return Ok(ExitStatus::External(code));
        }
    };
    report(outcome, remove || volumes, context)
}

/// `down --slurm-job ID` / `--label KEY=VALUE`: stops (and with `remove`, removes) every
/// container envctl made that carries the label. Exit 0 when every one is gone or stopped.
fn sweep(
    label: &str,
    remove: bool,
    timeout_seconds: u32,
    context: &Context,
) -> Result<ExitStatus, Error> {
    let swept = runtime()?.block_on(async {
        let work = down::sweep(label, remove, timeout_seconds, context);
        tokio::select! {
            outcome = work => outcome.map(Ok),
            code = super::termination_signal() => Ok(Err(code)),
        }
    })?;
    let names = match swept {
        Ok(names) => names,
        Err(code) => {
            context.printer.warn(
                "interrupted: the daemon goes on with the stop it was asked for (`envctl ps -a` shows what is left)",
            );
            return Ok(ExitStatus::External(code));
        }
    };
    if context.json {
        #[derive(Serialize)]
        struct Swept<'a> {
            label: &'a str,
            containers: &'a [String],
            stopped: bool,
            removed: bool,
        }
        context.printer.json(&Swept {
            label,
            containers: &names,
            stopped: true,
            removed: remove,
        })?;
    } else if names.is_empty() {
        context.printer.info(&format!(
            "nothing to stop: no container of envctl's carries {}",
            crate::ui::text::shown(label)
        ));
    } else {
        let action = if remove {
            "stopped and removed"
        } else {
            "stopped"
        };
        for name in &names {
            context.printer.info(&format!("{action} {name}"));
        }
    }
    Ok(ExitStatus::Success)
}

/// Says what `down` did (or that there was nothing to stop).
fn report(outcome: Option<Downed>, removed: bool, context: &Context) -> Result<ExitStatus, Error> {
    let Some(Downed {
        container: name,
        volumes_removed: removed_volumes,
        volumes_kept: kept_volumes,
    }) = outcome
    else {
        if context.json {
            #[derive(Serialize)]
            struct Nothing {
                container: Option<String>,
                stopped: bool,
                removed: bool,
                volumes_removed: [String; 0],
            }
            context.printer.json(&Nothing {
                container: None,
                stopped: false,
                removed: false,
                volumes_removed: [],
            })?;
        }
        return Ok(ExitStatus::Success);
    };
    if context.json {
        #[derive(Serialize)]
        struct Down<'a> {
            container: &'a str,
            stopped: bool,
            removed: bool,
            volumes_removed: &'a [String],
            /// Named volumes it mounts that envctl did not make with it: left as they are.
            #[serde(skip_serializing_if = "<[_]>::is_empty")]
            volumes_kept: &'a [String],
        }
        context.printer.json(&Down {
            container: &name,
            stopped: true,
            removed,
            volumes_removed: &removed_volumes,
            volumes_kept: &kept_volumes,
        })?;
    } else {
        let action = if removed {
            "stopped and removed"
        } else {
            "stopped"
        };
        context.printer.info(&format!("{action} {name}"));
    }
    Ok(ExitStatus::Success)
}
