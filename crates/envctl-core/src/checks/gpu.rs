//! NVML findings: is the driver usable from here, and what each GPU reported. A failed
//! load is named by its cause (not installed, not loaded, version mismatch, permission,
//! old driver), never collapsed into "no GPU". Pure over `GpuFacts` and `HostFacts`.
//!
//! Finding ids: `gpu.nvml`, `gpu.driver-module`, `gpu.device`; and, from the matrix,
//! `driver.gpu-model` ([`model_floors`]: each GPU model's own and MIG driver floors, with
//! the MIG mode NVML reports).

use super::{Area, Finding};
use crate::facts::gpu::{GpuDevice, GpuFacts, LoadOutcome};
use crate::facts::host::HostFacts;

/// NVML's findings, all in doctor's NVIDIA section.
pub fn nvml(gpu: &GpuFacts, host: &HostFacts, library_from_environment: bool) -> Vec<Finding> {
    nvml_findings(gpu, host, library_from_environment)
        .into_iter()
        .map(|finding| finding.in_area(Area::Nvidia))
        .collect()
}

fn nvml_findings(gpu: &GpuFacts, host: &HostFacts, library_from_environment: bool) -> Vec<Finding> {
    let module = host
        .kernel_module
        .as_ref()
        .and_then(|module| module.version.clone());
    let module_text = module
        .as_deref()
        .map_or_else(String::new, |version| format!(" (kernel module {version})"));
    let finding = match &gpu.nvml {
        LoadOutcome::Loaded(facts) => return loaded(facts, module.as_deref()),
        LoadOutcome::LibraryNotFound { message } if library_from_environment => {
            Finding::fail("gpu.nvml", format!("ENVCTL_NVML_LIBRARY names a library that cannot be loaded: {message}"))
                .with_hint("fix or unset ENVCTL_NVML_LIBRARY")
        }
        LoadOutcome::LibraryNotFound { message } if module.is_none() && host.device_nodes.is_empty() && !host.wsl => {
            Finding::info("gpu.nvml", "no NVIDIA driver on this host: only profiles without GPUs can run here")
                .with_fact("loader", message)
        }
        LoadOutcome::LibraryNotFound { message } => Finding::fail(
            "gpu.nvml",
            format!("the NVIDIA kernel driver is present{module_text} but its NVML library {} is not: {message}", gpu.library),
        )
        .with_hint(if host.wsl {
            "on WSL 2, NVML lives in /usr/lib/wsl/lib: check that it is on the loader path (`ldconfig -p | grep nvidia-ml`)"
        } else {
            "install the driver's user-space part (the `nvidia-utils`/`libnvidia-compute` package of the same version), then `sudo ldconfig`"
        }),
        LoadOutcome::DriverNotLoaded { message } => Finding::fail("gpu.nvml", driver_not_loaded(message))
            .with_hint("load it with `sudo modprobe nvidia`; if that fails, check `dmesg` (Secure Boot may block unsigned modules) or reboot after a driver install"),
        LoadOutcome::VersionMismatch { message } => Finding::fail(
            "gpu.nvml",
            format!("driver/library version mismatch{module_text}: the kernel module and the user-space library are from different driver releases ({message})"),
        )
        .with_hint("reboot (or reload the modules: `sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe nvidia`); hold the driver packages so unattended upgrades stop doing this"),
        LoadOutcome::NoPermission { message } => Finding::fail("gpu.nvml", format!("no permission to use the NVIDIA driver: {message}"))
            .with_hint("check `ls -l /dev/nvidia*`: your user needs read-write access (often the `video` group)"),
        LoadOutcome::SymbolMissing { message } => Finding::fail("gpu.nvml", format!("the NVIDIA driver is too old for envctl's NVML calls: {message}"))
            .with_hint("upgrade the driver to a supported branch (R580 or newer)"),
        LoadOutcome::OnAnotherHost { host, seen: Some(seen), .. } => {
            // Judged as this machine's are, from what its daemon told.
            let mut findings = vec![seen_finding(host, seen)];
            // Each GPU as far as the daemon told it: what its source does not read (health,
            // memory in a record) is not a GPU that stopped answering.
            findings.extend(
                loaded(&seen.facts, None)
                    .into_iter()
                    .filter(|finding| finding.id != "gpu.device"),
            );
            findings.extend(seen.facts.gpus.iter().map(seen_device_finding));
            return findings;
        }
        LoadOutcome::OnAnotherHost { host, message, seen: None } => Finding::info("gpu.nvml", format!("{message}: its driver is judged there"))
            .with_hint(format!("run `envctl doctor` on {host} for its driver and GPUs")),
        LoadOutcome::Unknown { message } => Finding::fail("gpu.nvml", format!("NVML failed to initialise: {message}"))
            .with_hint("run `nvidia-smi`; if it fails too, reboot; if it works, run `sudo nvidia-ctk system create-dev-char-symlinks --create-all`"),
    };
    vec![finding.with_fact("library", &gpu.library)]
}

/// "The driver is installed but not loaded", with NVML's cause only where it says more
/// than that (NVML's own text for this case, "NVIDIA driver is not loaded", would repeat it).
fn driver_not_loaded(message: &str) -> String {
    let said = "the NVIDIA driver is installed but not loaded";
    let cause = message.trim().trim_end_matches('.');
    if cause.is_empty() || cause.eq_ignore_ascii_case("NVIDIA driver is not loaded") {
        said.to_string()
    } else {
        format!("{said}: {cause}")
    }
}

/// Where another machine's GPUs were learnt: through its daemon, by a probe or from the
/// record NVML or a probe left there, and when.
fn seen_finding(host: &str, seen: &crate::facts::gpu::SeenOnServer) -> Finding {
    let how = match (seen.from_record, seen.by) {
        (false, _) => "a probe container through its daemon".to_string(),
        (true, by) => format!(
            "the GPU record its daemon keeps (written by {})",
            by.as_str()
        ),
    };
    let mut finding = Finding::info(
        "gpu.nvml",
        format!("the daemon runs on {host}: its driver and GPUs as seen by {how}"),
    )
    .with_fact("seen_by", seen.by.as_str())
    .with_fact("from_record", seen.from_record);
    if let Some(taken_at) = seen.taken_at {
        finding = finding.with_fact("taken_at", taken_at);
    }
    finding
}

/// One GPU of another machine: its model and compute capability as its daemon told them.
fn seen_device_finding(device: &GpuDevice) -> Finding {
    let name = device.name.value().cloned();
    let mut parts = vec![name.clone().unwrap_or_else(|| "model unknown".into())];
    if let Some(capability) = device.compute_capability.value() {
        parts.push(format!("{} (compute {capability})", capability.sm()));
    }
    if let Some(processes) = device.processes.value() {
        parts.push(match processes.len() {
            0 => "no compute process".to_string(),
            1 => "1 compute process".to_string(),
            n => format!("{n} compute processes"),
        });
    }
    Finding::info(
        "gpu.device",
        format!("GPU {}: {}", device.index, parts.join(", ")),
    )
    .with_fact("index", device.index)
    .with_fact("name", name)
    .with_fact("uuid", device.uuid.value())
}

fn loaded(facts: &crate::facts::gpu::NvmlFacts, module: Option<&str>) -> Vec<Finding> {
    let mut findings = Vec::new();
    let driver = facts
        .driver_version
        .value()
        .cloned()
        .unwrap_or_else(|| "?".into());
    let cuda = facts
        .cuda_driver_version
        .value()
        .map_or_else(|| "?".to_string(), ToString::to_string);
    // The count is NVML's answer; when NVML could not count, no GPU was asked about, and
    // "0 GPUs" would be a guess.
    let finding = match facts.device_count.as_result() {
        Ok(&count) => Finding::pass(
            "gpu.nvml",
            format!(
                "NVIDIA driver {driver} (CUDA {cuda}), {count} GPU{}",
                if count == 1 { "" } else { "s" }
            ),
        ),
        Err(failure) => Finding::fail(
            "gpu.nvml",
            format!(
                "NVIDIA driver {driver} (CUDA {cuda}), but NVML could not count the GPUs: {}",
                failure.message
            ),
        )
        .with_hint("run `nvidia-smi`; a GPU that fell off the bus (Xid 79) or a driver mismatch needs a reboot"),
    };
    findings.push(
        finding
            .with_fact("driver_version", &driver)
            .with_fact("cuda_driver_version", &cuda),
    );
    if let Some(module) = module
        && driver != "?"
        && module != driver
    {
        findings.push(
            Finding::warn(
                "gpu.driver-module",
                format!("the kernel module is {module} but NVML reports driver {driver}"),
            )
            .with_hint("reboot so the loaded module matches the installed driver"),
        );
    }
    for device in &facts.gpus {
        findings.push(device_finding(device));
    }
    findings
}

/// Each GPU model's driver floors (`compat::driver_vs_gpu_model`): its per-SKU minimum, and
/// its MIG minimum when NVML reports MIG enabled (a GPU without MIG answers "not supported":
/// off; another failure leaves MIG unknown). One finding per distinct model and MIG state,
/// with the GPU indices it covers. Only floors a driver falls short of are said (a fail, or
/// a warning when MIG's state is unknown): a met floor adds nothing to fix, and the GPU lines
/// above already say where MIG is enabled. Nothing when NVML is not loaded or the driver is
/// unknown.
pub fn model_floors(gpu: &GpuFacts, matrix: &crate::compat::Matrix) -> Vec<Finding> {
    let Some(nvml) = gpu.judged() else {
        return Vec::new();
    };
    let Some(driver) = nvml
        .driver_version
        .value()
        .and_then(|text| text.parse::<crate::compat::DriverVersion>().ok())
    else {
        return Vec::new();
    };
    let mut seen: Vec<(Vec<String>, Option<bool>, Vec<u32>)> = Vec::new();
    for device in &nvml.gpus {
        let Some(name) = device.name.value() else {
            continue;
        };
        let models: Vec<String> = crate::compat::model_capability(matrix, name)
            .into_iter()
            .map(|(model, _)| model)
            .collect();
        let mig = match &device.mig_mode {
            crate::facts::gpu::Fact::Value(mode) => {
                Some(mode.current == crate::facts::gpu::MigSetting::Enabled)
            }
            crate::facts::gpu::Fact::Error(failure)
                if failure.kind == crate::facts::gpu::FailureKind::NotSupported =>
            {
                Some(false)
            }
            crate::facts::gpu::Fact::Error(_) => None,
        };
        match seen
            .iter_mut()
            .find(|(other, other_mig, _)| *other == models && *other_mig == mig)
        {
            Some((_, _, indices)) => indices.push(device.index),
            None => seen.push((models, mig, vec![device.index])),
        }
    }
    seen.into_iter()
        .filter_map(|(models, mig, indices)| {
            crate::compat::driver_vs_gpu_model(matrix, &driver, &models, mig)
                .filter(|finding| finding.status != super::Status::Pass)
                .map(|mut finding| {
                    let listed: Vec<String> = indices.iter().map(ToString::to_string).collect();
                    finding.message = format!(
                        "GPU{} {}: {}",
                        if indices.len() == 1 { "" } else { "s" },
                        listed.join(", "),
                        finding.message
                    );
                    finding
                        .with_fact("gpu_indices", indices)
                        .in_area(Area::Nvidia)
                })
        })
        .collect()
}

fn device_finding(device: &GpuDevice) -> Finding {
    let name = device
        .name
        .value()
        .cloned()
        .unwrap_or_else(|| "unknown GPU".into());
    let mut parts = vec![name.clone()];
    if let Some(capability) = device.compute_capability.value() {
        parts.push(format!("{} (compute {capability})", capability.sm()));
    }
    if let Some(memory) = device.memory.value() {
        parts.push(format!(
            "{:.0} GiB",
            memory.total_bytes as f64 / (1u64 << 30) as f64
        ));
    }
    if let Some(mig) = device.mig_mode.value()
        && mig.current == crate::facts::gpu::MigSetting::Enabled
    {
        parts.push("MIG enabled".into());
    }
    let failures: Vec<String> = [
        ("name", device.name.failure()),
        ("compute capability", device.compute_capability.failure()),
        ("memory", device.memory.failure()),
        ("UUID", device.uuid.failure()),
    ]
    .into_iter()
    .filter_map(|(what, failure)| failure.map(|failure| format!("{what}: {}", failure.message)))
    .collect();
    let message = format!("GPU {}: {}", device.index, parts.join(", "));
    let finding = if failures.is_empty() {
        Finding::pass("gpu.device", message)
    } else {
        Finding::warn("gpu.device", format!("{message}; could not read {}", failures.join("; ")))
            .with_hint("run `nvidia-smi -q -i INDEX`; a GPU that stops answering often needs a reset or a reboot (check `dmesg` for Xid errors)".replace("INDEX", &device.index.to_string()))
    };
    finding
        .with_fact("index", device.index)
        .with_fact("name", &name)
        .with_fact("uuid", device.uuid.value())
        .with_fact("compute_capability", device.compute_capability.value())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Status;
    use crate::facts::gpu::{Fact, FailureKind, GpuMemory, NvmlFacts, NvmlFailure};
    use crate::facts::host::KernelModule;

    fn facts(outcome: LoadOutcome) -> GpuFacts {
        GpuFacts {
            library: "libnvidia-ml.so.1".into(),
            nvml: outcome,
        }
    }

    fn h100(index: u32) -> GpuDevice {
        GpuDevice {
            index,
            name: Fact::Value("NVIDIA H100 80GB HBM3".into()),
            uuid: Fact::Value(format!("GPU-{index}")),
            pci_bus_id: Fact::Value("00000000:17:00.0".into()),
            compute_capability: Fact::Value("9.0".parse().unwrap()),
            memory: Fact::Value(GpuMemory {
                total_bytes: 80 << 30,
                used_bytes: 0,
                reserved_bytes: 0,
                free_bytes: 80 << 30,
            }),
            mig_mode: Fact::Error(NvmlFailure::new(FailureKind::NotSupported, "not supported")),
            power_limit_watts: Fact::Value(700.0),
            processes: Fact::Value(Vec::new()),
            minor_number: Fact::Value(index),
            health: Default::default(),
        }
    }

    fn with_module() -> HostFacts {
        HostFacts {
            kernel_module: Some(KernelModule {
                version: Some("550.54.15".into()),
                text: String::new(),
            }),
            ..HostFacts::default()
        }
    }

    #[test]
    fn no_driver_at_all_is_information_not_failure() {
        let findings = nvml(
            &facts(LoadOutcome::LibraryNotFound {
                message: "cannot open".into(),
            }),
            &HostFacts::default(),
            false,
        );
        assert_eq!(findings[0].status, Status::Info);
        let explicit = nvml(
            &facts(LoadOutcome::LibraryNotFound {
                message: "cannot open".into(),
            }),
            &HostFacts::default(),
            true,
        );
        assert_eq!(
            explicit[0].status,
            Status::Fail,
            "a library the user named must load"
        );
        let half_installed = nvml(
            &facts(LoadOutcome::LibraryNotFound {
                message: "cannot open".into(),
            }),
            &with_module(),
            false,
        );
        assert_eq!(half_installed[0].status, Status::Fail);
        assert!(half_installed[0].message.contains("550.54.15"));
    }

    #[test]
    fn driver_not_loaded_is_said_once() {
        let said = |message: &str| {
            nvml(
                &facts(LoadOutcome::DriverNotLoaded {
                    message: message.into(),
                }),
                &with_module(),
                false,
            )
            .remove(0)
            .message
        };
        assert_eq!(
            said("NVIDIA driver is not loaded"),
            "the NVIDIA driver is installed but not loaded"
        );
        assert_eq!(
            said("module nvidia blocked by Secure Boot"),
            "the NVIDIA driver is installed but not loaded: module nvidia blocked by Secure Boot"
        );
    }

    #[test]
    fn each_load_failure_has_its_own_fix() {
        let hints: Vec<String> = [
            LoadOutcome::DriverNotLoaded {
                message: "x".into(),
            },
            LoadOutcome::VersionMismatch {
                message: "x".into(),
            },
            LoadOutcome::NoPermission {
                message: "x".into(),
            },
            LoadOutcome::SymbolMissing {
                message: "x".into(),
            },
            LoadOutcome::Unknown {
                message: "x".into(),
            },
        ]
        .into_iter()
        .map(|outcome| {
            let finding = nvml(&facts(outcome), &with_module(), false).remove(0);
            assert_eq!(finding.status, Status::Fail);
            finding.hint.unwrap()
        })
        .collect();
        let mut unique = hints.clone();
        unique.dedup();
        assert_eq!(unique.len(), hints.len(), "{hints:?}");
        assert!(hints[1].contains("reboot"));
    }

    #[test]
    fn loaded_driver_lists_gpus_and_keeps_partial_facts() {
        let mut broken = h100(1);
        broken.memory = Fact::Error(NvmlFailure::new(
            FailureKind::Unknown,
            "an internal driver error occurred",
        ));
        let nvml_facts = NvmlFacts {
            driver_version: Fact::Value("570.124.06".into()),
            cuda_driver_version: Fact::Value(crate::facts::gpu::CudaDriverVersion {
                major: 12,
                minor: 8,
            }),
            nvml_version: Fact::Value("12.570.124.06".into()),
            device_count: Fact::Value(2),
            gpus: vec![h100(0), broken],
            shutdown_failure: None,
        };
        let findings = nvml(
            &facts(LoadOutcome::Loaded(Box::new(nvml_facts))),
            &with_module(),
            false,
        );
        let statuses: Vec<(&str, Status)> = findings
            .iter()
            .map(|finding| (finding.id.as_str(), finding.status))
            .collect();
        assert_eq!(
            statuses,
            [
                ("gpu.nvml", Status::Pass),
                ("gpu.driver-module", Status::Warn),
                ("gpu.device", Status::Pass),
                ("gpu.device", Status::Warn)
            ]
        );
        assert!(
            findings[0]
                .message
                .contains("570.124.06 (CUDA 12.8), 2 GPUs")
        );
        assert!(
            findings[3].message.contains("NVIDIA H100 80GB HBM3"),
            "the rest of a failing GPU's facts stay: {}",
            findings[3].message
        );
        assert!(
            findings[3]
                .message
                .contains("memory: an internal driver error occurred")
        );
    }
}
