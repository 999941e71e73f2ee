//! `envctl gpu clear UUID|INDEX`: ends the keep-out of a GPU on which a fatal Xid was
//! recorded (`ops::gpu`), after its admin reset it. Exit 0 when something was cleared,
//! 1 when there was nothing to clear or no such GPU (the GPUs are listed).

use super::Context;
use crate::error::Error;
use crate::exit::ExitStatus;
use crate::ops::gpu::Clear;

/// `envctl gpu`'s arguments, as clap parses them.
#[derive(Debug, clap::Args)]
pub struct GpuArgs {
    #[command(subcommand)]
    pub command: GpuCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum GpuCommand {
    /// Let placement give a GPU again after a fatal Xid, once it was reset
    ///
    /// A fatal Xid seen by `envctl stats` keeps the GPU out of every `up` on this host
    /// until a reboot or this command. What NVML itself reports (a pending row remap, a
    /// lost GPU) ends only with a reset or a reboot.
    #[command(
        after_help = "Examples:\n  envctl gpu clear 2\n  envctl gpu clear GPU-2f6b1c3e-0000-0000-0000-000000000002"
    )]
    Clear {
        /// The GPU: its index as nvidia-smi numbers it, or its `GPU-…` UUID
        gpu: String,
    },
}

pub fn run(arguments: GpuArgs, context: &Context) -> Result<ExitStatus, Error> {
    match arguments.command {
        GpuCommand::Clear { gpu } => clear(&gpu, context),
    }
}

fn clear(name: &str, context: &Context) -> Result<ExitStatus, Error> {
    let answer = crate::ops::gpu::clear(name, context)?;
    let status = match &answer {
        Clear::Cleared { .. } => ExitStatus::Success,
        Clear::NothingToClear { .. } | Clear::UnknownGpu { .. } => ExitStatus::Failure,
    };
    if context.json {
        context.printer.json(&answer)?;
        return Ok(status);
    }
    let named = |gpu: &crate::ops::gpu::GpuName| match gpu.index {
        Some(index) => format!("GPU {index} ({})", gpu.uuid),
        None => format!("GPU {} (not listed by NVML now)", gpu.uuid),
    };
    match &answer {
        Clear::Cleared {
            gpu,
            cleared,
            record,
            still_kept_out,
        } => {
            let xids: Vec<String> = cleared
                .iter()
                .map(|failure| {
                    format!(
                        "Xid {} ×{} (last at {}, seen by {})",
                        failure.xid,
                        failure.count,
                        crate::checks::health::when_utc(failure.last_at_ms),
                        failure.seen_by
                    )
                })
                .collect();
            context.printer.info(&format!(
                "cleared {}: {}; placement gives it again (recorded in {record})",
                named(gpu),
                xids.join("; ")
            ));
            if let Some(why) = still_kept_out {
                context.printer.warn(why);
            }
        }
        Clear::NothingToClear {
            gpu,
            still_kept_out,
        } => {
            context.printer.info(&format!(
                "nothing to clear: no fatal Xid is recorded on {} since its last clear or this boot",
                named(gpu)
            ));
            if let Some(why) = still_kept_out {
                context.printer.warn(why);
            }
        }
        Clear::UnknownGpu { asked, gpus, nvml } => {
            let listed: Vec<String> = gpus.iter().map(named).collect();
            context.printer.info(&format!(
                "no GPU of this host is `{asked}`; {}",
                match (listed.is_empty(), nvml) {
                    (false, _) => format!("its GPUs: {}", listed.join(", ")),
                    (true, Some(why)) => format!("NVML lists none: {why}"),
                    (true, None) => "NVML lists none".to_string(),
                }
            ));
        }
    }
    Ok(status)
}
