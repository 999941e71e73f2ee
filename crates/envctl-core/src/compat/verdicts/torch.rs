//! `gpu.torch-arch`: whether a torch build has kernels for a GPU, as a query with named
//! steps ([`TorchQuery::verdict`]): settle the platform, then the variant, then the build
//! row, and judge it (machine code, or PTX through the driver's JIT).

use super::toolkit::gpu_label;
use super::torch_builds::{
    TorchCandidate, alternatives_hint, below_pinned_runtime, build_status, kernels, release_text,
    targets_text,
};
use super::{ARCH_LIST_COMMAND, GPU_TORCH_ARCH, JETSON_TORCH, dropped_rows, with_matrix};
use crate::checks::{Finding, Status};
use crate::compat::matrix::{CudaDriverRow, GpuHost, Matrix, Row, TorchBuildRow};
use crate::compat::reach::Reach;
use crate::compat::values::{CudaVariant, Platform, RowStatus, Target, TorchRelease};
use crate::compat::version::{ComputeCapability, DriverVersion};
use crate::profile::model::{CudaVersion, TorchVersion};
use std::cmp::Reverse;

/// Checks that a torch build has kernels for a GPU of `capability` (compat-facts §2c, §3b):
/// machine code runs on the same major with an equal or higher minor; PTX is JIT-compiled
/// for any higher capability, only by a driver at least the build's CUDA minimum (so
/// `driver` matters only then). Without a variant in `torch`, the variant is inferred from
/// `cuda` (`12.8` → `cu128`, recorded in the facts); without either, every build of the
/// release is checked. An unknown release or variant warns; nothing is guessed.
/// `candidates` are profiles to suggest, in order; the hint names the first that works.
///
/// `platform` is the host's (`None`: unknown): the x86_64 and aarch64 wheels of a release
/// differ, and the message names the one it judged. A GPU found only on aarch64 hosts (Thor,
/// GB10) is judged by the aarch64 wheel whatever the platform says; a Jetson GPU under L4T
/// (Orin, Xavier) by neither: the verdict says no bundled row covers it.
pub fn gpu_vs_torch(
    matrix: &Matrix,
    platform: Option<Platform>,
    capability: ComputeCapability,
    torch: &TorchVersion,
    cuda: Option<CudaVersion>,
    driver: Option<&DriverVersion>,
    candidates: &[TorchCandidate<'_>],
) -> Finding {
    TorchQuery {
        matrix,
        platform,
        capability,
        all_capabilities: &[capability],
        torch,
        cuda,
        driver,
        candidates,
    }
    .verdict()
}

/// [`gpu_vs_torch`] for every GPU of a (possibly mixed) host: one finding per distinct
/// compute capability, with the GPU indices it covers in the `gpu_indices` fact. Hints
/// name what runs on every GPU where something does.
pub fn gpus_vs_torch(
    matrix: &Matrix,
    platform: Option<Platform>,
    capabilities: &[ComputeCapability],
    torch: &TorchVersion,
    cuda: Option<CudaVersion>,
    driver: Option<&DriverVersion>,
    candidates: &[TorchCandidate<'_>],
) -> Vec<Finding> {
    let mut distinct: Vec<ComputeCapability> = Vec::new();
    for capability in capabilities {
        if !distinct.contains(capability) {
            distinct.push(*capability);
        }
    }
    distinct
        .iter()
        .map(|capability| {
            let indices: Vec<usize> = capabilities
                .iter()
                .enumerate()
                .filter(|(_, other)| *other == capability)
                .map(|(index, _)| index)
                .collect();
            TorchQuery {
                matrix,
                platform,
                capability: *capability,
                all_capabilities: &distinct,
                torch,
                cuda,
                driver,
                candidates,
            }
            .verdict()
            .with_fact("gpu_indices", indices)
        })
        .collect()
}

/// One torch verdict's question (issue 42: a query with named steps): a GPU of
/// `capability` among `all_capabilities` of the host, a torch build, the host's platform
/// and driver, and the profiles a hint may suggest. [`TorchQuery::verdict`] answers it.
struct TorchQuery<'a> {
    matrix: &'a Matrix,
    platform: Option<Platform>,
    capability: ComputeCapability,
    all_capabilities: &'a [ComputeCapability],
    torch: &'a TorchVersion,
    cuda: Option<CudaVersion>,
    driver: Option<&'a DriverVersion>,
    candidates: &'a [TorchCandidate<'a>],
}

/// What a verdict has settled so far, each step adding to the facts its findings carry:
/// the platform, then the variant (and the CUDA it was inferred from), then the build row.
#[derive(Clone, Copy)]
struct Settled<'a> {
    platform: Platform,
    variant: Option<(&'a CudaVariant, Option<CudaVersion>)>,
    build: Option<&'a TorchBuildRow>,
}

fn check_inside_the_container() -> String {
    format!("check its arch list inside the container: {ARCH_LIST_COMMAND}")
}

fn with_optional_hint(finding: Finding, hint: Option<String>) -> Finding {
    match hint {
        Some(hint) => finding.with_hint(hint),
        None => finding,
    }
}

impl<'a> TorchQuery<'a> {
    fn release(&self) -> TorchRelease {
        TorchRelease::of(self.torch)
    }

    fn gpu(&self) -> String {
        gpu_label(self.matrix, self.capability)
    }

    /// The facts every finding carries, before the platform is known.
    fn plain(&self, platform: Option<Platform>, finding: Finding) -> Finding {
        let mut finding = with_matrix(finding, self.matrix)
            .with_fact("capability", self.capability)
            .with_fact("torch", self.torch.to_string())
            .with_fact("platform", platform);
        if let Some(driver) = self.driver {
            finding = finding.with_fact("driver", driver.to_string());
        }
        finding
    }

    /// The facts of what is settled; a finding resting on a build row says how well the
    /// row is supported.
    fn facts(&self, settled: Settled<'_>, finding: Finding) -> Finding {
        let mut finding = self.plain(Some(settled.platform), finding);
        if let Some(cuda) = self.cuda {
            finding = finding.with_fact("cuda", cuda);
        }
        if let Some((variant, inferred_from)) = settled.variant {
            finding = finding.with_fact("variant", variant.as_str());
            if let Some(cuda) = inferred_from {
                finding = finding.with_fact("variant_inferred_from_cuda", cuda);
            }
        }
        if let Some(build) = settled.build {
            finding = finding.with_fact("build_row", build);
            finding.message.push_str(build.status.caveat());
        }
        finding
    }

    /// What to run instead, on `platform`.
    fn hint(&self, platform: Platform) -> Option<String> {
        alternatives_hint(
            self.matrix,
            self.torch,
            platform,
            self.capability,
            self.all_capabilities,
            self.driver,
            self.candidates,
        )
    }

    /// Step 1: the platform whose wheel applies. A GPU found only in aarch64 hosts runs the
    /// aarch64 wheel, whatever was said; a Jetson GPU under L4T runs neither PyPI wheel.
    fn verdict(&self) -> Finding {
        let release = self.release();
        let gpu_host = self.matrix.gpu_host(self.capability);
        let platform = match gpu_host {
            Some(GpuHost::Aarch64) => Some(Platform::Aarch64),
            _ => self.platform,
        };
        if gpu_host == Some(GpuHost::Jetson) && self.torch.variant.as_deref() != Some("cpu") {
            let message = format!(
                "{} is a Jetson GPU: neither PyPI wheel of torch {release} (x86_64, aarch64 SBSA) runs on Jetson under L4T, and no bundled row covers NVIDIA's Jetson builds of torch, so whether torch {} has kernels for it is unknown",
                self.gpu(),
                self.torch
            );
            let hint = format!(
                "install {JETSON_TORCH}, then check its arch list inside the container: {ARCH_LIST_COMMAND}"
            );
            return self.plain(
                platform,
                Finding::warn(GPU_TORCH_ARCH, message).with_hint(hint),
            );
        }
        let Some(platform) = platform else {
            let message = format!(
                "the host's platform is unknown, so which torch {release} wheel applies (x86_64 or aarch64, which differ) is unknown"
            );
            return self.plain(
                None,
                Finding::warn(GPU_TORCH_ARCH, message).with_hint(check_inside_the_container()),
            );
        };
        self.on_platform(Settled {
            platform,
            variant: None,
            build: None,
        })
    }

    /// Step 2: builds that are not judged by an arch list (CPU-only, pre-release, PyPI's
    /// aarch64 CPU wheel, a release without builds on the platform), then the variant.
    fn on_platform(&self, settled: Settled<'_>) -> Finding {
        let (matrix, torch, platform) = (self.matrix, self.torch, settled.platform);
        let release = self.release();
        if let Some(finding) = self.not_judged_by_arch_list(platform) {
            return self.facts(settled, finding);
        }
        let builds = matrix.torch_builds(release, platform);
        if builds.is_empty() {
            return self.without_builds(settled);
        }
        let variant = match self.variant(&builds) {
            Ok(variant) => variant,
            Err(unknown) => return self.facts(settled, unknown),
        };
        let Some((variant, inferred_from)) = variant else {
            return every_build(
                matrix,
                platform,
                self.capability,
                torch,
                &builds,
                self.driver,
                || self.hint(platform),
                |finding| self.facts(settled, finding),
            );
        };
        let settled = Settled {
            variant: Some((&variant, inferred_from)),
            ..settled
        };
        let label = match inferred_from {
            Some(cuda) => {
                format!("torch {torch} ({variant}, inferred from CUDA {cuda}; {platform} wheel)")
            }
            None => format!("torch {torch} ({platform} wheel)"),
        };
        match matrix.torch_build(release, &variant, platform) {
            Some(build) => self.judge_build(
                Settled {
                    build: Some(build),
                    ..settled
                },
                build,
                &label,
            ),
            None => self.without_build(settled, &variant, &label, &builds),
        }
    }

    /// A build that no arch list judges on `platform`: a CPU-only build, a pre-release
    /// or vendor build, or PyPI's aarch64 CPU wheel.
    fn not_judged_by_arch_list(&self, platform: Platform) -> Option<Finding> {
        let (matrix, torch) = (self.matrix, self.torch);
        let gpu = self.gpu();
        if torch.variant.as_deref() == Some("cpu") {
            let message = format!("torch {torch} is a CPU-only build: it cannot use {gpu}");
            return Some(with_optional_hint(
                Finding::warn(GPU_TORCH_ARCH, message),
                self.hint(platform),
            ));
        }
        if !torch.version.pre.is_empty() {
            let message = format!(
                "torch {torch} is a pre-release or vendor build (nightly, NGC): its arch list is not in {}",
                matrix.describe()
            );
            return Some(
                Finding::warn(GPU_TORCH_ARCH, message).with_hint(check_inside_the_container()),
            );
        }
        // `pip install torch==2.10.0` on aarch64 gets PyPI's CPU wheel, whatever CUDA builds
        // download.pytorch.org has: a torch named without a variant or a CUDA is that wheel.
        let pypi_cpu_wheel = platform == Platform::Aarch64
            && torch.variant.is_none()
            && self.cuda.is_none()
            && matrix
                .torch_release(self.release())
                .is_some_and(|row| row.pypi_aarch64_is_cpu());
        if pypi_cpu_wheel {
            let message = format!(
                "torch {torch} from PyPI on aarch64 is a CPU-only build (PyPI's aarch64 wheels are CUDA builds only from 2.11): `pip install torch=={}` on this Arm host cannot use {gpu}",
                release_text(torch)
            );
            return Some(with_optional_hint(
                Finding::warn(GPU_TORCH_ARCH, message),
                self.hint(platform),
            ));
        }
        None
    }

    /// The build's CUDA variant: the one torch names (a name no build has is refused,
    /// listing the known `builds`), else the one of the CUDA it was asked with (and that
    /// CUDA); `None` when neither is known.
    fn variant(
        &self,
        builds: &[&TorchBuildRow],
    ) -> Result<Option<(CudaVariant, Option<CudaVersion>)>, Finding> {
        let torch = self.torch;
        match (torch.variant.as_deref(), self.cuda) {
            (Some(variant), _) => match variant.parse::<CudaVariant>() {
                Ok(variant) => Ok(Some((variant, None))),
                Err(_) => Err(Finding::warn(
                    GPU_TORCH_ARCH,
                    format!(
                        "torch {torch} has the unknown variant `{variant}`; known builds of torch {}: {}",
                        self.release(),
                        variant_names(builds)
                    ),
                )),
            },
            (None, Some(cuda)) => Ok(Some((CudaVariant::for_cuda(cuda), Some(cuda)))),
            (None, None) => Ok(None),
        }
    }

    /// A release without builds on the platform: its arch list there is unknown.
    fn without_builds(&self, settled: Settled<'_>) -> Finding {
        let (matrix, platform) = (self.matrix, settled.platform);
        let release = self.release();
        let x86_only = platform != Platform::X86_64
            && !matrix.torch_builds(release, Platform::X86_64).is_empty();
        // A user's UNVERIFIED rows for this release and platform, which no verdict uses.
        let dropped: Vec<String> = matrix
            .torch_build
            .iter()
            .filter(|row| !row.status.usable() && row.torch == release && row.platform == platform)
            .map(|row| dropped_rows(std::slice::from_ref(row), &row.key()))
            .collect();
        let dropped = dropped.concat();
        let message = if x86_only {
            format!(
                "torch {release} has no {platform} build in {}{dropped}: its {platform} arch list is unknown (the x86_64 wheel's list does not apply: the {platform} wheels are built for other GPUs)",
                matrix.describe()
            )
        } else {
            format!(
                "torch {release} is not in {}{dropped}: its arch list is unknown",
                matrix.describe()
            )
        };
        let check = check_inside_the_container();
        let hint = match self.hint(platform) {
            Some(alternative) => format!("{check}; or {alternative}"),
            None => check,
        };
        self.facts(
            settled,
            Finding::warn(GPU_TORCH_ARCH, message).with_hint(hint),
        )
    }

    /// A variant without a build row on the platform: a late variant, a listed variant
    /// whose arch list is unknown, or no such build.
    fn without_build(
        &self,
        settled: Settled<'_>,
        variant: &CudaVariant,
        label: &str,
        builds: &[&TorchBuildRow],
    ) -> Finding {
        let (matrix, torch, platform) = (self.matrix, self.torch, settled.platform);
        let release = self.release();
        let warn = |message: String| {
            self.facts(
                settled,
                Finding::warn(GPU_TORCH_ARCH, message).with_hint(check_inside_the_container()),
            )
        };
        let key = match platform {
            Platform::X86_64 => format!("{release}+{variant}"),
            platform => format!("{release}+{variant} {platform}"),
        };
        // A variant that came with a later patch (cu129 from 2.12.1): this version either
        // has it (only its arch list is unknown) or predates it.
        if let Some(late) = matrix
            .torch_release(release)
            .and_then(|row| row.late_variant(variant))
        {
            let from: Option<TorchVersion> = late.from.parse().ok();
            let has_it = from.is_some_and(|from| torch.version >= from.version);
            return warn(if has_it {
                format!(
                    "{label}: torch {release} has {variant} builds from {}, but their arch list is not in {}",
                    late.from,
                    matrix.describe()
                )
            } else {
                format!(
                    "{label}: torch {torch} has no {variant} build: {variant} wheels of torch {release} exist only from {}, and their arch list is not in {}",
                    late.from,
                    matrix.describe()
                )
            });
        }
        // A build the release lists (cu129 of 2.11, published on download.pytorch.org)
        // exists: only its arch list is unknown. Saying it has no such build would be false.
        if matrix
            .torch_release(release)
            .is_some_and(|row| row.variants.contains(variant))
        {
            return warn(format!(
                "{label}: torch {release} has a {variant} build, but its arch list is not in {}{}",
                matrix.describe(),
                dropped_rows(&matrix.torch_build, &key)
            ));
        }
        warn(format!(
            "{label}: torch {release} has no {platform} {variant} build in {}{} (known: {})",
            matrix.describe(),
            dropped_rows(&matrix.torch_build, &key),
            variant_names(builds)
        ))
    }

    /// Step 3: the build row's kernels on this GPU.
    fn judge_build(&self, settled: Settled<'_>, build: &TorchBuildRow, label: &str) -> Finding {
        let (sm, gpu) = (self.capability.sm(), self.gpu());
        match kernels(self.matrix, build, self.capability) {
            Reach::Cubin(target) if target.capability == self.capability => self.runs(
                settled,
                build,
                target,
                format!("{label} has {target} kernels for {gpu}"),
            ),
            Reach::Cubin(target) => self.runs(
                settled,
                build,
                target,
                format!(
                    "{label} has no {sm} kernels, but its {target} kernels run on {gpu}: same major, lower minor"
                ),
            ),
            Reach::Ptx(ptx) => self.through_ptx(settled, build, ptx, label),
            Reach::Missing(_) => {
                let message = format!(
                    "{sm} is not compatible with the current PyTorch installation: {label} has kernels only for {}, none of which runs on {gpu}",
                    targets_text(build)
                );
                // Where nothing in the matrix runs here (a T4 on an Arm host), say so rather
                // than leave the failure without a way forward.
                let hint = self.hint(settled.platform).unwrap_or_else(|| {
                    format!(
                        "no {} torch build in {} has code for {sm}: a build made with {sm} in TORCH_CUDA_ARCH_LIST, or a host whose wheels carry it, is needed",
                        settled.platform,
                        self.matrix.describe()
                    )
                });
                self.facts(
                    settled,
                    Finding::fail(GPU_TORCH_ARCH, message).with_hint(hint),
                )
            }
        }
    }

    /// Machine code runs: a pass, unless a library of the wheel lacks the target (its
    /// operations have no kernels here although torch's own do) or the driver is below the
    /// runtime the wheel pins (13.2 Update 2 for 2.15.0, not the variant's GA release).
    fn runs(
        &self,
        settled: Settled<'_>,
        build: &TorchBuildRow,
        target: Target,
        message: String,
    ) -> Finding {
        let said: Vec<String> = build
            .library_gaps
            .iter()
            .filter(|gap| gap.missing.contains(&target))
            .map(|gap| {
                format!(
                    "{} ({}) has {target} in only {} of its {} fat binaries",
                    gap.library, gap.holds, gap.carried, gap.fatbins
                )
            })
            .collect();
        let mut message = message;
        let mut hints = Vec::new();
        let mut status = Status::Pass;
        if !said.is_empty() {
            message = format!(
                "{message}, but {}: those operations have no kernels for {} and fail with `no kernel image is available for execution on the device`",
                said.join("; "),
                self.gpu()
            );
            hints.push("torch.backends.cuda.preferred_linalg_library('cusolver') keeps linalg on cuSOLVER, which ships its own kernels; or use a build whose libraries carry this target".to_string());
            status = Status::Warn;
        }
        let runtime = self.matrix.runtime_row(build);
        if let Some(floor) = self
            .driver
            .and_then(|driver| below_pinned_runtime(self.matrix, build, driver))
        {
            message = format!("{message}; {}", floor.message);
            hints.push(floor.hint);
            status = status.max(floor.status);
        }
        let finding = match status {
            Status::Pass => Finding::pass(GPU_TORCH_ARCH, message),
            _ => Finding::warn(GPU_TORCH_ARCH, message).with_hint(hints.join("; or ")),
        };
        match (runtime.pin, runtime.row) {
            (Some(_), Some(row)) => self.facts(settled, finding.with_fact("runtime_row", row)),
            _ => self.facts(settled, finding),
        }
    }

    /// Only PTX reaches the GPU: a pass with a driver that can JIT it (at least the
    /// minimum of the runtime the build was made with), a failure with an older one, a
    /// warning when the driver is unknown.
    fn through_ptx(
        &self,
        settled: Settled<'_>,
        build: &TorchBuildRow,
        ptx: Target,
        label: &str,
    ) -> Finding {
        let runtime = self.matrix.runtime_row(build);
        let built_with = runtime.described(build.variant.cuda());
        let release_row = runtime.row;
        let minimum = release_row.and_then(CudaDriverRow::minimum);
        let needed = release_row.map_or_else(
            || "an unknown driver".to_string(),
            CudaDriverRow::minimum_text,
        );
        let facts = |finding: Finding| match release_row {
            Some(row) => self.facts(settled, finding).with_fact("release_row", row),
            None => self.facts(settled, finding),
        };
        let jit = format!(
            "{label} has no machine code for {}; its {ptx} PTX is JIT-compiled by the driver (slow first start)",
            self.gpu()
        );
        match (self.driver, minimum) {
            (Some(driver), Some(minimum)) if *driver >= minimum => facts(Finding::pass(
                GPU_TORCH_ARCH,
                format!(
                    "{jit}, which driver {driver} can do (it needs {needed}, the minimum of {built_with})"
                ),
            )),
            (Some(driver), Some(_)) => {
                let message = format!(
                    "{jit}, but driver {driver} is older than {needed}, the minimum of {built_with}, and cannot JIT its PTX (cudaErrorUnsupportedPtxVersion)"
                );
                let upgrade = format!("upgrade the driver to {needed} or newer");
                let hint = match self.hint(settled.platform) {
                    Some(alternative) => format!("{upgrade}; or {alternative}"),
                    None => upgrade,
                };
                facts(Finding::fail(GPU_TORCH_ARCH, message).with_hint(hint))
            }
            _ => {
                let message = format!(
                    "{jit}, which needs driver {needed} or newer (the minimum of {built_with})"
                );
                facts(Finding::warn(GPU_TORCH_ARCH, message).with_hint(format!(
                    "check with `nvidia-smi` that the driver is {needed} or newer"
                )))
            }
        }
    }
}

/// `cu126, cu128`: the variants of some builds.
fn variant_names(builds: &[&TorchBuildRow]) -> String {
    builds
        .iter()
        .map(|build| build.variant.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The verdict for a torch release without a variant: every build of it, on one GPU.
#[allow(clippy::too_many_arguments)]
fn every_build(
    matrix: &Matrix,
    platform: Platform,
    capability: ComputeCapability,
    torch: &TorchVersion,
    builds: &[&TorchBuildRow],
    driver: Option<&DriverVersion>,
    hint: impl Fn() -> Option<String>,
    base: impl Fn(Finding) -> Finding,
) -> Finding {
    let release = TorchRelease::of(torch);
    let sm = capability.sm();
    let gpu = gpu_label(matrix, capability);
    let (working, failing): (Vec<&TorchBuildRow>, Vec<&TorchBuildRow>) = builds
        .iter()
        .partition(|build| build_status(matrix, build, capability, driver) == Status::Pass);
    let names = |builds: &[&TorchBuildRow]| {
        builds
            .iter()
            .map(|build| build.variant.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let rows: Vec<&TorchBuildRow> = builds.to_vec();
    // The builds whose rows are not verified, by status: ` (cu118, cu126: derived: not measured)`.
    let mut caveats = String::new();
    for status in [RowStatus::Secondary, RowStatus::Derived] {
        let resting: Vec<&TorchBuildRow> = builds
            .iter()
            .copied()
            .filter(|build| build.status == status)
            .collect();
        if !resting.is_empty() {
            caveats.push_str(&format!(
                " ({}: {}",
                names(&resting),
                status.caveat().trim_start_matches(" (")
            ));
        }
    }
    let base = |finding: Finding| {
        let mut finding = base(finding).with_fact("build_rows", &rows);
        finding.message.push_str(&caveats);
        finding
    };
    if failing.is_empty() {
        base(Finding::pass(
            GPU_TORCH_ARCH,
            format!(
                "every CUDA build of torch {release} for {platform} in {} ({}) runs on {gpu}",
                matrix.describe(),
                names(&working)
            ),
        ))
    } else if working.is_empty() {
        let message = format!(
            "{sm} is not compatible with any CUDA build of torch {release} ({}), so PyTorch would report `{sm} is not compatible with the current PyTorch installation`",
            names(&failing)
        );
        let finding = Finding::fail(GPU_TORCH_ARCH, message);
        base(match hint() {
            Some(hint) => finding.with_hint(hint),
            None => finding,
        })
    } else {
        let mut working = working;
        working.sort_by_key(|build| Reverse(build.variant.cuda()));
        let message = format!(
            "torch {torch} names no CUDA variant: its {} builds run on {gpu}, its {} builds do not",
            names(&working),
            names(&failing)
        );
        let suggestion = format!(
            "write the variant in the profile's [stack], e.g. torch = \"{}+{}\"",
            release_text(torch),
            working[0].variant
        );
        base(Finding::warn(GPU_TORCH_ARCH, message).with_hint(suggestion))
    }
}
