//! `envctl export`'s work: the profile resolved into `up`'s create body (for this host
//! with `--to docker-run`, else for a GPU host elsewhere), `envctl.lock` applied, and the
//! environment mapped into the target's form by `export/` (pure). The command checks the
//! flags, writes the text and says the notices.

use std::path::{Path, PathBuf};

use crate::container_plan::{self, Overrides};
use crate::context::Context;
use crate::error::Error;
use crate::export::{
    self, ExportError, ExportInput, Exported, KubernetesOptions, Notice, SlurmOptions, Target,
};
use crate::ops::environment::{self, EnvironmentRequest, LockPolicy, Placement};
use crate::profile::ResolvedProfile;

/// How the targets that take options are shaped.
pub struct ExportOptions {
    pub slurm: SlurmOptions,
    pub kubernetes: KubernetesOptions,
}

/// What an export made: the text and its notices, for the profile resolved, and the bind
/// sources missing on this machine (the files are for other machines: said, not refused).
pub struct Export {
    pub resolved: ResolvedProfile,
    pub exported: Exported,
    pub missing_sources: Vec<container_plan::MissingSource>,
}

/// Exports `profile` to `target`; `output_file` (absolute) is where the text will be
/// written, which the targets that name files relative to it read.
pub fn export(
    profile: &str,
    target: Target,
    options: ExportOptions,
    output_file: Option<PathBuf>,
    trust: &crate::ops::trust::Consent,
    context: &Context,
) -> Result<Export, Error> {
    let resolved = context.search_path.resolve(profile)?;
    let mut options = options;
    // `--to slurm` runs `envctl run` on every node: the trust rule is met here, once, by
    // whoever exports (`--trust`, or `envctl trust` on this machine), and the script
    // carries that yes, since the nodes' trust records are not this machine's.
    if target == Target::Slurm {
        let trusted = crate::ops::trust::gate(&resolved, trust, context)?;
        options.slurm.trust = !trusted.is_empty();
    }
    let working_directory = context.working_directory()?;
    let home = context.environment.home();
    let lock = environment::read_lock();
    let exists = |path: &Path| path.exists();
    let (placement, lock_policy) = placement_for(target, &resolved, context);
    let environment = environment::resolve(
        resolved,
        EnvironmentRequest {
            overrides: Overrides::default(),
            placement,
            lock_policy,
            lock,
            working_directory: working_directory.clone(),
            home: home.clone(),
            path_exists: &exists,
        },
    )?;
    let resolved = &environment.resolved;
    let body = &environment.body;
    let is_file = |path: &Path| path.is_file();
    let input = ExportInput {
        resolved,
        body,
        working_directory,
        home,
        output_file,
        path_is_file: &is_file,
    };
    let mut exported = exported_as(target, &input, options).map_err(export_error)?;
    if let Some(reason) = &environment.lock_notice {
        exported
            .notices
            .insert(0, Notice::new(target, "image", reason.clone()));
    }
    Ok(Export {
        resolved: environment.resolved,
        exported,
        missing_sources: environment.missing_sources,
    })
}

/// Where the export's container runs: `--to docker-run` is `up --dry-run` (this host's
/// GPUs, its bind sources, and a lock that cannot be read is an error); the other
/// targets' files are for other machines.
fn placement_for(
    target: Target,
    resolved: &ResolvedProfile,
    context: &Context,
) -> (Placement, LockPolicy) {
    if target == Target::DockerRun {
        let gpu_facts =
            environment::host_gpus(resolved, context.environment.nvml_library().as_deref());
        (Placement::this_host(gpu_facts.as_ref()), LockPolicy::Use)
    } else {
        (Placement::Elsewhere, LockPolicy::Report)
    }
}

/// The text of `target` for `input`.
fn exported_as(
    target: Target,
    input: &ExportInput<'_>,
    options: ExportOptions,
) -> Result<Exported, ExportError> {
    match target {
        Target::DockerRun => Ok(export::docker_run(
            input.body,
            &container_plan::container_name(&input.resolved.profile.name),
        )),
        Target::Compose => export::compose(input),
        Target::Devcontainer => export::devcontainer(input),
        Target::Slurm => Ok(export::slurm(input, options.slurm)),
        Target::Pyxis => export::pyxis(input, options.slurm),
        Target::Apptainer => export::apptainer(input, options.slurm),
        Target::Edf => export::edf(input),
        Target::Kubernetes => export::kubernetes(input, options.kubernetes),
    }
}

/// An export's failure as envctl's error: a profile the target cannot express is the
/// profile's; a text that cannot be serialised is a bug.
fn export_error(error: ExportError) -> Error {
    match error {
        ExportError::Spec(error) => Error::Spec(error),
        other @ ExportError::Serialize { .. } => Error::Usage {
            message: other.to_string(),
            hint: Some("this is a bug in envctl; please report it with the profile".into()),
        },
    }
}
