//! The Compute section: a kernel, float32, bfloat16 and TF32 matmuls against the CPU, the
//! timed matmul and the pinned copy bandwidth, per GPU, folded where the GPUs agree.

use super::{
    BF16, BFLOAT16_TOLERANCE, COPY, COPY_MINIMUM_GIGABYTES_PER_SECOND, Expectations,
    FLOAT32_TOLERANCE, KERNEL, MATMUL, TF32, TF32_TOLERANCE, THROUGHPUT, View, exec_hint,
};
use crate::checks::Finding;
use crate::compat::ComputeCapability;
use crate::nvcheck::report::{DeviceFacts, MatmulCheck};
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
        let mut push = |finding: Finding| {
            per_device.push(DeviceFinding {
                index: device.index,
                name: device.name.clone().unwrap_or_else(|| "unnamed GPU".into()),
                finding,
            });
        };
        device_compute(device, quick, expectations, &mut push);
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

fn device_compute(
    device: &DeviceFacts,
    quick: bool,
    expectations: &Expectations<'_>,
    push: &mut impl FnMut(Finding),
) {
    if let Some(error) = &device.compute_error {
        push(
            Finding::fail(
                MATMUL,
                format!("the compute checks stopped: {}", first_line(error)),
            )
            .with_hint(error_hint(error, expectations)),
        );
    }
    // When torch's own kernel fails, the checks after it usually fail the same way: one
    // line says it for all of them.
    let kernel_error = device
        .elementwise
        .as_ref()
        .and_then(|check| check.error.as_deref())
        .map(first_line);
    let same_failure = |error: Option<&String>| {
        kernel_error.is_some() && error.map(|error| first_line(error)) == kernel_error
    };
    let mut also: Vec<&str> = Vec::new();
    let matmuls = [
        (&device.matmul, "float32"),
        (&device.tf32_matmul, "TF32"),
        (&device.bf16_matmul, "bfloat16"),
    ];
    for (check, name) in matmuls {
        if check
            .as_ref()
            .is_some_and(|check| same_failure(check.error.as_ref()))
        {
            also.push(name);
        }
    }
    let timed_failed_alike = !quick
        && device
            .benchmark
            .as_ref()
            .is_some_and(|benchmark| same_failure(benchmark.error.as_ref()));
    if timed_failed_alike {
        also.push("timed");
    }
    if let Some(check) = &device.elementwise {
        match &check.error {
            Some(error) => {
                let alike = match also.as_slice() {
                    [] => String::new(),
                    [one] => format!(" (the {one} matmul failed the same way)"),
                    [first @ .., last] => format!(
                        " (the {} and {last} matmuls failed the same way)",
                        first.join(", ")
                    ),
                };
                push(
                    Finding::fail(
                        KERNEL,
                        format!("a torch kernel failed: {}{alike}", first_line(error)),
                    )
                    .with_hint(error_hint(error, expectations)),
                );
            }
            None if !check.ok => push(
                Finding::fail(
                    KERNEL,
                    "a torch kernel computed a wrong sum",
                )
                .with_fact("value", check.value)
                .with_fact("expected", check.expected)
                .with_hint("the GPU computes wrong results: check `nvidia-smi -q -d ECC` and `dmesg` on the host"),
            ),
            None => {}
        }
    }
    if let Some(check) = device
        .matmul
        .as_ref()
        .filter(|check| !same_failure(check.error.as_ref()))
    {
        push(matmul_finding(
            MATMUL,
            check,
            FLOAT32_TOLERANCE,
            expectations,
        ));
    }
    let capability = match device.capability.as_deref() {
        Some([major, minor]) => Some(ComputeCapability::new(*major, *minor)),
        _ => None,
    };
    let ampere = capability.is_some_and(|capability| capability.major >= 8);
    match (
        &device.bf16_matmul,
        ampere || device.bf16_supported == Some(true),
    ) {
        (Some(check), _) if same_failure(check.error.as_ref()) => {}
        (Some(check), _) => push(matmul_finding(
            BF16,
            check,
            BFLOAT16_TOLERANCE,
            expectations,
        )),
        (None, true) => push(Finding::pass(BF16, "bfloat16 is supported")),
        (None, false) => push(Finding::info(
            BF16,
            match capability {
                Some(capability) => format!(
                    "no native bfloat16 before Ampere (compute capability {capability}): train in float16 with a GradScaler"
                ),
                None => "no native bfloat16: train in float16 with a GradScaler".to_string(),
            },
        )),
    }
    if ampere {
        match &device.tf32_matmul {
            Some(check) if same_failure(check.error.as_ref()) => {}
            Some(check) => push(matmul_finding(TF32, check, TF32_TOLERANCE, expectations)),
            None => push(Finding::pass(TF32, "TF32 is supported")),
        }
    } else if capability.is_some() {
        push(Finding::info(
            TF32,
            "no TF32 before Ampere: float32 matmuls run at full precision",
        ));
    }
    if quick {
        return;
    }
    if let Some(benchmark) = device.benchmark.as_ref().filter(|_| !timed_failed_alike) {
        let dtype = benchmark.dtype.as_deref().unwrap_or("?");
        match (&benchmark.skipped, &benchmark.error, benchmark.tflops) {
            (Some(why), _, _) => push(Finding::info(
                THROUGHPUT,
                format!("timed matmul skipped: {why}"),
            )),
            (None, Some(error), _) => push(
                Finding::warn(
                    THROUGHPUT,
                    format!("the timed {dtype} matmul failed: {}", first_line(error)),
                )
                .with_hint(error_hint(error, expectations)),
            ),
            (None, None, Some(tflops)) => push(
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
            (None, None, None) => {}
        }
    }
    if let Some(copy) = &device.copy {
        push(copy_finding(copy, expectations));
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
