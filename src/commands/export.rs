//! `envctl export PROFILE --to compose|k8s|devcontainer|docker-run|slurm|pyxis|apptainer|edf [-o FILE]`: the same
//! environment for other engines. The mapping lives in `export/` (pure) and the resolution
//! in `ops::export` (the profile, `up`'s create body, `envctl.lock`); this command checks
//! the flags, writes the result to stdout or atomically to `-o FILE`, and prints what a
//! target could not express as warnings on stderr.
//!
//! `--to docker-run` prints exactly what `up --dry-run` prints (same body, same GPU
//! detection for `gpus = "optional"`, same refusal of a missing bind source). The other
//! targets are files for other machines: they are built as for a host with GPUs, and a
//! bind source missing here is a warning, not an error.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::Context;
use crate::error::Error;
use crate::exit::ExitStatus;
use crate::export::{
    self, Exported, KubernetesOptions, Notice, SlurmOptions, Target, VolumeMode, WorkloadKind,
};
use crate::profile::ResolvedProfile;

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// A profile name or path
    #[arg(add = clap_complete::ArgValueCandidates::new(crate::complete::profiles))]
    pub profile: String,
    /// What to write
    #[arg(long, value_enum, value_name = "TARGET")]
    pub to: TargetArgument,
    /// Write to FILE instead of stdout (atomically; an existing FILE only with --force)
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Replace FILE when it exists
    #[arg(long)]
    pub force: bool,
    /// Kubernetes workload that runs the container [default: job]
    #[arg(long, value_enum, ignore_case = true)]
    pub kind: Option<KindArgument>,
    /// How Kubernetes mounts bind sources: the node's path, or a PersistentVolumeClaim
    /// [default: hostpath]
    #[arg(long, value_enum)]
    pub volumes: Option<VolumesArgument>,
    /// Also write a Kubernetes Service for the published ports
    #[arg(long)]
    pub service: bool,
    /// Run on N nodes: a Kubeflow PyTorchJob (k8s), or an sbatch script with N nodes and
    /// the rendezvous (slurm, pyxis, apptainer)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub nodes: Option<u32>,
    /// Leave out the toleration of the `nvidia.com/gpu` NoSchedule taint (k8s)
    #[arg(long)]
    pub no_gpu_toleration: bool,
    /// The pod's RuntimeClass, e.g. `nvidia` where it is not the default runtime (k8s)
    #[arg(long, value_name = "NAME")]
    pub runtime_class: Option<String>,
    /// Ask for MIG devices of this profile, e.g. `1g.10gb` → `nvidia.com/mig-1g.10gb`
    /// (the device plugin's `mixed` strategy) (k8s)
    #[arg(long, value_name = "PROFILE")]
    pub mig_profile: Option<String>,
    /// With `--to slurm`: the profile envctl did not make may have the root-equivalent
    /// settings it asks for (host network, mounts, capabilities) on every node, as `up
    /// --trust`; the script's `envctl run` carries the yes
    #[arg(long)]
    pub trust: bool,
}

/// `--to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TargetArgument {
    /// A compose file (`docker compose up`)
    Compose,
    /// Kubernetes manifests (`kubectl apply -f`)
    #[value(name = "k8s", alias = "kubernetes")]
    Kubernetes,
    /// A devcontainer.json
    Devcontainer,
    /// The `docker run` line (as `up --dry-run`)
    DockerRun,
    /// An sbatch script running `srun envctl run PROFILE` on each node
    Slurm,
    /// An sbatch script running the image through pyxis (`srun --container-image`)
    Pyxis,
    /// An sbatch script running the image through `apptainer exec --nv`
    Apptainer,
    /// A CSCS environment definition (`srun --environment=FILE`)
    Edf,
}

/// `--kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum KindArgument {
    Pod,
    Job,
    Deployment,
}

/// `--volumes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum VolumesArgument {
    #[value(name = "hostpath")]
    HostPath,
    Pvc,
}

/// The `--json` document.
#[derive(Debug, Serialize)]
struct ExportReport<'a> {
    profile: &'a str,
    target: Target,
    /// The file written, or `null` when the content is on stdout (in `content`).
    output: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<&'a str>,
    notices: &'a [Notice],
}

pub fn run(arguments: ExportArgs, context: &Context) -> Result<ExitStatus, Error> {
    let target = target_of(arguments.to);
    check_flags(&arguments, target)?;
    let options = export_options(&arguments);
    let working_directory = context.working_directory()?;
    // `-o -` is stdout, as for most tools that take an output path.
    let output_file = arguments
        .output
        .as_ref()
        .filter(|path| path.as_os_str() != "-")
        .map(|path| working_directory.join(path));
    let crate::ops::export::Export {
        resolved,
        exported,
        missing_sources,
    } = crate::ops::export::export(
        &arguments.profile,
        target,
        options,
        output_file.clone(),
        &crate::ops::trust::Consent::of(arguments.trust, &words_again(&arguments), context),
        context,
    )?;
    warn_missing_sources(&missing_sources, context);
    for notice in &exported.notices {
        context.printer.warn(&notice.to_string());
    }
    give_out(
        &arguments,
        output_file.as_deref(),
        &resolved,
        target,
        &exported,
        context,
    )?;
    Ok(ExitStatus::Success)
}

/// The export target a `--to` names.
fn target_of(to: TargetArgument) -> Target {
    match to {
        TargetArgument::Compose => Target::Compose,
        TargetArgument::Kubernetes => Target::Kubernetes,
        TargetArgument::Devcontainer => Target::Devcontainer,
        TargetArgument::DockerRun => Target::DockerRun,
        TargetArgument::Slurm => Target::Slurm,
        TargetArgument::Pyxis => Target::Pyxis,
        TargetArgument::Apptainer => Target::Apptainer,
        TargetArgument::Edf => Target::Edf,
    }
}

/// The Slurm and Kubernetes options the flags ask for.
fn export_options(arguments: &ExportArgs) -> crate::ops::export::ExportOptions {
    crate::ops::export::ExportOptions {
        slurm: SlurmOptions {
            nodes: arguments.nodes,
            trust: arguments.trust,
        },
        kubernetes: KubernetesOptions {
            kind: match arguments.kind {
                Some(KindArgument::Pod) => WorkloadKind::Pod,
                Some(KindArgument::Deployment) => WorkloadKind::Deployment,
                Some(KindArgument::Job) | None => WorkloadKind::Job,
            },
            volumes: match arguments.volumes {
                Some(VolumesArgument::Pvc) => VolumeMode::Pvc,
                Some(VolumesArgument::HostPath) | None => VolumeMode::HostPath,
            },
            service: arguments.service,
            no_gpu_toleration: arguments.no_gpu_toleration,
            runtime_class: arguments.runtime_class.clone(),
            mig_profile: arguments.mig_profile.clone(),
            nodes: arguments.nodes,
        },
    }
}

/// A warning for every bind mount source that does not exist here.
fn warn_missing_sources(
    missing_sources: &[crate::container_plan::MissingSource],
    context: &Context,
) {
    for source in missing_sources {
        context.printer.warn(&format!(
            "bind mount source `{}` (written `{}`, mounted at `{}`) does not exist here; create it wherever the export runs (`mkdir -p`), or the container will not start",
            source.path.display(),
            source.written,
            source.target
        ));
    }
}

/// Writes the export to `output_file` and says so, or prints it; as JSON with `--json`.
fn give_out(
    arguments: &ExportArgs,
    output_file: Option<&Path>,
    resolved: &ResolvedProfile,
    target: Target,
    exported: &Exported,
    context: &Context,
) -> Result<(), Error> {
    if let Some(path) = output_file {
        write_atomically(path, &exported.text, arguments.force)?;
        let shown = arguments
            .output
            .as_deref()
            .unwrap_or(path)
            .display()
            .to_string();
        if context.json {
            context
                .printer
                .json(&report(resolved, target, Some(shown), None, exported))?;
        } else {
            context.printer.info(&format!("wrote {shown}"));
        }
    } else if context.json {
        context.printer.json(&report(
            resolved,
            target,
            None,
            Some(&exported.text),
            exported,
        ))?;
    } else {
        context.printer.data(exported.text.trim_end_matches('\n'))?;
    }
    Ok(())
}

fn report<'a>(
    resolved: &'a ResolvedProfile,
    target: Target,
    output: Option<String>,
    content: Option<&'a str>,
    exported: &'a Exported,
) -> ExportReport<'a> {
    ExportReport {
        profile: &resolved.profile.name,
        target,
        output,
        content,
        notices: &exported.notices,
    }
}

/// The words after `envctl` that ask for this export again (the trust rule's hint adds
/// `--trust` to them).
fn words_again(arguments: &ExportArgs) -> Vec<String> {
    let mut words = vec![
        "export".to_string(),
        arguments.profile.clone(),
        "--to".into(),
    ];
    words.push(
        clap::ValueEnum::to_possible_value(&arguments.to)
            .map_or_else(|| "slurm".to_string(), |value| value.get_name().to_string()),
    );
    if let Some(nodes) = arguments.nodes {
        words.extend(["--nodes".to_string(), nodes.to_string()]);
    }
    if let Some(output) = &arguments.output {
        words.extend(["-o".to_string(), output.display().to_string()]);
    }
    if arguments.force {
        words.push("--force".into());
    }
    words
}

/// A usage error with its hint.
fn usage(message: String, hint: String) -> Error {
    Error::Usage {
        message,
        hint: Some(hint),
    }
}

/// `--kind`, `--volumes`, `--service`, `--no-gpu-toleration`, `--runtime-class` and
/// `--mig-profile` shape Kubernetes manifests only; `--nodes` also the sbatch scripts.
/// A PyTorchJob (`--to k8s --nodes N`, N > 1) is its own workload: no `--kind` or
/// `--service` with it (the training operator makes each replica's Service).
fn check_flags(arguments: &ExportArgs, target: Target) -> Result<(), Error> {
    check_kubernetes_values(arguments)?;
    let given = flags_not_applying(arguments, target);
    // Only `--to slurm` runs envctl itself (the others run other tools).
    if target != Target::Slurm && arguments.trust {
        return Err(usage(
            format!("--trust only applies to `--to slurm`, not `--to {target}`"),
            "leave out `--trust`: the file is run by another tool, which envctl's trust rule does not govern".into(),
        ));
    }
    if !given.is_empty() {
        let only = if given == ["--nodes"] {
            "`--to k8s`, `slurm`, `pyxis` or `apptainer`"
        } else {
            "`--to k8s`"
        };
        return Err(usage(
            format!(
                "{} only apply to {only}, not `--to {target}`",
                given.join(", ")
            ),
            format!("drop {}, or export with {only}", given.join(", ")),
        ));
    }
    if target == Target::Kubernetes && arguments.nodes.is_some_and(|nodes| nodes > 1) {
        check_pytorch_job(arguments)?;
    }
    Ok(())
}

/// `--runtime-class` and `--mig-profile` are names Kubernetes accepts.
fn check_kubernetes_values(arguments: &ExportArgs) -> Result<(), Error> {
    if let Some(name) = &arguments.runtime_class {
        export::check_runtime_class(name)
            .map_err(|message| usage(message, "for example: --runtime-class nvidia".into()))?;
    }
    if let Some(profile) = &arguments.mig_profile {
        export::check_mig_profile(profile).map_err(|message| {
            usage(
                message,
                "list the node's profiles with `nvidia-smi mig -lgip`; for example: --mig-profile 1g.10gb".into(),
            )
        })?;
    }
    Ok(())
}

/// The flags given that do not shape `target`'s file, in the order they are listed.
fn flags_not_applying(arguments: &ExportArgs, target: Target) -> Vec<&'static str> {
    let nodes_apply = matches!(
        target,
        Target::Kubernetes | Target::Slurm | Target::Pyxis | Target::Apptainer
    );
    let mut given: Vec<&'static str> = Vec::new();
    if target != Target::Kubernetes {
        given.extend(
            [
                (arguments.kind.is_some(), "--kind"),
                (arguments.volumes.is_some(), "--volumes"),
                (arguments.service, "--service"),
                (arguments.no_gpu_toleration, "--no-gpu-toleration"),
                (arguments.runtime_class.is_some(), "--runtime-class"),
                (arguments.mig_profile.is_some(), "--mig-profile"),
            ]
            .into_iter()
            .filter_map(|(given, flag)| given.then_some(flag)),
        );
    }
    if !nodes_apply && arguments.nodes.is_some() {
        given.push("--nodes");
    }
    given
}

/// A PyTorchJob takes no `--kind` or `--service`.
fn check_pytorch_job(arguments: &ExportArgs) -> Result<(), Error> {
    let clashing: Vec<&str> = [
        (arguments.kind.is_some(), "--kind"),
        (arguments.service, "--service"),
    ]
    .into_iter()
    .filter_map(|(given, flag)| given.then_some(flag))
    .collect();
    if !clashing.is_empty() {
        return Err(usage(
            format!(
                "`--nodes` writes a Kubeflow PyTorchJob, which takes no {}",
                clashing.join(" or ")
            ),
            format!(
                "drop {} (the training operator makes each replica's pod and Service)",
                clashing.join(", ")
            ),
        ));
    }
    Ok(())
}

/// Writes `text` to `path` whole (`crate::files`): an existing file only with `--force`,
/// and never anything but a regular file.
fn write_atomically(path: &Path, text: &str, force: bool) -> Result<(), Error> {
    let existing = if force {
        crate::files::Existing::Replace
    } else {
        crate::files::Existing::Refuse
    };
    crate::files::write_atomically(path, text.as_bytes(), existing).map_err(|error| {
        Error::from_write(
            path,
            error,
            "pass `--force` to replace it, or choose another `-o` path",
        )
    })
}
