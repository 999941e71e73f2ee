//! The Environment section: shared memory, memlock, the stack size, NCCL's settings and
//! the CUDA device order.

use super::{
    DEVICE_ORDER, Expectations, MEMLOCK, NCCL, SHM, SHM_MINIMUM_BYTES, STACK, STACK_MINIMUM_BYTES,
    STACK_RECOMMENDED_BYTES, View,
};
use crate::checks::Finding;
use crate::nvcheck::report::CommandOutput;
use crate::nvcheck::values::{Limit, df_size, first_line, ulimit_value};
use crate::units::binary_limit;

/// Environment: /dev/shm, memlock, stack, NCCL, CUDA_DEVICE_ORDER.
pub(super) fn environment(
    view: &View<'_>,
    expectations: &Expectations<'_>,
    findings: &mut Vec<Finding>,
) {
    let Some(shell) = view.shell else {
        return;
    };
    let visible = view.visible_gpus().map_or(0, |(count, _)| count);
    let profile = expectations.profile.as_deref();
    findings.extend(
        [
            shell.shm.as_ref().map(|shm| shared_memory(shm, profile)),
            shell
                .ulimits
                .memlock
                .as_deref()
                .map(|text| locked_memory(text, profile)),
            shell
                .ulimits
                .stack
                .as_deref()
                .map(|text| stack_size(text, profile)),
            nccl(view, visible),
            device_order(view, visible, profile),
        ]
        .into_iter()
        .flatten(),
    );
}

/// The hint that sets `setting`: in the container's `profile` when it has one, else on
/// the command that recreates it.
fn profile_fix(profile: Option<&str>, setting: &str) -> String {
    match profile {
        Some(profile) => {
            format!("set {setting} in profile `{profile}`, then `envctl up {profile} --recreate`")
        }
        None => format!("recreate the container with {setting}"),
    }
}

/// `/dev/shm` as `df` measured it: below [`SHM_MINIMUM_BYTES`] warns, since DataLoader
/// workers pass whole batches through it.
fn shared_memory(shm: &CommandOutput, profile: Option<&str>) -> Finding {
    match shm.output.as_deref().and_then(df_size) {
        Some(size) if size.total_bytes < SHM_MINIMUM_BYTES => Finding::warn(
            SHM,
            format!(
                "/dev/shm is {}: DataLoader workers (num_workers > 0) pass batches through it and die with `Bus error` when it fills",
                binary_limit(size.total_bytes)
            ),
        )
        .with_hint(profile_fix(
            profile,
            "`shm_size = \"8g\"` (or `ipc = \"host\"`)",
        ))
        .with_fact("shm", size),
        Some(size) => Finding::pass(
            SHM,
            format!(
                "/dev/shm is {} ({} free)",
                binary_limit(size.total_bytes),
                binary_limit(size.available_bytes)
            ),
        )
        .with_fact("shm", size),
        None => Finding::warn(
            SHM,
            format!(
                "the size of /dev/shm is unknown: {}",
                first_line(shm.output.as_deref().unwrap_or("df printed nothing"))
            ),
        )
        .with_hint(profile_fix(profile, "`shm_size = \"8g\"`")),
    }
}

/// `ulimit -l` as the shell printed it (`text`): anything short of unlimited warns, as
/// NCCL over InfiniBand/RoCE and large pinned buffers need it unlimited.
fn locked_memory(text: &str, profile: Option<&str>) -> Finding {
    match ulimit_value(text) {
        Some(Limit::Unlimited) => Finding::pass(MEMLOCK, "locked memory (ulimit -l) is unlimited"),
        Some(Limit::Bytes(bytes)) => Finding::warn(
            MEMLOCK,
            format!(
                "locked memory (ulimit -l) is limited to {}: NCCL over InfiniBand/RoCE and large pinned buffers need it unlimited",
                binary_limit(bytes)
            ),
        )
        .with_hint(profile_fix(
            profile,
            "`memlock = -1` under [ulimits] (NVIDIA's recommendation)",
        ))
        .with_fact("bytes", bytes),
        None => Finding::info(
            MEMLOCK,
            format!("locked memory (ulimit -l) is unknown: {}", first_line(text)),
        ),
    }
}

/// `ulimit -s` as the shell printed it (`text`): at least [`STACK_RECOMMENDED_BYTES`]
/// passes, at least [`STACK_MINIMUM_BYTES`] is noted, less warns.
fn stack_size(text: &str, profile: Option<&str>) -> Finding {
    match ulimit_value(text) {
        Some(Limit::Unlimited) => Finding::pass(STACK, "stack size (ulimit -s) is unlimited"),
        Some(Limit::Bytes(bytes)) if bytes >= STACK_RECOMMENDED_BYTES => {
            Finding::pass(STACK, format!("stack size (ulimit -s) is {}", binary_limit(bytes)))
                .with_fact("bytes", bytes)
        }
        Some(Limit::Bytes(bytes)) if bytes >= STACK_MINIMUM_BYTES => Finding::info(
            STACK,
            format!(
                "stack size (ulimit -s) is {}; NVIDIA recommends 64 MiB for its PyTorch containers (`stack = 67108864` under [ulimits])",
                binary_limit(bytes)
            ),
        )
        .with_fact("bytes", bytes),
        Some(Limit::Bytes(bytes)) => Finding::warn(
            STACK,
            format!(
                "stack size (ulimit -s) is only {}: deep recursion and some CUDA libraries overflow it",
                binary_limit(bytes)
            ),
        )
        .with_hint(profile_fix(profile, "`stack = 67108864` under [ulimits]"))
        .with_fact("bytes", bytes),
        None => Finding::info(
            STACK,
            format!("stack size (ulimit -s) is unknown: {}", first_line(text)),
        ),
    }
}

/// NCCL in torch, judged only where CUDA works there: missing warns when several GPUs
/// are `visible` (DistributedDataParallel needs it), and is not worth a word otherwise.
fn nccl(view: &View<'_>, visible: usize) -> Option<Finding> {
    if !view.torch_cuda_works() {
        return None;
    }
    match (
        view.torch.and_then(|torch| torch.nccl_version.as_deref()),
        visible > 1,
    ) {
        (Some(version), true) => Some(Finding::pass(
            NCCL,
            format!("NCCL {version} for the {visible} GPUs"),
        )),
        (None, true) => {
            let why = view
                .torch
                .and_then(|torch| torch.nccl_error.as_deref())
                .map_or_else(String::new, |error| format!(" ({})", first_line(error)));
            Some(
                Finding::warn(
                    NCCL,
                    format!("{visible} GPUs are visible but torch has no NCCL{why}: DistributedDataParallel cannot use the nccl backend"),
                )
                .with_hint("use an official PyTorch image or wheel, which bundle NCCL (`pip install nvidia-nccl-cu12`)"),
            )
        }
        (Some(version), false) => Some(Finding::info(NCCL, format!("NCCL {version}"))),
        (None, false) => None,
    }
}

/// The distinct GPU models that nvidia-smi and torch name, sorted.
fn gpu_models<'v>(view: &'v View<'_>) -> Vec<&'v str> {
    let mut models: Vec<&str> = view
        .smi_gpus
        .iter()
        .flatten()
        .filter_map(|gpu| gpu.name.as_deref())
        .chain(
            view.devices
                .iter()
                .filter_map(|device| device.name.as_deref()),
        )
        .collect();
    models.sort_unstable();
    models.dedup();
    models
}

/// `CUDA_DEVICE_ORDER`: anything but `PCI_BUS_ID` warns on a mix of GPU models, where
/// CUDA's numbering (fastest first) and nvidia-smi's (by PCI bus) differ.
fn device_order(view: &View<'_>, visible: usize, profile: Option<&str>) -> Option<Finding> {
    let order = view.variable("CUDA_DEVICE_ORDER");
    let shown = || order.map_or_else(|| "unset".to_string(), |value| format!("`{value}`"));
    let models = gpu_models(view);
    match order {
        Some("PCI_BUS_ID") => Some(Finding::pass(
            DEVICE_ORDER,
            "CUDA_DEVICE_ORDER=PCI_BUS_ID: CUDA numbers the GPUs as nvidia-smi does",
        )),
        _ if visible > 1 && models.len() > 1 => Some(
            Finding::warn(
                DEVICE_ORDER,
                format!(
                    "CUDA_DEVICE_ORDER is {} on a mix of GPUs ({}): CUDA numbers them fastest first, nvidia-smi by PCI bus, so GPU 0 is not the same GPU in both",
                    shown(),
                    models.join(", ")
                ),
            )
            .with_hint(profile_fix(
                profile,
                "`CUDA_DEVICE_ORDER = \"PCI_BUS_ID\"` under env (envctl up sets it for profiles that ask for GPUs)",
            )),
        ),
        _ if visible > 0 => Some(Finding::info(
            DEVICE_ORDER,
            format!(
                "CUDA_DEVICE_ORDER is {}; the GPUs are all one model, so CUDA's and nvidia-smi's numbering agree",
                shown()
            ),
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Status;

    #[test]
    fn the_fix_names_the_profile_when_there_is_one() {
        assert_eq!(
            profile_fix(Some("train"), "`memlock = -1`"),
            "set `memlock = -1` in profile `train`, then `envctl up train --recreate`"
        );
        assert_eq!(
            profile_fix(None, "`memlock = -1`"),
            "recreate the container with `memlock = -1`"
        );
    }

    #[test]
    fn ulimits_are_judged_on_their_own() {
        assert_eq!(locked_memory("unlimited", None).status, Status::Pass);
        assert_eq!(locked_memory("65536", None).status, Status::Warn);
        assert_eq!(locked_memory("garbled", None).status, Status::Info);
        // `ulimit -s` prints KiB: 65536 KiB is NVIDIA's 64 MiB, 8192 KiB Linux's default.
        assert_eq!(stack_size("65536", None).status, Status::Pass);
        assert_eq!(stack_size("8192", None).status, Status::Info);
        assert_eq!(stack_size("4096", None).status, Status::Warn);
        assert_eq!(
            stack_size("4096", Some("train")).hint.as_deref(),
            Some(
                "set `stack = 67108864` under [ulimits] in profile `train`, then `envctl up train --recreate`"
            )
        );
    }

    #[test]
    fn shared_memory_below_the_minimum_warns() {
        let df = |kibibytes: u64| CommandOutput {
            exit_status: Some(0),
            output: Some(format!(
                "Filesystem     1024-blocks  Used Available Capacity Mounted on\nshm {kibibytes} 0 {kibibytes} 0% /dev/shm\n"
            )),
        };
        assert_eq!(shared_memory(&df(64 * 1024), None).status, Status::Warn);
        assert_eq!(shared_memory(&df(1024 * 1024), None).status, Status::Pass);
        assert_eq!(
            shared_memory(&CommandOutput::default(), None).status,
            Status::Warn
        );
    }
}
