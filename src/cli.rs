//! The command line, as clap derive types only: no behaviour lives here.

use clap::{Args, Parser, Subcommand};
use clap_complete::Shell;

use crate::ui::ColorChoice;

/// Make a GPU deep-learning environment identical on every machine of a team, and visible
/// while it runs.
#[derive(Debug, Parser)]
#[command(name = "envctl", version, about, long_about = None, max_term_width = 100)]
#[command(after_help = "Profiles are found in ./envctl/, $ENVCTL_PROFILE_PATH, \
$XDG_CONFIG_HOME/envctl/profiles/, then the bundled ones.\nExit codes: 0 ok, 1 a check failed, 2 usage or invalid input.")]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Print one JSON document (with `schema_version`) on stdout instead of text
    #[arg(long, global = true)]
    pub json: bool,
    /// Print only data and errors
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Print more detail on stderr
    #[arg(short, long, global = true)]
    pub verbose: bool,
    /// When to colour the output (NO_COLOR is honoured with `auto`)
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,
    /// The daemon to talk to (`unix:///…`, `tcp://…`), as `docker -H`
    #[arg(short = 'H', long, global = true, value_name = "URL")]
    pub host: Option<String>,
    /// The docker CLI context to use (`docker context ls`), as `docker --context`
    #[arg(long, global = true, value_name = "NAME")]
    pub context: Option<String>,
    /// Act on a container another user made, when named by TARGET (exec, shell, logs,
    /// down, stats); `up --recreate` never replaces another user's container
    #[arg(long, global = true)]
    pub other_user: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check this host (driver, GPUs, Docker, NVIDIA runtime) and each profile against it
    Doctor(crate::commands::doctor::DoctorArgs),
    /// The doctor's verdicts for a host you describe: driver, GPUs, image CUDA and torch
    #[command(
        after_help = "Examples:\n  envctl compat --profile pytorch-2.8 --driver 550.54.15 --gpu \"RTX 4090\"\n  envctl compat --torch 2.8.0+cu128 --driver 570.124.06 --cc 9.0 --cc 7.0\n  envctl compat --image-cuda 13.0 --driver 570.124.06 --gpu H100",
        group = clap::ArgGroup::new("stack")
            .args(["profile", "image_cuda", "torch"])
            .required(true)
            .multiple(true),
        group = clap::ArgGroup::new("gpus")
            .args(["gpu", "cc"])
            .required(true)
            .multiple(true)
    )]
    Compat(crate::commands::compat::CompatArgs),
    /// List, show, check and create profiles
    #[command(subcommand)]
    Profiles(ProfilesCommand),
    /// Check, pull, create and start a profile's container (detached)
    Up(crate::commands::up::UpArgs),
    /// Run a command in a running container; its exit code is envctl's
    #[command(
        override_usage = "envctl exec [OPTIONS] [TARGET] CMD [ARGS]...\n       envctl exec [OPTIONS] [TARGET] NAME [ARGS]...\n       envctl exec [OPTIONS] [TARGET] -- CMD [ARGS]...",
        after_help = "The grammar is docker exec's: envctl's flags come before TARGET, and every word \
after the command is the command's (`envctl exec -it C ls -la`, `envctl exec C sh -c 'echo hi'`).\n\n\
TARGET is a container name or id (12+ hex digits), else a profile name or path. It may be \
left out when it is obvious: the only running container of a profile in ./envctl/, else the \
only running envctl container; otherwise envctl lists them (exit 2). A first word that names \
no container or profile is the command, run in that obvious container; followed by `--` it must be a \
TARGET or a NAME.\n\n\
The word after TARGET is a NAME when the container's profile names it in [commands] (or is \
nvidia-check): the profile's command runs, with the words after it (and after an optional \
`--`) appended. Any other word is the command itself, as with docker exec; `--` before it \
says so plainly (`envctl exec C -- train` runs `train`, not the profile's command). With -v \
envctl says which it ran.\n\n\
nvidia-check takes --quick and --timeout SECONDS, before TARGET or after the name.\n\n\
Ctrl-C (SIGINT) and SIGTERM are passed on to the command (without -t; with -t Ctrl-C is a \
key the command reads), and envctl then ends with the command's exit code; a second signal \
ends envctl at once and leaves the command running. Passing on needs a daemon on this host \
and `kill` in the image. -d starts the command detached, as docker exec -d \
does, and returns at once (exit 0); its output is discarded.\n\n\
Examples:\n  envctl exec pytorch-2.8 python train.py --epochs 3\n  envctl exec -it pytorch-2.8 bash\n  envctl exec -e CUDA_VISIBLE_DEVICES=0 -w /work pytorch-2.8 python train.py\n  envctl exec -d pytorch-2.8 python serve.py   (in the background)\n  envctl exec python train.py                  (the obvious container)\n  envctl exec nvidia-check --quick             (the CUDA check, in the obvious container)\n  envctl exec pytorch-2.8 versions             (a command of the profile's [commands])\n  envctl exec pytorch-2.8 train --epochs 3     (the profile's `train`, with two more words)\n  envctl exec pytorch-2.8 -- train             (the image's own `train`)"
    )]
    Exec(crate::commands::exec::ExecArgs),
    /// Open an interactive shell (bash when the image has it, else sh)
    Shell(crate::commands::exec::ShellArgs),
    /// List envctl's containers: profile, image, status, ports, GPUs, drift
    Ps(crate::commands::ps::PsArgs),
    /// Stop a container (host data is never touched)
    Down(crate::commands::down::DownArgs),
    /// Run a command in a new container of a profile, in the foreground; removed at its end
    ///
    /// Makes the profile's container as `up` does, with the command as its main process,
    /// follows its output, and stops and removes it when the command ends or at SIGTERM,
    /// SIGINT or SIGHUP (within --stop-timeout).
    #[command(
        after_help = "The command's exit code is envctl's (129, 130, 143 after SIGHUP, SIGINT, SIGTERM).\n\
Inside a Slurm job the container gets the job's GPUs, memory and CPUs (docs/clusters.md).\n\n\
Examples:\n  envctl run pytorch-2.8 -- python train.py --epochs 3\n  srun --gres=gpu:2 envctl run pytorch-2.8 -- torchrun --nproc-per-node 2 train.py\n  envctl run pytorch-2.8            (the profile's `command`, else the image's)"
    )]
    Run(crate::commands::run::RunArgs),
    /// Check CUDA in this environment, without a container
    ///
    /// Runs nvidia-check's scripts here (a pyxis or Apptainer container, a conda env, a
    /// bare-metal node) with the same findings, JSON and exit codes; in a Slurm job, torch
    /// must see exactly the job's GPUs. In a container: `envctl exec TARGET nvidia-check`.
    NvidiaCheck(crate::commands::nvidia_check::NvidiaCheckArgs),
    /// Print a container's logs
    Logs(crate::commands::logs::LogsArgs),
    /// The same environment for docker compose, Kubernetes, devcontainers or docker run
    Export(crate::commands::export::ExportArgs),
    /// Container CPU/memory next to GPU utilisation, memory, temperature and power
    Stats(crate::commands::stats::StatsArgs),
    /// Pin image tags to digests in envctl.lock
    Lock(crate::commands::lock::LockArgs),
    /// Newer tags of the same family, and new digests behind the same tag
    Outdated(crate::commands::outdated::OutdatedArgs),
    /// Trust a repository profile's root-equivalent settings until its files change
    ///
    /// Records each profile file (its real path and SHA-256) that gives the profile host
    /// mounts, engine sockets, SYS_ADMIN, host network or IPC, or disk devices in
    /// $XDG_CONFIG_HOME/envctl/trusted.json, so `up` and `run` need no --trust for it.
    Trust(crate::commands::trust::TrustArgs),
    /// Reach a remote container's published ports from this machine, through ssh
    ///
    /// Opens 127.0.0.1:PORT here for each TCP port the container publishes on its host
    /// (envctl publishes on the host's loopback), through the ssh route of an ssh://
    /// endpoint, until Ctrl-C. A daemon of this machine needs none: its ports are here.
    #[command(
        after_help = "Examples:\n  envctl -H ssh://gpu2 forward train          (Jupyter of `train` at http://127.0.0.1:8888)\n  envctl forward train 8888 6006"
    )]
    Forward(crate::commands::forward::ForwardArgs),
    /// Keep a policy at the daemon for every client of it, and show the policies in force
    ///
    /// `envctl policy push FILE` keeps the admin's policy at the daemon (`-H`, a context or
    /// DOCKER_HOST names it): every client obeys it, from any machine, and a client's own
    /// policy file can tighten it but never loosen it.
    Policy(crate::commands::policy::PolicyArgs),
    /// Look after this host's GPUs: `gpu clear` ends a GPU's keep-out after a fatal Xid
    ///
    /// A fatal Xid seen by `envctl stats` keeps the GPU out of every `up` on this host
    /// until a reboot or `envctl gpu clear UUID|INDEX` (docs/gpu-health.md).
    Gpu(crate::commands::gpu::GpuArgs),
    /// Print a shell completion script
    Completions(CompletionsArgs),
}

#[derive(Debug, Subcommand)]
pub enum ProfilesCommand {
    /// List the profiles envctl finds, with where each comes from
    List,
    /// Print a profile with `extends` applied, and which file set each key
    Show(crate::commands::profiles::ShowArgs),
    /// Validate profile files; every problem is reported with file:line:column
    Check(crate::commands::profiles::CheckArgs),
    /// Start a team profile in ./envctl/NAME.toml
    New(crate::commands::profiles::NewArgs),
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum)]
    pub shell: Shell,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn command_line_is_consistent() {
        super::Cli::command().debug_assert();
    }

    /// Numbers as people and fuzzers write them: huge, negative, fractional, with
    /// exponents, units, signs and spaces.
    fn numeric_text() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop_oneof![
            any::<u64>().prop_map(|number| number.to_string()),
            any::<i64>().prop_map(|number| number.to_string()),
            any::<f64>().prop_map(|number| number.to_string()),
            any::<u128>().prop_map(|number| number.to_string()),
            "[-+ ]?[0-9]{1,25}(\\.[0-9]{0,5})?(e[-+]?[0-9]{1,3})?(ns|us|ms|s|m|h|d)? ?",
            Just("1e19".to_string()),
            Just("NaN".to_string()),
            Just("inf".to_string()),
        ]
    }

    proptest::proptest! {
        /// Issue 12, class 12: every numeric flag takes any text without panicking; what it
        /// accepts lies in its documented bounds, and the durations made from it can be
        /// added to "now" (the `stats --interval 1e19` panic was an Instant overflow).
        #[test]
        fn numeric_flags_are_bounded_or_refused(text in numeric_text()) {
            use clap::Parser;
            use super::{Cli, Command};
            let parse = |arguments: &[&str]| Cli::try_parse_from(arguments);
            if let Ok(cli) = parse(&["envctl", "down", "x", "--timeout", &text])
                && let Command::Down(arguments) = cli.command
            {
                proptest::prop_assert!(arguments.timeout <= 86_400);
                let deadline = crate::ops::down::stop_deadline(arguments.timeout);
                proptest::prop_assert!(std::time::Instant::now().checked_add(deadline).is_some());
            }
            if let Ok(cli) = parse(&["envctl", "exec", "--timeout", &text, "x", "nvidia-check"])
                && let Command::Exec(arguments) = cli.command
            {
                proptest::prop_assert!(arguments.timeout.is_some_and(|seconds| (1..=86_400).contains(&seconds)));
            }
            // After the name, exec reads nvidia-check's options itself, to the same bounds.
            let after = ["--timeout".to_string(), text.clone()];
            if let Ok(options) = crate::commands::exec::nvidia_check_options(&after, "x") {
                proptest::prop_assert!(options.timeout.is_some_and(|seconds| (1..=86_400).contains(&seconds)));
            }
            if let Ok(cli) = parse(&["envctl", "stats", "--interval", &text])
                && let Command::Stats(arguments) = cli.command
            {
                proptest::prop_assert!(arguments.interval >= std::time::Duration::from_millis(100));
                proptest::prop_assert!(arguments.interval <= std::time::Duration::from_secs(3600));
                proptest::prop_assert!(std::time::Instant::now().checked_add(arguments.interval).is_some());
            }
            if let Ok(cli) = parse(&["envctl", "stats", "--count", &text])
                && let Command::Stats(arguments) = cli.command
            {
                proptest::prop_assert!(arguments.count.is_some_and(|count| count >= 1));
            }
            // `--tail` goes to the daemon as text; any u64 is a line count it takes.
            let _ = parse(&["envctl", "logs", "x", "--tail", &text]);
        }
    }
}
