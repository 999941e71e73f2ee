//! `export --to edf`: a CSCS environment definition file (TOML), used as `srun
//! --environment=FILE COMMAND` on the CSCS Alps systems (their container engine runs
//! pyxis/enroot underneath). Keys, from CSCS's reference: `image` (enroot's
//! `REGISTRY#IMAGE` spelling), `mounts` (`"SRC:DST"` strings), `workdir`, and the `[env]`
//! table. The file holds no resources and no command: Slurm's own flags ask for those.
//! What it cannot carry is said as notices ([`super::hpc_runtime`]).

use super::hpc_runtime::{binds, runtime_notices};
use super::pyxis::enroot_image;
use super::view::BodyView;
use super::{ExportError, ExportInput, Exported, Notice, Target};

const TARGET: Target = Target::Edf;

pub fn edf(input: &ExportInput<'_>) -> Result<Exported, ExportError> {
    let view = BodyView::new(input);
    let mut notices = Vec::new();
    runtime_notices(&view, TARGET, &mut notices);
    let name = view.profile_name;
    let mut text = format!(
        "# CSCS environment definition for envctl profile `{name}` (`envctl export {name} --to edf`).\n\
         # Use: `srun --environment=$PWD/FILE COMMAND`; GPUs, CPUs and memory are Slurm's flags (`--gpus-per-node`, …).\n"
    );
    text.push_str(&format!(
        "image = {}\n",
        toml_string(&enroot_image(view.image))
    ));
    let binds = binds(&view, TARGET, &mut notices)?;
    if !binds.is_empty() {
        let mounts: Vec<String> = binds
            .iter()
            .map(|bind| {
                toml_string(&format!(
                    "{}:{}{}",
                    bind.source_text,
                    bind.target,
                    if bind.read_only { ":ro" } else { "" }
                ))
            })
            .collect();
        text.push_str(&format!("mounts = [{}]\n", mounts.join(", ")));
    }
    if let Some(workdir) = view.working_dir {
        text.push_str(&format!("workdir = {}\n", toml_string(workdir)));
    }
    let plain: Vec<&(String, String)> = view
        .environment
        .iter()
        .filter(|(key, _)| !view.is_secret(key))
        .collect();
    if !plain.is_empty() {
        text.push_str("\n[env]\n");
        for (key, value) in plain {
            text.push_str(&format!("{} = {}\n", toml_string(key), toml_string(value)));
        }
    }
    if !view.secrets.is_empty() {
        notices.push(Notice::new(
            TARGET,
            "env",
            format!(
                "secret values are not written: export {} before `srun`; the job's environment reaches the container",
                view.secrets.join(", ")
            ),
        ));
    }
    if !view.keeps_alive() {
        notices.push(Notice::new(
            TARGET,
            "command",
            format!(
                "an environment definition holds no command: run it as `srun --environment=FILE {}`",
                view.command.iter().map(|word| crate::container_plan::shell_quote(word)).collect::<Vec<_>>().join(" ")
            ),
        ));
    }
    Ok(Exported { text, notices })
}

/// A TOML basic string: `"`, `\` and control characters escaped.
fn toml_string(text: &str) -> String {
    let mut quoted = String::from("\"");
    for character in text.chars() {
        match character {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            '\n' => quoted.push_str("\\n"),
            '\t' => quoted.push_str("\\t"),
            '\r' => quoted.push_str("\\r"),
            c if c.is_control() => quoted.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_strings_read_back() {
        for text in ["plain", "a \"quoted\" \\ path", "line\nbreak\u{1b}", "ünï"] {
            let document = format!("value = {}\n", toml_string(text));
            let table: toml::Table = document.parse().unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(table["value"].as_str(), Some(text));
        }
    }
}
