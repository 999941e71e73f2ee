//! `export --to pyxis`: the sbatch script of [`super::slurm`], each node running
//! `srun --container-image=REGISTRY#IMAGE …` through NVIDIA's pyxis plugin (enroot).
//!
//! The flags, as pyxis's `args.c` defines them: `--container-image=[USER@][REGISTRY#]IMAGE[:TAG]`
//! (enroot's URI: `#` between registry and image; the digest `IMAGE:TAG@sha256:…` needs
//! enroot 4.0 or later), `--container-mounts=SRC:DST[:FLAGS][,…]` (flags `ro`),
//! `--container-workdir=PATH`, `--container-env=NAME[,…]` (names whose values the job's
//! environment gives and which override the image's). The profile's variables are
//! exported by the script; a secret must be exported by whoever submits the job, and the
//! script stops when it is not. pyxis runs the task's command inside the container, so
//! each node's rank is set there, by the image's `sh` (`sh -c 'export NODE_RANK=…; exec
//! "$@"'`). What pyxis cannot carry is said as notices ([`super::hpc_runtime`]).

use std::fmt::Write as _;

use super::hpc_runtime::{binds, is_pinned, is_shell_name, runtime_notices};
use super::slurm::{Frame, RANKED_TASK, Script, SlurmOptions, script};
use super::view::BodyView;
use super::{ExportError, ExportInput, Exported, Notice, Target};
use crate::container_plan::shell_quote;
use crate::profile::image::ImageReference;

const TARGET: Target = Target::Pyxis;

/// enroot's spelling of an image reference: `nvcr.io#nvidia/pytorch:25.01-py3`; the
/// registry (when the reference names one) before `#`.
pub fn enroot_image(image: &str) -> String {
    match image.parse::<ImageReference>() {
        Ok(reference) => {
            let mut text = String::new();
            if let Some(registry) = &reference.registry {
                text.push_str(registry);
                text.push('#');
            }
            text.push_str(&reference.repository);
            if let Some(tag) = &reference.tag {
                text.push(':');
                text.push_str(tag);
            }
            if let Some(digest) = &reference.digest {
                text.push('@');
                text.push_str(digest);
            }
            text
        }
        Err(_) => image.to_string(),
    }
}

pub fn pyxis(input: &ExportInput<'_>, options: SlurmOptions) -> Result<Exported, ExportError> {
    let view = BodyView::new(input);
    let mut notices = Vec::new();
    let image = enroot_image(view.image);
    let pinned = is_pinned(&image);
    let frame = Frame {
        target: TARGET,
        runs_with: "the image through pyxis (`srun --container-image`); the container ends with the task",
        image: &image,
        pinned,
    };
    let Script { mut text } = script(&view, options, &frame, &mut notices);
    runtime_notices(&view, TARGET, &mut notices);
    if pinned {
        notices.push(Notice::new(
            TARGET,
            "image",
            "the image is pinned by digest (`IMAGE:TAG@sha256:…`), which enroot reads from version 4.0 on; with an older enroot, drop `@sha256:…`",
        ));
    }
    let names = environment(&view, &mut text, &mut notices);
    let mut flags = vec![format!("--container-image={}", shell_quote(&image))];
    let binds = binds(&view, TARGET, &mut notices)?;
    if !binds.is_empty() {
        let mut value = String::from("--container-mounts=");
        for (index, bind) in binds.iter().enumerate() {
            if index > 0 {
                value.push(',');
            }
            value.push_str(&bind.source_word);
            let rest = format!(
                ":{}{}",
                bind.target,
                if bind.read_only { ":ro" } else { "" }
            );
            value.push_str(&shell_quote(&rest));
        }
        flags.push(value);
    }
    if let Some(workdir) = view.working_dir {
        flags.push(format!("--container-workdir={}", shell_quote(workdir)));
    }
    if !names.is_empty() {
        flags.push(format!("--container-env={}", names.join(",")));
    }
    // The rank is set inside the container: pyxis runs the task's command there.
    let _ = writeln!(
        text,
        "srun --kill-on-bad-exit=1 {} sh -c {} envctl-task \"$@\"",
        flags.join(" "),
        shell_quote(RANKED_TASK)
    );
    Ok(Exported { text, notices })
}

/// Exports the profile's variables in the script (a secret is checked, never written)
/// and returns the names for `--container-env`.
fn environment(view: &BodyView<'_>, text: &mut String, notices: &mut Vec<Notice>) -> Vec<String> {
    let mut names = Vec::new();
    for (key, value) in &view.environment {
        if !is_shell_name(key) {
            notices.push(Notice::new(
                TARGET,
                format!("env.{key}"),
                "a shell cannot export this name, so the job cannot hand it to pyxis: not set",
            ));
            continue;
        }
        if view.is_secret(key) {
            let _ = writeln!(
                text,
                ": \"${{{key}:?export {key} before sbatch: the profile secret is not written here}}\""
            );
            let _ = writeln!(text, "export {key}");
        } else {
            let _ = writeln!(text, "export {key}={}", shell_quote(value));
        }
        names.push(key.clone());
    }
    if !view.secrets.is_empty() {
        notices.push(Notice::new(
            TARGET,
            "env",
            format!(
                "secret values are not written: export {} in the shell that runs sbatch (the job's environment reaches the container)",
                view.secrets.join(", ")
            ),
        ));
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enroot_puts_the_registry_before_a_hash() {
        assert_eq!(
            enroot_image("nvcr.io/nvidia/pytorch:25.01-py3"),
            "nvcr.io#nvidia/pytorch:25.01-py3"
        );
        assert_eq!(
            enroot_image("pytorch/pytorch:2.8.0"),
            "pytorch/pytorch:2.8.0"
        );
        assert_eq!(enroot_image("busybox"), "busybox");
        let digest = format!("sha256:{}", "a".repeat(64));
        assert_eq!(
            enroot_image(&format!(
                "registry.example.com:5000/team/train:1.0@{digest}"
            )),
            format!("registry.example.com:5000#team/train:1.0@{digest}")
        );
    }
}
