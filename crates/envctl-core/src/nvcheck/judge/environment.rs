//! The Environment section: shared memory, memlock, the stack size, NCCL's settings and
//! the CUDA device order.

use super::{
    DEVICE_ORDER, Expectations, MEMLOCK, NCCL, SHM, SHM_MINIMUM_BYTES, STACK, STACK_MINIMUM_BYTES,
    STACK_RECOMMENDED_BYTES, View,
};
use crate::checks::Finding;
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
    let profile_fix = |setting: &str| match &expectations.profile {
        Some(profile) => {
            format!("set {setting} in profile `{profile}`, then `envctl up {profile} --recreate`")
        }
        None => format!("recreate the container with {setting}"),
    };
    if let Some(shm) = &shell.shm {
        match shm.output.as_deref().and_then(df_size) {
            Some(size) if size.total_bytes < SHM_MINIMUM_BYTES => findings.push(
                Finding::warn(
                    SHM,
                    format!(
                        "/dev/shm is {}: DataLoader workers (num_workers > 0) pass batches through it and die with `Bus error` when it fills",
                        binary_limit(size.total_bytes)
                    ),
                )
                .with_hint(profile_fix("`shm_size = \"8g\"` (or `ipc = \"host\"`)"))
                .with_fact("shm", size),
            ),
            Some(size) => findings.push(
                Finding::pass(
                    SHM,
                    format!(
                        "/dev/shm is {} ({} free)",
                        binary_limit(size.total_bytes),
                        binary_limit(size.available_bytes)
                    ),
                )
                .with_fact("shm", size),
            ),
            None => findings.push(
                Finding::warn(
                    SHM,
                    format!(
                        "the size of /dev/shm is unknown: {}",
                        first_line(shm.output.as_deref().unwrap_or("df printed nothing"))
                    ),
                )
                .with_hint(profile_fix("`shm_size = \"8g\"`")),
            ),
        }
    }
    match shell.ulimits.memlock.as_deref().map(|text| (text, ulimit_value(text))) {
        Some((_, Some(Limit::Unlimited))) => findings.push(Finding::pass(
            MEMLOCK,
            "locked memory (ulimit -l) is unlimited",
        )),
        Some((_, Some(Limit::Bytes(bytes)))) => findings.push(
            Finding::warn(
                MEMLOCK,
                format!(
                    "locked memory (ulimit -l) is limited to {}: NCCL over InfiniBand/RoCE and large pinned buffers need it unlimited",
                    binary_limit(bytes)
                ),
            )
            .with_hint(profile_fix("`memlock = -1` under [ulimits] (NVIDIA's recommendation)"))
            .with_fact("bytes", bytes),
        ),
        Some((text, None)) => findings.push(Finding::info(
            MEMLOCK,
            format!("locked memory (ulimit -l) is unknown: {}", first_line(text)),
        )),
        None => {}
    }
    match shell.ulimits.stack.as_deref().map(|text| (text, ulimit_value(text))) {
        Some((_, Some(Limit::Unlimited))) => {
            findings.push(Finding::pass(STACK, "stack size (ulimit -s) is unlimited"));
        }
        Some((_, Some(Limit::Bytes(bytes)))) if bytes >= STACK_RECOMMENDED_BYTES => findings.push(
            Finding::pass(STACK, format!("stack size (ulimit -s) is {}", binary_limit(bytes)))
                .with_fact("bytes", bytes),
        ),
        Some((_, Some(Limit::Bytes(bytes)))) if bytes >= STACK_MINIMUM_BYTES => findings.push(
            Finding::info(
                STACK,
                format!(
                    "stack size (ulimit -s) is {}; NVIDIA recommends 64 MiB for its PyTorch containers (`stack = 67108864` under [ulimits])",
                    binary_limit(bytes)
                ),
            )
            .with_fact("bytes", bytes),
        ),
        Some((_, Some(Limit::Bytes(bytes)))) => findings.push(
            Finding::warn(
                STACK,
                format!(
                    "stack size (ulimit -s) is only {}: deep recursion and some CUDA libraries overflow it",
                    binary_limit(bytes)
                ),
            )
            .with_hint(profile_fix("`stack = 67108864` under [ulimits]"))
            .with_fact("bytes", bytes),
        ),
        Some((text, None)) => findings.push(Finding::info(
            STACK,
            format!("stack size (ulimit -s) is unknown: {}", first_line(text)),
        )),
        None => {}
    }
    let visible = view.visible_gpus().map_or(0, |(count, _)| count);
    if view.torch_cuda_works() {
        match (
            &view.torch.and_then(|torch| torch.nccl_version.clone()),
            visible > 1,
        ) {
            (Some(version), true) => findings.push(Finding::pass(
                NCCL,
                format!("NCCL {version} for the {visible} GPUs"),
            )),
            (None, true) => {
                let why = view
                    .torch
                    .and_then(|torch| torch.nccl_error.as_deref())
                    .map_or_else(String::new, |error| format!(" ({})", first_line(error)));
                findings.push(
                    Finding::warn(
                        NCCL,
                        format!("{visible} GPUs are visible but torch has no NCCL{why}: DistributedDataParallel cannot use the nccl backend"),
                    )
                    .with_hint("use an official PyTorch image or wheel, which bundle NCCL (`pip install nvidia-nccl-cu12`)"),
                );
            }
            (Some(version), false) => findings.push(Finding::info(NCCL, format!("NCCL {version}"))),
            (None, false) => {}
        }
    }
    let order = view.variable("CUDA_DEVICE_ORDER");
    let models: Vec<&str> = {
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
    };
    match order {
        Some("PCI_BUS_ID") => findings.push(Finding::pass(
            DEVICE_ORDER,
            "CUDA_DEVICE_ORDER=PCI_BUS_ID: CUDA numbers the GPUs as nvidia-smi does",
        )),
        _ if visible > 1 && models.len() > 1 => {
            let shown = order.map_or_else(|| "unset".to_string(), |value| format!("`{value}`"));
            findings.push(
                Finding::warn(
                    DEVICE_ORDER,
                    format!(
                        "CUDA_DEVICE_ORDER is {shown} on a mix of GPUs ({}): CUDA numbers them fastest first, nvidia-smi by PCI bus, so GPU 0 is not the same GPU in both",
                        models.join(", ")
                    ),
                )
                .with_hint(profile_fix("`CUDA_DEVICE_ORDER = \"PCI_BUS_ID\"` under env (envctl up sets it for profiles that ask for GPUs)")),
            );
        }
        _ if visible > 0 => {
            let shown = order.map_or_else(|| "unset".to_string(), |value| format!("`{value}`"));
            findings.push(Finding::info(
                DEVICE_ORDER,
                format!("CUDA_DEVICE_ORDER is {shown}; the GPUs are all one model, so CUDA's and nvidia-smi's numbering agree"),
            ));
        }
        _ => {}
    }
}
