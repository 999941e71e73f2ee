//! `export --to apptainer`: the sbatch script of [`super::slurm`], each node running
//! `apptainer exec --nv docker://IMAGE …` (Apptainer's man page: `--nv` binds the NVIDIA
//! libraries and every GPU device, which Slurm's cgroup narrows to the job's; `--bind
//! SRC:DST[:ro]`; `--env NAME=VALUE`; `--pwd DIR`).
//!
//! `--env` splits its value at commas (apptainer/singularity#6088), so a value holding
//! one is exported as `APPTAINERENV_NAME` instead, which Apptainer also sets in the
//! container; a secret is `APPTAINERENV_NAME="${NAME}"`, checked, never written. A pinned
//! image is pulled by digest alone (`docker://REPOSITORY@sha256:…`). What Apptainer
//! cannot carry is said as notices ([`super::hpc_runtime`]).

use std::fmt::Write as _;

use super::hpc_runtime::{binds, is_pinned, is_shell_name, runtime_notices};
use super::slurm::{Frame, RANKED_TASK, Script, SlurmOptions, script};
use super::view::{BodyView, Gpus};
use super::{ExportError, ExportInput, Exported, Notice, Target};
use crate::container_plan::shell_quote;
use crate::profile::image::ImageReference;

const TARGET: Target = Target::Apptainer;

/// `docker://…` for Apptainer: a pinned reference by its digest alone.
pub fn apptainer_image(image: &str) -> String {
    match image.parse::<ImageReference>() {
        Ok(ImageReference {
            registry,
            repository,
            digest: Some(digest),
            ..
        }) => match registry {
            Some(registry) => format!("docker://{registry}/{repository}@{digest}"),
            None => format!("docker://{repository}@{digest}"),
        },
        _ => format!("docker://{image}"),
    }
}

pub fn apptainer(input: &ExportInput<'_>, options: SlurmOptions) -> Result<Exported, ExportError> {
    let view = BodyView::new(input);
    let mut notices = Vec::new();
    let image = apptainer_image(view.image);
    let frame = Frame {
        target: TARGET,
        runs_with: "the image through `apptainer exec`, in the job's cgroup; it ends with the task",
        image: &image,
        pinned: is_pinned(&image),
    };
    let Script { mut text } = script(&view, options, &frame, &mut notices);
    runtime_notices(&view, TARGET, &mut notices);
    let mut flags: Vec<String> = vec!["exec".into()];
    if view.gpus != Gpus::None {
        flags.push("--nv".into());
    }
    for bind in binds(&view, TARGET, &mut notices)? {
        let rest = format!(
            ":{}{}",
            bind.target,
            if bind.read_only { ":ro" } else { "" }
        );
        flags.push(format!("--bind {}{}", bind.source_word, shell_quote(&rest)));
    }
    for (key, value) in &view.environment {
        if view.is_secret(key) || value.contains(',') {
            if !is_shell_name(key) {
                notices.push(Notice::new(
                    TARGET,
                    format!("env.{key}"),
                    "a shell cannot export this name as APPTAINERENV_…: not set",
                ));
                continue;
            }
            if view.is_secret(key) {
                let _ = writeln!(
                    text,
                    "export APPTAINERENV_{key}=\"${{{key}:?export {key} before sbatch: the profile secret is not written here}}\""
                );
            } else {
                let _ = writeln!(text, "export APPTAINERENV_{key}={}", shell_quote(value));
            }
        } else {
            flags.push(format!("--env {}", shell_quote(&format!("{key}={value}"))));
        }
    }
    if !view.secrets.is_empty() {
        notices.push(Notice::new(
            TARGET,
            "env",
            format!(
                "secret values are not written: export {} in the shell that runs sbatch; the script passes them as APPTAINERENV_*",
                view.secrets.join(", ")
            ),
        ));
    }
    if let Some(workdir) = view.working_dir {
        flags.push(format!("--pwd {}", shell_quote(workdir)));
    }
    flags.push(shell_quote(&image));
    // The rank is set on the node, before apptainer: the container inherits the task's
    // environment.
    let _ = writeln!(
        text,
        "srun --kill-on-bad-exit=1 sh -c {} envctl-task apptainer {} \"$@\"",
        shell_quote(RANKED_TASK),
        flags.join(" ")
    );
    Ok(Exported { text, notices })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_images_are_pulled_by_digest() {
        let digest = format!("sha256:{}", "b".repeat(64));
        assert_eq!(
            apptainer_image(&format!("nvcr.io/nvidia/pytorch:25.01-py3@{digest}")),
            format!("docker://nvcr.io/nvidia/pytorch@{digest}")
        );
        assert_eq!(apptainer_image("busybox:1.36"), "docker://busybox:1.36");
    }
}
