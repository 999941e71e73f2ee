//! The Compute section: a kernel, float32, bfloat16 and TF32 matmuls against the CPU, the
//! timed matmul and the pinned copy bandwidth, per GPU, folded where the GPUs agree.

use super::{
    BF16, BFLOAT16_TOLERANCE, COPY, COPY_MINIMUM_GIGABYTES_PER_SECOND, Expectations,
    FLOAT32_TOLERANCE, KERNEL, MATMUL, TF32, TF32_TOLERANCE, THROUGHPUT, View, exec_hint,
};
use crate::checks::Finding;
use crate::compat::ComputeCapability;
use crate::nvcheck::report::{Benchmark, DeviceFacts, KernelCheck, MatmulCheck};
use crate::nvcheck::values::first_line;
use crate::units::index_ranges;

/// A compute finding of one GPU, before identical ones are folded.
struct DeviceFinding {
    index: u32,
    name: String,
    finding: Finding,
}

/// Compute: a torch kernel, matmul vs CPU, bf16, TF32, throughput, copy bandwidth.
pub(super) fn compute(
    view: &View<'_>,
    expectations: &Expectations<'_>,
    findings: &mut Vec<Finding>,
) {
    if !view.torch_cuda_works() || view.devices.is_empty() {
        return;
    }
    let quick = view.python.is_some_and(|python| python.quick) || view.raw.run.quick;
    let mut per_device = Vec::new();
    for device in view.devices {
        if device.error.is_some() {
            continue;
        }
        let name = device.name.clone().unwrap_or_else(|| "unnamed GPU".into());
        per_device.extend(
            device_compute(device, quick, expectations)
                .into_iter()
                .map(|finding| DeviceFinding {
                    index: device.index,
                    name: name.clone(),
                    finding,
                }),
        );
    }
    let mut folded = fold(per_device);
    // Per check, then per GPU: every GPU's throughput together, then every GPU's copy.
    let order = [KERNEL, MATMUL, BF16, TF32, THROUGHPUT, COPY];
    folded.sort_by_key(|finding| order.iter().position(|id| *id == finding.id));
    findings.extend(folded);
    if quick {
        findings.push(Finding::info(
            THROUGHPUT,
            "the timed matmul and the copy bandwidth were skipped (--quick)",
        ));
    }
}

fn no_kernels(error: &str) -> bool {
    error.contains("no kernel image is available")
}

fn error_hint(error: &str, expectations: &Expectations<'_>) -> String {
    if no_kernels(error) {
        "torch has no kernels for this GPU: see Architectures above".to_string()
    } else if error.contains("out of memory") {
        "the GPU's memory is taken by other processes: see `nvidia-smi` on the host".to_string()
    } else {
        format!(
            "a CUDA error in a plain operation points at the GPU or driver: look for Xid errors in the host's `dmesg`; rerun with `{}`",
            exec_hint(
                expectations,
                "env CUDA_LAUNCH_BLOCKING=1 python3 -c 'import torch; print(torch.ones(1).cuda() + 1)'"
            )
        )
    }
}

/// One GPU's compute findings, in the order its checks ran: what stopped them, the
/// kernel, the float32, bfloat16 and TF32 matmuls, then (without `--quick`) the timed
/// matmul and the copy bandwidth.
fn device_compute(
    device: &DeviceFacts,
    quick: bool,
    expectations: &Expectations<'_>,
) -> Vec<Finding> {
    let mut findings = Vec::new();
    if let Some(error) = &device.compute_error {
        findings.push(
            Finding::fail(
                MATMUL,
                format!("the compute checks stopped: {}", first_line(error)),
            )
            .with_hint(error_hint(error, expectations)),
        );
    }
    let shared = SharedFailure::of(device);
    let also = shared.failed_alike(device, quick);
    let timed_failed_alike = also.contains(&"timed");
    findings.extend(
        device
            .elementwise
            .as_ref()
            .and_then(|check| kernel_finding(check, &also, expectations)),
    );
    if let Some(check) = device
        .matmul
        .as_ref()
        .filter(|check| !shared.covers(check.error.as_ref()))
    {
        findings.push(matmul_finding(
            MATMUL,
            check,
            FLOAT32_TOLERANCE,
            expectations,
        ));
    }
    let capability = device_capability(device);
    findings.extend(bf16_finding(device, capability, &shared, expectations));
    findings.extend(tf32_finding(device, capability, &shared, expectations));
    if quick {
        return findings;
    }
    if let Some(benchmark) = device.benchmark.as_ref().filter(|_| !timed_failed_alike) {
        findings.extend(throughput_finding(benchmark, expectations));
    }
    if let Some(copy) = &device.copy {
        findings.push(copy_finding(copy, expectations));
    }
    findings
}

/// The failure of torch's own kernel on one GPU (its first line), which the checks after
/// it usually repeat: one line says it for all of them.
struct SharedFailure<'d> {
    kernel_error: Option<&'d str>,
}

impl<'d> SharedFailure<'d> {
    fn of(device: &'d DeviceFacts) -> Self {
        SharedFailure {
            kernel_error: device
                .elementwise
                .as_ref()
                .and_then(|check| check.error.as_deref())
                .map(first_line),
        }
    }

    /// Whether `error` is the kernel's failure again, so the kernel's line covers it.
    fn covers(&self, error: Option<&String>) -> bool {
        self.kernel_error.is_some() && error.map(|error| first_line(error)) == self.kernel_error
    }

    /// The checks that failed as the kernel did, by name (`float32`, `TF32`, `bfloat16`,
    /// `timed`): the kernel's line names them.
    fn failed_alike(&self, device: &DeviceFacts, quick: bool) -> Vec<&'static str> {
        let matmuls = [
            (&device.matmul, "float32"),
            (&device.tf32_matmul, "TF32"),
            (&device.bf16_matmul, "bfloat16"),
        ];
        let mut also: Vec<&str> = matmuls
            .into_iter()
            .filter(|(check, _)| {
                check
                    .as_ref()
                    .is_some_and(|check| self.covers(check.error.as_ref()))
            })
            .map(|(_, name)| name)
            .collect();
        let timed_failed_alike = !quick
            && device
                .benchmark
                .as_ref()
                .is_some_and(|benchmark| self.covers(benchmark.error.as_ref()));
        if timed_failed_alike {
            also.push("timed");
        }
        also
    }
}

/// The GPU's compute capability as torch reported it.
fn device_capability(device: &DeviceFacts) -> Option<ComputeCapability> {
    match device.capability.as_deref() {
        Some([major, minor]) => Some(ComputeCapability::new(*major, *minor)),
        _ => None,
    }
}

/// `compute.kernel`: torch's own kernel failed (naming the checks that failed alike,
/// `also`) or summed wrong; nothing when it ran right.
fn kernel_finding(
    check: &KernelCheck,
    also: &[&str],
    expectations: &Expectations<'_>,
) -> Option<Finding> {
    match &check.error {
        Some(error) => {
            let alike = match also {
                [] => String::new(),
                [one] => format!(" (the {one} matmul failed the same way)"),
                [first @ .., last] => format!(
                    " (the {} and {last} matmuls failed the same way)",
                    first.join(", ")
                ),
            };
            Some(
                Finding::fail(
                    KERNEL,
                    format!("a torch kernel failed: {}{alike}", first_line(error)),
                )
                .with_hint(error_hint(error, expectations)),
            )
        }
        None if !check.ok => Some(
            Finding::fail(KERNEL, "a torch kernel computed a wrong sum")
                .with_fact("value", check.value)
                .with_fact("expected", check.expected)
                .with_hint("the GPU computes wrong results: check `nvidia-smi -q -d ECC` and `dmesg` on the host"),
        ),
        None => None,
    }
}

/// Whether the GPU is Ampere or newer (compute capability 8.0 and up), where bfloat16 and
/// TF32 are native.
fn is_ampere_or_newer(capability: Option<ComputeCapability>) -> bool {
    capability.is_some_and(|capability| capability.major >= 8)
}

/// `compute.bf16`: the bfloat16 matmul where it ran, else whether the GPU supports it.
fn bf16_finding(
    device: &DeviceFacts,
    capability: Option<ComputeCapability>,
    shared: &SharedFailure<'_>,
    expectations: &Expectations<'_>,
) -> Option<Finding> {
    let supported = is_ampere_or_newer(capability) || device.bf16_supported == Some(true);
    match (&device.bf16_matmul, supported) {
        (Some(check), _) if shared.covers(check.error.as_ref()) => None,
        (Some(check), _) => Some(matmul_finding(
            BF16,
            check,
            BFLOAT16_TOLERANCE,
            expectations,
        )),
        (None, true) => Some(Finding::pass(BF16, "bfloat16 is supported")),
        (None, false) => Some(Finding::info(
            BF16,
            match capability {
                Some(capability) => format!(
                    "no native bfloat16 before Ampere (compute capability {capability}): train in float16 with a GradScaler"
                ),
                None => "no native bfloat16: train in float16 with a GradScaler".to_string(),
            },
        )),
    }
}

/// `compute.tf32`: the TF32 matmul on Ampere and newer; before Ampere, a note that there
/// is none; nothing when the capability is unknown.
fn tf32_finding(
    device: &DeviceFacts,
    capability: Option<ComputeCapability>,
    shared: &SharedFailure<'_>,
    expectations: &Expectations<'_>,
) -> Option<Finding> {
    if is_ampere_or_newer(capability) {
        match &device.tf32_matmul {
            Some(check) if shared.covers(check.error.as_ref()) => None,
            Some(check) => Some(matmul_finding(TF32, check, TF32_TOLERANCE, expectations)),
            None => Some(Finding::pass(TF32, "TF32 is supported")),
        }
    } else if capability.is_some() {
        Some(Finding::info(
            TF32,
            "no TF32 before Ampere: float32 matmuls run at full precision",
        ))
    } else {
        None
    }
}

/// `compute.throughput`: the timed matmul's TFLOP/s, or why there is no figure.
fn throughput_finding(benchmark: &Benchmark, expectations: &Expectations<'_>) -> Option<Finding> {
    let dtype = benchmark.dtype.as_deref().unwrap_or("?");
    match (&benchmark.skipped, &benchmark.error, benchmark.tflops) {
        (Some(why), _, _) => Some(Finding::info(
            THROUGHPUT,
            format!("timed matmul skipped: {why}"),
        )),
        (None, Some(error), _) => Some(
            Finding::warn(
                THROUGHPUT,
                format!("the timed {dtype} matmul failed: {}", first_line(error)),
            )
            .with_hint(error_hint(error, expectations)),
        ),
        (None, None, Some(tflops)) => Some(
            Finding::info(
                THROUGHPUT,
                format!(
                    "{dtype} matmul {size}×{size}: {tflops:.1} TFLOP/s",
                    size = benchmark.size.unwrap_or_default()
                ),
            )
            .with_fact("tflops", tflops)
            .with_fact("iterations", benchmark.iterations)
            .with_fact("seconds", benchmark.seconds),
        ),
        (None, None, None) => None,
    }
}

fn matmul_finding(
    id: &str,
    check: &MatmulCheck,
    tolerance: f64,
    expectations: &Expectations<'_>,
) -> Finding {
    let what = if id == TF32 {
        "float32 matmul with TF32".to_string()
    } else {
        format!("{} matmul", check.dtype)
    };
    let facts = |finding: Finding| {
        finding
            .with_fact("relative_error", check.relative_error)
            .with_fact("tolerance", tolerance)
            .with_fact("size", check.size)
    };
    if let Some(error) = &check.error {
        return facts(
            Finding::fail(id, format!("{what} failed: {}", first_line(error)))
                .with_hint(error_hint(error, expectations)),
        );
    }
    let wrong_hint = "the GPU computes wrong results: check `nvidia-smi -q -d ECC` and look for Xid errors in `dmesg` on the host; reset or replace the GPU";
    if check.all_finite == Some(false) {
        return facts(
            Finding::fail(id, format!("{what} produced NaN or infinity")).with_hint(wrong_hint),
        );
    }
    match check.relative_error {
        Some(error) if error > tolerance => facts(
            Finding::fail(
                id,
                format!(
                    "{what} differs from the CPU result by {error:.1e} (tolerance {tolerance:.0e})"
                ),
            )
            .with_hint(wrong_hint),
        ),
        Some(_) => facts(Finding::pass(
            id,
            format!("{what} matches the CPU result (tolerance {tolerance:.0e})"),
        )),
        None => facts(Finding::warn(
            id,
            format!("{what} ran, but its error is unknown"),
        )),
    }
}

fn copy_finding(
    copy: &crate::nvcheck::report::CopyCheck,
    expectations: &Expectations<'_>,
) -> Finding {
    if let Some(why) = &copy.skipped {
        return Finding::info(COPY, format!("copy bandwidth skipped: {why}"));
    }
    if let Some(error) = &copy.error {
        return Finding::warn(
            COPY,
            format!("the host-to-device copy failed: {}", first_line(error)),
        )
        .with_hint(error_hint(error, expectations));
    }
    let Some(rate) = copy.gigabytes_per_second else {
        return Finding::warn(
            COPY,
            "the host-to-device copy ran, but its bandwidth is unknown",
        );
    };
    let facts = |finding: Finding| {
        finding
            .with_fact("gigabytes_per_second", rate)
            .with_fact("pinned", copy.pinned)
            .with_fact("bytes", copy.bytes)
    };
    if copy.pinned == Some(false) {
        let why = copy
            .pin_error
            .as_deref()
            .map_or_else(String::new, |error| format!(" ({})", first_line(error)));
        return facts(
            Finding::warn(
                COPY,
                format!("pinned host memory is unavailable{why}: host-to-device copies run from pageable memory at {rate:.1} GB/s"),
            )
            .with_hint(match &expectations.profile {
                Some(profile) => format!("allow locked memory: `memlock = -1` under [ulimits] in profile `{profile}`, then `envctl up {profile} --recreate`"),
                None => "allow locked memory: recreate the container with `--ulimit memlock=-1`".to_string(),
            }),
        );
    }
    if rate < COPY_MINIMUM_GIGABYTES_PER_SECOND {
        return facts(
            Finding::warn(
                COPY,
                format!(
                    "pinned host-to-device copies reach only {rate:.1} GB/s (PCIe 3.0 x16 gives about 12): a narrow or degraded PCIe link"
                ),
            )
            .with_hint("look at the link's generation and width on the host: `nvidia-smi -q -d PCI` (a riser, a x4 slot, or a link trained down)"),
        );
    }
    facts(Finding::info(
        COPY,
        format!("pinned host-to-device copy: {rate:.1} GB/s"),
    ))
}

/// Folds findings that are the same on several GPUs into one line naming them all.
fn fold(per_device: Vec<DeviceFinding>) -> Vec<Finding> {
    let mut groups: Vec<(Vec<u32>, Vec<String>, Finding)> = Vec::new();
    for item in per_device {
        let same = groups.iter_mut().find(|(_, _, finding)| {
            finding.id == item.finding.id
                && finding.status == item.finding.status
                && finding.message == item.finding.message
                && finding.hint == item.finding.hint
        });
        match same {
            Some((indices, names, _)) => {
                indices.push(item.index);
                if !names.contains(&item.name) {
                    names.push(item.name);
                }
            }
            None => groups.push((vec![item.index], vec![item.name], item.finding)),
        }
    }
    groups
        .into_iter()
        .map(|(indices, names, finding)| {
            let message = format!(
                "GPU {} ({}): {}",
                index_ranges(&indices),
                names.join(", "),
                finding.message
            );
            Finding { message, ..finding }.with_fact("gpu_indices", &indices)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failing(error: &str) -> Option<MatmulCheck> {
        Some(MatmulCheck {
            error: Some(error.to_string()),
            ..MatmulCheck::default()
        })
    }

    #[test]
    fn checks_that_fail_as_the_kernel_did_are_named_on_its_line() {
        let no_image = "CUDA error: no kernel image is available for execution on the device\nmore";
        let device = DeviceFacts {
            elementwise: Some(KernelCheck {
                error: Some(no_image.to_string()),
                ..KernelCheck::default()
            }),
            matmul: failing(no_image),
            tf32_matmul: failing("out of memory"),
            bf16_matmul: failing(no_image),
            benchmark: Some(Benchmark {
                error: Some(no_image.to_string()),
                ..Benchmark::default()
            }),
            ..DeviceFacts::default()
        };
        let shared = SharedFailure::of(&device);
        assert!(shared.covers(Some(
            &"CUDA error: no kernel image is available for execution on the device".to_string()
        )));
        assert!(!shared.covers(None));
        assert_eq!(
            shared.failed_alike(&device, false),
            ["float32", "bfloat16", "timed"]
        );
        // A quick run has no timed matmul to name.
        assert_eq!(shared.failed_alike(&device, true), ["float32", "bfloat16"]);
        let without_kernel_error = DeviceFacts::default();
        assert!(!SharedFailure::of(&without_kernel_error).covers(Some(&String::new())));
    }

    #[test]
    fn the_capability_is_read_only_from_two_numbers() {
        let with = |capability: Option<Vec<u32>>| DeviceFacts {
            capability,
            ..DeviceFacts::default()
        };
        assert_eq!(
            device_capability(&with(Some(vec![9, 0]))),
            Some(ComputeCapability::new(9, 0))
        );
        assert_eq!(device_capability(&with(Some(vec![9]))), None);
        assert_eq!(device_capability(&with(None)), None);
        assert!(is_ampere_or_newer(Some(ComputeCapability::new(8, 0))));
        assert!(!is_ampere_or_newer(Some(ComputeCapability::new(7, 5))));
        assert!(!is_ampere_or_newer(None));
    }
}
