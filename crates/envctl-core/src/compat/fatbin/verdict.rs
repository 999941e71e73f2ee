//! `gpu.library-arch`: whether a GPU can run the kernels of one CUDA library, from the
//! targets its fat binaries carry (compat-facts §2c, through [`crate::compat::reach`]).
//!
//! - machine code for the GPU (or a lower minor of its major, or its `f` family; an `a`
//!   target only on exactly its capability) runs natively: pass;
//! - else PTX for the GPU's capability or an older one is JIT-compiled by the driver: pass
//!   when the driver's CUDA release is at least the one that introduced the PTX's ISA
//!   version, fail when it is older ("the provided PTX was compiled with an unsupported
//!   toolchain"), warn when the driver or the ISA version is unknown;
//! - else the library fails with "no kernel image is available for execution on the
//!   device", unless its fat binaries were damaged or held entries this reader cannot
//!   name: then the lists may be incomplete, and the verdict is a warning that says so.

use crate::checks::Finding;
use crate::compat::reach::{Refusal, target_reach};
use crate::compat::values::Target;
use crate::compat::version::ComputeCapability;
use crate::profile::model::CudaVersion;

use super::{ImageLibraries, LibraryCode, LibrarySummary, PtxTarget, cuda_of_ptx_isa};

pub const GPU_LIBRARY_ARCH: &str = "gpu.library-arch";

/// How one library's kernels reach one GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LibraryVerdict {
    /// No fat binary: nothing to judge.
    NoGpuCode,
    /// This machine code runs natively.
    Native(Target),
    /// No machine code runs; the driver JIT-compiles this PTX.
    Jit(PtxTarget),
    /// Only PTX reaches the GPU and the driver's CUDA release is unknown.
    JitDriverUnknown(PtxTarget),
    /// Only PTX reaches the GPU, of an ISA version no known CUDA release introduced.
    JitIsaUnknown(PtxTarget),
    /// Only PTX reaches the GPU, newer than the driver can JIT-compile.
    PtxTooNew {
        ptx: PtxTarget,
        needs: CudaVersion,
        driver_cuda: CudaVersion,
    },
    /// Nothing runs: every target, with why not.
    NoKernelImage(Vec<Refusal>),
    /// Nothing that was read runs, but reading was incomplete (`why`).
    Incomplete { why: String },
}

impl LibraryVerdict {
    /// Whether this verdict means the library's kernels will not load.
    pub fn fails(&self) -> bool {
        matches!(
            self,
            LibraryVerdict::NoKernelImage(_) | LibraryVerdict::PtxTooNew { .. }
        )
    }
}

/// Judges `code` on a GPU of `capability` whose driver supports CUDA `driver_cuda`
/// natively (none when unknown).
pub fn judge(
    code: &LibraryCode,
    capability: ComputeCapability,
    driver_cuda: Option<CudaVersion>,
) -> LibraryVerdict {
    judge_summary(&code.summary(), capability, driver_cuda)
}

/// [`judge`] over what a scan kept of a library.
pub fn judge_summary(
    code: &LibrarySummary,
    capability: ComputeCapability,
    driver_cuda: Option<CudaVersion>,
) -> LibraryVerdict {
    if !code.has_gpu_code {
        return LibraryVerdict::NoGpuCode;
    }
    let sass = &code.sass;
    if let Some(native) = sass
        .iter()
        .filter(|target| target.machine_code_runs_on(capability))
        .max_by_key(|target| target.capability)
    {
        return LibraryVerdict::Native(*native);
    }
    let ptx = &code.ptx;
    let mut reachable: Vec<PtxTarget> = ptx
        .iter()
        .filter(|entry| target_reach(entry.target, capability).is_ok())
        .copied()
        .collect();
    // The highest capability first, as the runtime picks; among those the lowest ISA
    // version, the most likely to be JIT-compiled.
    reachable.sort_by(|a, b| {
        b.target
            .capability
            .cmp(&a.target.capability)
            .then(a.isa.cmp(&b.isa))
    });
    if !reachable.is_empty() {
        return judge_ptx(&reachable, driver_cuda);
    }
    if let Some(why) = &code.incomplete {
        return LibraryVerdict::Incomplete { why: why.clone() };
    }
    let refusals = sass
        .iter()
        .copied()
        .chain(ptx.iter().map(|entry| entry.target))
        .filter_map(|target| {
            target_reach(target, capability)
                .err()
                .map(|why| Refusal { target, why })
        })
        .collect();
    LibraryVerdict::NoKernelImage(refusals)
}

/// PTX that reaches the GPU, best first: the first the driver can JIT-compile.
fn judge_ptx(reachable: &[PtxTarget], driver_cuda: Option<CudaVersion>) -> LibraryVerdict {
    let Some(driver_cuda) = driver_cuda else {
        return LibraryVerdict::JitDriverUnknown(reachable[0]);
    };
    let mut too_new = None;
    let mut unknown = None;
    for ptx in reachable {
        match cuda_of_ptx_isa(ptx.isa) {
            Some(needs) if needs <= driver_cuda => return LibraryVerdict::Jit(*ptx),
            Some(needs) => {
                too_new.get_or_insert((*ptx, needs));
            }
            None => {
                unknown.get_or_insert(*ptx);
            }
        }
    }
    if let Some(ptx) = unknown {
        return LibraryVerdict::JitIsaUnknown(ptx);
    }
    match too_new {
        Some((ptx, needs)) => LibraryVerdict::PtxTooNew {
            ptx,
            needs,
            driver_cuda,
        },
        // `reachable` is never empty: the caller checks.
        None => LibraryVerdict::JitDriverUnknown(reachable[0]),
    }
}

/// One library of an image, as a finding names it.
#[derive(Debug, Clone, Copy)]
pub struct Library<'a> {
    /// Its path in the image.
    pub path: &'a str,
    /// The distribution it came from (`flash_attn 2.7.4`), from site-packages' RECORD
    /// files when readable.
    pub package: Option<&'a str>,
    pub code: &'a LibrarySummary,
}

fn list(targets: impl Iterator<Item = String>) -> String {
    let names: Vec<String> = targets.collect();
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

/// What a library carries, in words: "sm_80, sm_90 and no PTX".
pub fn carries(code: &LibrarySummary) -> String {
    let sass = list(code.sass.iter().map(Target::to_string));
    let ptx = &code.ptx;
    if ptx.is_empty() {
        format!("machine code for {sass} and no PTX")
    } else {
        format!(
            "machine code for {sass} and PTX {}",
            list(ptx.iter().map(PtxTarget::to_string))
        )
    }
}

/// The pip command that rebuilds `package` (`name version`, as RECORD's folder names it)
/// from its source distribution for `capability`: the same version (`==`), only that
/// package from source (`--no-binary NAME`, never `:all:`, which would build torch too),
/// over the installed one (`--force-reinstall`: else pip finds the version installed and
/// does nothing), its dependencies left alone (`--no-deps`), built against the installed
/// torch (`--no-build-isolation`). tests/it/fatbin_corpus.rs runs it against a local
/// source distribution.
pub fn rebuild_command(package: &str, capability: ComputeCapability) -> String {
    let mut words = package.split_whitespace();
    let name = words.next().unwrap_or(package);
    let requirement = match words.next() {
        Some(version) => format!("{name}=={version}"),
        None => name.to_string(),
    };
    format!(
        "TORCH_CUDA_ARCH_LIST=\"{}.{}\" pip install --force-reinstall --no-deps --no-build-isolation --no-binary {name} {requirement}",
        capability.major, capability.minor
    )
}

/// The finding for one library on one GPU (`gpu` names it: "GPU 0 (NVIDIA B200)").
pub fn library_finding(
    library: Library<'_>,
    gpu: &str,
    capability: ComputeCapability,
    driver_cuda: Option<CudaVersion>,
) -> Option<Finding> {
    let verdict = judge_summary(library.code, capability, driver_cuda);
    let sm = capability.sm();
    let from = match library.package {
        Some(package) => format!("{} (from {package})", library.path),
        None => format!("{} (no package records it)", library.path),
    };
    let carries = carries(library.code);
    let rebuild = rebuild_hint(&library, capability);
    let finding = match &verdict {
        LibraryVerdict::NoGpuCode => return None,
        LibraryVerdict::Native(target) => Finding::pass(
            GPU_LIBRARY_ARCH,
            format!("{from} runs natively on {gpu}: {target} machine code"),
        ),
        LibraryVerdict::Jit(ptx) => Finding::pass(
            GPU_LIBRARY_ARCH,
            format!(
                "{from} has no machine code for {gpu} ({sm}); the driver JIT-compiles its {ptx} at first use (a slower first start)"
            ),
        ),
        LibraryVerdict::JitDriverUnknown(ptx) => Finding::warn(
            GPU_LIBRARY_ARCH,
            format!(
                "{from} reaches {gpu} ({sm}) only through {ptx}; the driver's CUDA release is unknown, so whether it can JIT-compile that PTX is unknown"
            ),
        ),
        LibraryVerdict::JitIsaUnknown(ptx) => Finding::warn(
            GPU_LIBRARY_ARCH,
            format!(
                "{from} reaches {gpu} ({sm}) only through {ptx}, a PTX ISA version envctl does not know; whether the driver can JIT-compile it is unknown"
            ),
        ),
        LibraryVerdict::PtxTooNew {
            ptx,
            needs,
            driver_cuda,
        } => Finding::fail(
            GPU_LIBRARY_ARCH,
            format!(
                "{from} has {carries}; {gpu} ({sm}) can run only its {ptx}, which needs a driver for CUDA {needs} and this one supports CUDA {driver_cuda} → it will fail with `the provided PTX was compiled with an unsupported toolchain`"
            ),
        )
        .with_hint(format!(
            "upgrade the driver to one for CUDA {needs} or newer, or {rebuild}"
        )),
        LibraryVerdict::NoKernelImage(_) => Finding::fail(
            GPU_LIBRARY_ARCH,
            format!(
                "{from} has {carries}; {gpu} is {sm} → it will fail with `no kernel image is available for execution on the device`"
            ),
        )
        .with_hint(rebuild),
        LibraryVerdict::Incomplete { why } => Finding::warn(
            GPU_LIBRARY_ARCH,
            format!(
                "{from} has {carries}, none of which runs on {gpu} ({sm}), but {why}: whether it runs is unknown"
            ),
        ),
    };
    Some(library_facts(finding, &library, capability, driver_cuda))
}

/// How to get a build of `library` that runs on `capability`: its package rebuilt for it
/// where a package records the library, else the library itself.
fn rebuild_hint(library: &Library<'_>, capability: ComputeCapability) -> String {
    let sm = capability.sm();
    match library.package {
        Some(package) => format!(
            "install a build of {package} compiled for {sm} (for example `{}`), or use an image whose build has {sm}",
            rebuild_command(package, capability)
        ),
        None => format!(
            "rebuild {} with {sm} in its architecture list, or use an image whose build has {sm}",
            library.path
        ),
    }
}

/// `finding` with the library, its package, the GPU's capability, the code the library
/// carries and the driver's CUDA release as facts.
fn library_facts(
    finding: Finding,
    library: &Library<'_>,
    capability: ComputeCapability,
    driver_cuda: Option<CudaVersion>,
) -> Finding {
    finding
        .with_fact("library", library.path)
        .with_fact("package", library.package)
        .with_fact("compute_capability", capability.to_string())
        .with_fact(
            "sass",
            library
                .code
                .sass
                .iter()
                .map(Target::to_string)
                .collect::<Vec<_>>(),
        )
        .with_fact(
            "ptx",
            library
                .code
                .ptx
                .iter()
                .map(PtxTarget::to_string)
                .collect::<Vec<_>>(),
        )
        .with_fact("driver_cuda", driver_cuda.map(|cuda| cuda.to_string()))
        .with_fact("rests_on", "image scan (the library's fat binaries)")
}

/// `gpu.library-arch` for a whole image on the GPUs that will run it (each named and with
/// its capability): a finding for each library that fails or is unknown on a GPU, then one
/// pass per GPU on which every library runs; a library that cannot be read, and a layer
/// not read, each a warning. None for an image without CUDA libraries of its own.
pub fn image_findings(
    image: &str,
    libraries: &ImageLibraries,
    gpus: &[(String, ComputeCapability)],
    driver_cuda: Option<CudaVersion>,
) -> Vec<Finding> {
    let mut findings = unread_parts(image, libraries);
    // An image without CUDA code of its own: nothing to say (most images).
    if libraries.libraries.is_empty() {
        return findings;
    }
    let groups = variant_groups(libraries);
    for (gpu, capability) in gpus {
        let failing: Vec<Finding> = groups
            .iter()
            .flat_map(|members| failing_on(members, gpu, *capability, driver_cuda))
            .collect();
        if failing.is_empty() {
            findings.push(
                Finding::pass(
                    GPU_LIBRARY_ARCH,
                    format!(
                        "every CUDA library of image `{image}` ({}) has code that runs on {gpu} ({})",
                        libraries.libraries.len(),
                        capability.sm()
                    ),
                )
                .with_fact("rests_on", "image scan (the library's fat binaries)"),
            );
        } else {
            findings.extend(failing);
        }
    }
    findings
}

/// A warning for each layer of `image` not read (zstd), then for each library that could
/// not be read: what they hold is unknown.
fn unread_parts(image: &str, libraries: &ImageLibraries) -> Vec<Finding> {
    let layers = libraries.unread_layers.iter().map(|layer| {
        Finding::warn(
            GPU_LIBRARY_ARCH,
            format!("layer {layer} of image `{image}` is compressed otherwise than with gzip (zstd) and was not read: its CUDA libraries are unknown"),
        )
        .with_fact("rests_on", "image scan (the library's fat binaries)")
    });
    let unreadable = libraries.unreadable.iter().map(|unread| {
        Finding::warn(
            GPU_LIBRARY_ARCH,
            format!(
                "{} in image `{image}` could not be read ({}): whether it runs is unknown",
                unread.path, unread.why
            ),
        )
    });
    layers.chain(unreadable).collect()
}

/// The image's libraries grouped by [`variant_group`], in the order each group first
/// appears: builds of one library for several CUDA releases (bitsandbytes'
/// `libbitsandbytes_cuda118.so` … `_cuda132.so`), of which the package loads one.
fn variant_groups(libraries: &ImageLibraries) -> Vec<Vec<&super::ScannedLibrary>> {
    let mut groups: Vec<(String, Vec<&super::ScannedLibrary>)> = Vec::new();
    for scanned in &libraries.libraries {
        let key = variant_group(&scanned.path);
        match groups.iter_mut().find(|(known, _)| *known == key) {
            Some((_, members)) => members.push(scanned),
            None => groups.push((key, vec![scanned])),
        }
    }
    groups.into_iter().map(|(_, members)| members).collect()
}

/// The findings of a group of builds (`members`) that do not pass on one GPU: none when
/// one of several builds runs there (the package loads that one), else each that fails.
fn failing_on(
    members: &[&super::ScannedLibrary],
    gpu: &str,
    capability: ComputeCapability,
    driver_cuda: Option<CudaVersion>,
) -> Vec<Finding> {
    let judged: Vec<Finding> = members
        .iter()
        .filter_map(|scanned| {
            let library = Library {
                path: &scanned.path,
                package: scanned.package.as_deref(),
                code: &scanned.code,
            };
            library_finding(library, gpu, capability, driver_cuda)
        })
        .collect();
    if members.len() > 1
        && judged
            .iter()
            .any(|finding| finding.status == crate::checks::Status::Pass)
    {
        return Vec::new();
    }
    judged
        .into_iter()
        .filter(|finding| finding.status != crate::checks::Status::Pass)
        .collect()
}

/// The variant group of a library path: its name with a CUDA release tag (`cuda118`,
/// `cu128`) replaced, so the builds of one library for several releases share a key.
pub fn variant_group(path: &str) -> String {
    let (folder, file) = path.rsplit_once('/').unwrap_or(("", path));
    let mut key = String::with_capacity(file.len());
    let mut rest = file;
    while !rest.is_empty() {
        let tag = ["_cuda", "_cu", "-cuda", "-cu"]
            .iter()
            .find(|tag| rest.starts_with(**tag))
            .copied();
        if let Some(tag) = tag {
            let digits = rest[tag.len()..]
                .bytes()
                .take_while(u8::is_ascii_digit)
                .count();
            if digits >= 2 {
                key.push_str(tag);
                key.push('*');
                rest = &rest[tag.len() + digits..];
                continue;
            }
        }
        let mut characters = rest.chars();
        if let Some(character) = characters.next() {
            key.push(character);
        }
        rest = characters.as_str();
    }
    format!("{folder}/{key}")
}
