//! `export --to slurm|pyxis|apptainer`: an sbatch script that asks Slurm for what the
//! profile needs and runs it on every node of the job, with the rendezvous a PyTorch
//! user expects. The three targets share the script's frame (this module); they differ
//! in the line each node runs:
//!
//! - `slurm`: `envctl run PROFILE -- env RENDEZVOUS… COMMAND…` (Docker through envctl, which
//!   applies the whole profile, places the job's GPUs and removes the container when the
//!   step ends);
//! - `pyxis`: `srun --container-image=REGISTRY#IMAGE …` (NVIDIA's enroot plugin);
//! - `apptainer`: `apptainer exec --nv … docker://IMAGE …`.
//!
//! # The script
//!
//! `#SBATCH` lines: `--nodes` (`--nodes N`, default 1), `--ntasks-per-node=1` (one
//! container per node; torchrun starts a process per GPU inside it), `--gres=gpu:N`,
//! `--cpus-per-task` (whole CPUs, rounded up) and `--mem` from the body. Then the
//! rendezvous, computed once in the batch shell: `MASTER_ADDR` is the first host of
//! `scontrol show hostnames "$SLURM_JOB_NODELIST"` (read with `sed -n 1p`, which reads to
//! the end: `head -n 1` would end the pipe early, and `scontrol`'s SIGPIPE would fail the
//! script under `pipefail`), `MASTER_PORT` 29500 unless set,
//! `NNODES` from `SLURM_JOB_NUM_NODES`, `NPROC_PER_NODE` from `SLURM_GPUS_ON_NODE` (the
//! profile's count where Slurm says none) and `WORLD_SIZE` their product; each node's
//! `NODE_RANK` is its `SLURM_NODEID`, set in the task. Each is also exported with
//! torchrun's `PET_` prefix, so `torchrun train.py` needs no flags.
//!
//! `sbatch FILE COMMAND…` replaces the profile's command (as `envctl run PROFILE --
//! COMMAND` does). Every value from the profile is one shell word ([`shell_quote`]); the
//! task's program is fixed text that receives them as arguments, so no profile value is
//! ever read as shell code.

use std::fmt::Write as _;

use super::view::{BodyView, Gpus};
use super::{ExportInput, Notice, Target};
use crate::container_plan::shell_quote;

/// The port the rendezvous listens on when the job does not set `MASTER_PORT`
/// (torchrun's default).
pub const DEFAULT_MASTER_PORT: u16 = 29500;

/// The options of the Slurm-family targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SlurmOptions {
    /// Nodes of the job (`--nodes`); `None` is one.
    pub nodes: Option<u32>,
    /// `--to slurm`: each node's `envctl run` carries `--trust`, the yes that whoever
    /// exported gave to the profile's root-equivalent settings (`ops::trust`), since the
    /// nodes' own trust records are not the exporting machine's.
    pub trust: bool,
}

impl SlurmOptions {
    fn nodes(self) -> u32 {
        self.nodes.unwrap_or(1).max(1)
    }
}

/// The GPUs each node asks for, with a notice where Slurm cannot say the profile's request.
pub(super) fn gpus_per_node(
    view: &BodyView<'_>,
    target: Target,
    notices: &mut Vec<Notice>,
) -> Option<u32> {
    match view.gpus {
        Gpus::None => None,
        Gpus::Count(count) => Some(count),
        Gpus::All | Gpus::Optional => {
            notices.push(Notice::new(
                target,
                "gpus",
                format!(
                    "Slurm has no \"{}\" GPUs: the script asks for 1 GPU per node (`--gres=gpu:1`); raise it to the GPUs of your nodes",
                    if view.gpus == Gpus::All { "all" } else { "optional" }
                ),
            ));
            Some(1)
        }
        Gpus::Devices(devices) => {
            let count = u32::try_from(devices.len()).unwrap_or(u32::MAX);
            notices.push(Notice::new(
                target,
                "gpus",
                format!(
                    "Slurm chooses a job's GPUs: the ids ({}) are not kept, the script asks for {count} per node",
                    devices.join(", ")
                ),
            ));
            Some(count)
        }
    }
}

/// `--mem` as Slurm reads it: `16G`, `1536M`; bytes that are not whole MiB round up.
pub(super) fn slurm_memory(bytes: u64) -> String {
    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;
    if bytes.is_multiple_of(GIB) {
        format!("{}G", bytes / GIB)
    } else {
        format!("{}M", bytes.div_ceil(MIB))
    }
}

/// Whole CPUs for `--cpus-per-task`, rounded up, with a notice when rounded.
pub(super) fn slurm_cpus(nanos: i64, target: Target, notices: &mut Vec<Notice>) -> i64 {
    let whole = (nanos + 999_999_999) / 1_000_000_000;
    if nanos % 1_000_000_000 != 0 {
        notices.push(Notice::new(
            target,
            "cpus",
            format!(
                "Slurm allocates whole CPUs: {} rounded up to --cpus-per-task={whole}",
                super::decimal_cpus(nanos)
            ),
        ));
    }
    whole.max(1)
}

/// The script up to the line each node runs: the header, the `#SBATCH` lines, the
/// rendezvous and the command (`"$@"`, the profile's unless `sbatch FILE COMMAND…`).
pub(super) struct Script {
    pub(super) text: String,
}

/// What the caller says of its target for the script's header.
pub(super) struct Frame<'a> {
    pub(super) target: Target,
    /// One line: what runs the container on each node.
    pub(super) runs_with: &'a str,
    /// The image as the nodes will pull it, for the header.
    pub(super) image: &'a str,
    /// Whether `envctl.lock` pinned it.
    pub(super) pinned: bool,
}

pub(super) fn script(
    view: &BodyView<'_>,
    options: SlurmOptions,
    frame: &Frame<'_>,
    notices: &mut Vec<Notice>,
) -> Script {
    let nodes = options.nodes();
    let target = frame.target;
    let mut text = header(view.profile_name, &options, frame);
    let gpus = sbatch_directives(&mut text, view, nodes, target, notices);
    text.push_str("set -euo pipefail\n\n");
    rendezvous(&mut text, nodes, gpus);
    default_command(&mut text, view, target, notices);
    if nodes > 1 && !view.host_network() && target == Target::Slurm {
        notices.push(Notice::new(
            target,
            "network",
            "the nodes meet at MASTER_ADDR:MASTER_PORT, which a container on Docker's bridge does not listen on; set `network = \"host\"` in the profile (and `devices`/`cap_add` for InfiniBand) for multi-node training",
        ));
    }
    Script { text }
}

/// The script's first lines: the shebang, then comments saying what it is, how to submit
/// it, what each node runs, the image, and the rendezvous variables.
fn header(name: &str, options: &SlurmOptions, frame: &Frame<'_>) -> String {
    // The single quotes are meant: profile values are passed as words, never expanded
    // (SC2016), and a quoted word may end in a backslash (SC1003).
    let mut text = String::from("#!/bin/bash\n# shellcheck disable=SC1003,SC2016\n");
    let _ = writeln!(
        text,
        "# Slurm batch script for envctl profile `{name}` (`envctl export {name} --to {}{}`).",
        frame.target,
        options
            .nodes
            .map_or_else(String::new, |nodes| format!(" --nodes {nodes}"))
    );
    let _ = writeln!(
        text,
        "# Submit: `sbatch FILE` (or `sbatch FILE COMMAND…` to run COMMAND instead of the profile's command)."
    );
    let _ = writeln!(text, "# Each node runs {}.", frame.runs_with);
    let _ = writeln!(
        text,
        "# Image: {}{}",
        frame.image,
        if frame.pinned {
            " (the digest envctl.lock pins: every node runs the same bytes)"
        } else {
            ""
        }
    );
    let _ = writeln!(
        text,
        "# Rendezvous: MASTER_ADDR (the first node), MASTER_PORT, NNODES, NODE_RANK, NPROC_PER_NODE, WORLD_SIZE, also as torchrun's PET_* variables."
    );
    text
}

/// The `#SBATCH` lines: the job's name, its nodes, one task per node, and the GPUs, CPUs
/// and memory each node needs; the GPUs per node, which the rendezvous counts processes by.
fn sbatch_directives(
    text: &mut String,
    view: &BodyView<'_>,
    nodes: u32,
    target: Target,
    notices: &mut Vec<Notice>,
) -> Option<u32> {
    let job_name = super::dns_label(&crate::container_plan::container_name(view.profile_name));
    let _ = writeln!(text, "#SBATCH --job-name={job_name}");
    let _ = writeln!(text, "#SBATCH --nodes={nodes}");
    let _ = writeln!(text, "#SBATCH --ntasks-per-node=1");
    let gpus = gpus_per_node(view, target, notices);
    if let Some(count) = gpus {
        let _ = writeln!(text, "#SBATCH --gres=gpu:{count}");
    }
    if let Some(nanos) = view.nano_cpus {
        let _ = writeln!(
            text,
            "#SBATCH --cpus-per-task={}",
            slurm_cpus(nanos, target, notices)
        );
    }
    if let Some(memory) = view.memory {
        let _ = writeln!(text, "#SBATCH --mem={}", slurm_memory(memory));
    }
    gpus
}

/// The rendezvous every node's processes meet by: the first node's address, the port, the
/// nodes and the processes per node (its GPUs, else one), and torchrun's names for them.
fn rendezvous(text: &mut String, nodes: u32, gpus: Option<u32>) {
    let _ = writeln!(
        text,
        "MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | sed -n 1p)\n\
         export MASTER_ADDR\n\
         export MASTER_PORT=\"${{MASTER_PORT:-{DEFAULT_MASTER_PORT}}}\"\n\
         export NNODES=\"${{SLURM_JOB_NUM_NODES:-{nodes}}}\"\n\
         export NPROC_PER_NODE=\"${{SLURM_GPUS_ON_NODE:-{}}}\"\n\
         export WORLD_SIZE=$((NNODES * NPROC_PER_NODE))\n\
         export PET_MASTER_ADDR=\"$MASTER_ADDR\" PET_MASTER_PORT=\"$MASTER_PORT\" PET_NNODES=\"$NNODES\" PET_NPROC_PER_NODE=\"$NPROC_PER_NODE\"\n",
        gpus.unwrap_or(1)
    );
}

/// The profile's command as the script's arguments when `sbatch` is given none; a profile
/// without one keeps each node alive until the job's time limit, which is said.
fn default_command(
    text: &mut String,
    view: &BodyView<'_>,
    target: Target,
    notices: &mut Vec<Notice>,
) {
    if view.keeps_alive() {
        notices.push(Notice::new(
            target,
            "command",
            "the profile has no `command`: without `sbatch FILE COMMAND…` each node runs `sleep infinity` until the job's time limit",
        ));
    }
    text.push_str("if [ \"$#\" -eq 0 ]; then\n    set --");
    for word in view.command {
        text.push(' ');
        text.push_str(&shell_quote(word));
    }
    text.push_str("\nfi\n\n");
}

/// The fixed program each task runs through `bash -c`: the node's rank from Slurm, then
/// the words after it. Never built from profile values.
pub(super) const RANKED_TASK: &str =
    "export NODE_RANK=\"$SLURM_NODEID\" PET_NODE_RANK=\"$SLURM_NODEID\"; exec \"$@\"";

/// The rendezvous variables, as `env` arguments a container command starts with: a
/// container started by a daemon does not inherit the task's environment.
const RENDEZVOUS: [&str; 11] = [
    "MASTER_ADDR",
    "MASTER_PORT",
    "NNODES",
    "NODE_RANK",
    "NPROC_PER_NODE",
    "WORLD_SIZE",
    "PET_MASTER_ADDR",
    "PET_MASTER_PORT",
    "PET_NNODES",
    "PET_NODE_RANK",
    "PET_NPROC_PER_NODE",
];

/// `export --to slurm`: each node runs `envctl run PROFILE -- env RENDEZVOUS… "$@"`.
pub fn slurm(input: &ExportInput<'_>, options: SlurmOptions) -> super::Exported {
    let view = BodyView::new(input);
    let mut notices = Vec::new();
    let pinned = view.image.contains("@sha256:");
    let frame = Frame {
        target: Target::Slurm,
        runs_with: "the profile through `envctl run` (Docker), which places the job's GPUs and removes the container when the step ends",
        image: view.image,
        pinned,
    };
    let Script { mut text } = script(&view, options, &frame, &mut notices);
    // The folder envctl resolves the profile and envctl.lock from, as at export time.
    let _ = writeln!(
        text,
        "cd -- {}",
        shell_quote(&input.working_directory.display().to_string())
    );
    let profile = profile_argument(input);
    // The variables reach the container through `env`: the daemon, not the task, starts it.
    let task = format!(
        "export NODE_RANK=\"$SLURM_NODEID\" PET_NODE_RANK=\"$SLURM_NODEID\"; profile=$1; shift; exec envctl run {}\"$profile\" -- env {} \"$@\"",
        if options.trust { "--trust " } else { "" },
        RENDEZVOUS
            .iter()
            .map(|name| format!("{name}=\"${name}\""))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let _ = writeln!(
        text,
        "srun --kill-on-bad-exit=1 bash -c {} envctl-task {} \"$@\"",
        shell_quote(&task),
        shell_quote(&profile)
    );
    if !pinned {
        notices.push(Notice::new(
            Target::Slurm,
            "image",
            "envctl.lock pins no digest for the profile: each node's `envctl run` pulls the tag, which may move between nodes; run `envctl lock` first",
        ));
    }
    super::Exported { text, notices }
}

/// The profile as `envctl run` on a node finds it: the file's absolute path when the
/// export named a file, else the name (found from the folder the script changes to).
fn profile_argument(input: &ExportInput<'_>) -> String {
    let resolved = input.resolved;
    if resolved.source == crate::profile::SourceKind::Path {
        let path = std::path::Path::new(&resolved.file);
        return crate::container_plan::clean(&input.working_directory.join(path))
            .display()
            .to_string();
    }
    resolved.profile.name.clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_in_slurm_units() {
        assert_eq!(slurm_memory(16 << 30), "16G");
        assert_eq!(slurm_memory(1536 << 20), "1536M");
        assert_eq!(slurm_memory((1 << 20) + 1), "2M");
    }

    #[test]
    fn cpus_round_up_with_a_notice() {
        let mut notices = Vec::new();
        assert_eq!(slurm_cpus(8_000_000_000, Target::Slurm, &mut notices), 8);
        assert!(notices.is_empty());
        assert_eq!(slurm_cpus(1_500_000_000, Target::Slurm, &mut notices), 2);
        assert_eq!(notices.len(), 1);
        assert_eq!(slurm_cpus(1, Target::Slurm, &mut notices), 1);
    }
}
