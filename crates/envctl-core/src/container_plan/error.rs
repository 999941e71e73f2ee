//! What stops a profile from becoming a create body: a bind source that is not there, a
//! value Docker cannot hold, a bad `up -e/-p/-v` override. Each error has a hint.

use std::path::PathBuf;

use thiserror::Error;

/// A bind mount whose host folder or file does not exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingSource {
    /// The absolute host path envctl looked for.
    pub path: PathBuf,
    /// The source as the profile (or `-v`) wrote it: `./data`, `~/datasets`.
    pub written: String,
    /// Where it would be mounted in the container.
    pub target: String,
}

#[derive(Debug, Clone, PartialEq, Error)]
pub enum SpecError {
    /// Refused before anything is created: Docker would otherwise create an empty,
    /// root-owned folder on the host (`-v`), or fail at create (`--mount`).
    #[error("{}", missing_message(missing))]
    MissingBindSources { missing: Vec<MissingSource> },
    #[error("mount source `{written}` starts with `~`, but the home folder is unknown")]
    HomeUnknown { written: String },
    #[error(
        "mount source `{written}` names another user's home folder, which envctl does not expand"
    )]
    OtherUsersHome { written: String },
    #[error("mount source `{written}` resolves to `{}`, which is not an absolute path", path.display())]
    NotAbsolute { written: String, path: PathBuf },
    #[error("mount source `{}` is not valid UTF-8, which the Engine API cannot carry", path.display())]
    NotUnicode { path: PathBuf },
    #[error("`cpus` = {cpus} does not fit Docker's NanoCpus (CPUs × 10⁹ in a 64-bit integer)")]
    CpusOutOfRange { cpus: f64 },
    #[error("`{key}` = {bytes} bytes does not fit Docker's 64-bit signed size")]
    SizeOutOfRange { key: &'static str, bytes: u64 },
    #[error("`{flag} {spec}`: {message}")]
    InvalidOverride {
        flag: &'static str,
        spec: String,
        message: String,
    },
    #[error("ports `{first}` and `{second}` publish the same host port")]
    PortConflict { first: String, second: String },
    #[error(
        "the ports (the profile's and `-p`) expand to more than {limit} port bindings: with `{binding}` they make {expanded}"
    )]
    TooManyPortBindings {
        binding: String,
        expanded: u32,
        limit: u32,
    },
    /// `-p` on a profile whose network publishes nothing: Docker would drop the ports
    /// with a warning nobody reads.
    #[error("`-p {binding}`: the profile's `network = \"{network}\"` publishes no port")]
    PortsWithoutNetwork { binding: String, network: String },
}

impl SpecError {
    /// A command to run or a change to make.
    pub fn hint(&self) -> Option<String> {
        match self {
            SpecError::MissingBindSources { missing } => {
                let paths: Vec<String> = missing
                    .iter()
                    .map(|source| super::docker_run::shell_quote(&source.path.to_string_lossy()))
                    .collect();
                let pronoun = if missing.len() == 1 { "it" } else { "them" };
                Some(format!(
                    "create {pronoun} first: `mkdir -p {}` (envctl never lets Docker create host folders: they would belong to root), or fix the mount's source",
                    paths.join(" ")
                ))
            }
            SpecError::HomeUnknown { .. } => {
                Some("set HOME, or write the source as an absolute path".into())
            }
            SpecError::OtherUsersHome { .. } => {
                Some("write the source as an absolute path (`/home/NAME/…`)".into())
            }
            SpecError::NotAbsolute { .. } => {
                Some("write the source as an absolute path, or as `./PATH` from an absolute working directory".into())
            }
            SpecError::NotUnicode { .. } => {
                Some("rename the folder, or mount a parent whose path is valid UTF-8".into())
            }
            SpecError::CpusOutOfRange { .. } => {
                Some("use a CPU count between 0.000000001 and the host's CPUs".into())
            }
            SpecError::SizeOutOfRange { key, .. } => {
                Some(format!("use a smaller `{key}`, like \"16g\""))
            }
            SpecError::InvalidOverride { flag, .. } => Some(match *flag {
                "-e" => "write `-e KEY=value`, or `-e KEY` to pass KEY from your environment".into(),
                "-p" => "write `-p 8888:8888`, `-p 127.0.0.1:8888:8888` or `-p 8888:8888/udp`".into(),
                // Each flag its own example: `--gpus 0` was given the mounts' (issue 40).
                "--ulimit" => "write `--ulimit memlock=65536`, `--ulimit nofile=1024:4096` (soft:hard) or `--ulimit memlock=-1` (unlimited)".into(),
                "--gpus" => "write `--gpus all`, `--gpus none`, a count (`--gpus 2`) or `--gpus device=0,1`".into(),
                _ => "write `-v ./data:/data`, `-v /abs/path:/data:ro` or `-v VOLUME:/data`".into(),
            }),
            SpecError::PortConflict { .. } => {
                Some("pick another host port for one of them (`-p HOST:CONTAINER`)".into())
            }
            SpecError::PortsWithoutNetwork { network, .. } => Some(if network == "host" {
                "drop `-p`: with the host's network the container's ports are the host's already".into()
            } else {
                "drop `-p`, or use a profile without `network = \"none\"`".into()
            }),
            SpecError::TooManyPortBindings { .. } => Some(
                "Docker publishes each port of a range as a binding of its own; publish fewer or shorter ranges".into(),
            ),
        }
    }
}

fn missing_message(missing: &[MissingSource]) -> String {
    match missing {
        [source] => format!(
            "bind mount source `{}` (written `{}`, mounted at `{}`) does not exist",
            source.path.display(),
            source.written,
            source.target
        ),
        _ => {
            let paths: Vec<String> = missing
                .iter()
                .map(|source| format!("`{}`", source.path.display()))
                .collect();
            format!(
                "{} bind mount sources do not exist: {}",
                missing.len(),
                paths.join(", ")
            )
        }
    }
}
