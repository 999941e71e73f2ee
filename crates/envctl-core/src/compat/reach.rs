//! The architecture-reach rule (compat-facts §2c), written once: can a GPU of compute
//! capability X run a build whose arch list holds these `sm_`/`compute_` targets, and how.
//! Doctor's matrix verdicts (`compat::verdicts`) and nvidia-check's verdict over the real
//! `torch.cuda.get_arch_list()` (`nvcheck::judge`) both ask [`reach`].
//!
//! Per target ([`target_reach`]):
//! - a cubin (`sm_XY`) runs on the same major with a minor at least Y;
//! - PTX (`compute_XY`) is JIT-compiled forward by the driver to any later capability;
//! - an `a` target (`sm_90a`, `compute_90a`) runs only on exactly its capability;
//! - an `f` target (`sm_100f`, CUDA 12.9+) runs on its family: the same major, a minor at
//!   least its own.
//!
//! Over a list, machine code wins over PTX (no JIT, no slow first start), and among
//! several the highest capability is chosen, as the CUDA runtime does.

use std::fmt;

use super::values::{Target, TargetKind, TargetSuffix};
use super::version::ComputeCapability;

/// How one target reaches a GPU it runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// Its machine code runs natively.
    Cubin,
    /// Its PTX is JIT-compiled by the driver.
    Ptx,
}

/// Why one target does not run on a GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mismatch {
    /// Machine code of another major: cubins never cross a major version.
    OtherMajor,
    /// Machine code of the same major for a higher minor: cubins run only upwards.
    HigherMinor,
    /// An `a` target for another capability: it runs only on exactly its own.
    OtherArchitecture,
    /// An `f` target of another family (major).
    OtherFamily,
    /// PTX for a newer capability: the driver JIT-compiles PTX only forward.
    NewerPtx,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            Mismatch::OtherMajor => "machine code of another major",
            Mismatch::HigherMinor => "machine code for a higher minor of the same major",
            Mismatch::OtherArchitecture => {
                "an architecture-specific target for another compute capability"
            }
            Mismatch::OtherFamily => "a family target of another major",
            Mismatch::NewerPtx => "PTX for a newer compute capability",
        })
    }
}

/// One target of a list that does not run, with why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    pub target: Target,
    pub why: Mismatch,
}

/// How a build's arch list reaches a GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    /// Machine code that runs natively: for this capability, or for a lower minor of its
    /// major (or family).
    Cubin(Target),
    /// No machine code runs; this PTX is JIT-compiled by the driver.
    Ptx(Target),
    /// Nothing runs ("no kernel image is available for execution on the device"): every
    /// target of the list, with why it does not.
    Missing(Vec<Refusal>),
}

/// Whether `target` runs on a GPU of `capability`, and how (the rules in the module doc).
pub fn target_reach(target: Target, capability: ComputeCapability) -> Result<Via, Mismatch> {
    let via = match target.kind {
        TargetKind::Real => Via::Cubin,
        TargetKind::Virtual => Via::Ptx,
    };
    let same_major = target.capability.major == capability.major;
    match (target.suffix, target.kind) {
        (TargetSuffix::ArchitectureSpecific, _) if target.capability != capability => {
            Err(Mismatch::OtherArchitecture)
        }
        (TargetSuffix::ArchitectureSpecific, _) => Ok(via),
        (TargetSuffix::Family, _) if !same_major => Err(Mismatch::OtherFamily),
        (TargetSuffix::Portable, TargetKind::Real) if !same_major => Err(Mismatch::OtherMajor),
        (TargetSuffix::Family | TargetSuffix::Portable, _)
            if target.capability.minor > capability.minor && same_major =>
        {
            Err(match target.kind {
                TargetKind::Real => Mismatch::HigherMinor,
                TargetKind::Virtual => Mismatch::NewerPtx,
            })
        }
        // Portable PTX of an older major is JIT-compiled forward; of a newer one it is not.
        (TargetSuffix::Portable, TargetKind::Virtual) if target.capability > capability => {
            Err(Mismatch::NewerPtx)
        }
        (TargetSuffix::Family | TargetSuffix::Portable, _) => Ok(via),
    }
}

/// How a build with `targets` reaches a GPU of `capability`: the highest cubin that runs,
/// else the highest PTX that JIT-compiles, else why none does.
pub fn reach(capability: ComputeCapability, targets: &[Target]) -> Reach {
    let highest = |wanted: Via| {
        targets
            .iter()
            .filter(|target| target_reach(**target, capability) == Ok(wanted))
            .max_by_key(|target| target.capability)
            .copied()
    };
    if let Some(cubin) = highest(Via::Cubin) {
        return Reach::Cubin(cubin);
    }
    if let Some(ptx) = highest(Via::Ptx) {
        return Reach::Ptx(ptx);
    }
    let refusals = targets
        .iter()
        .filter_map(|target| {
            target_reach(*target, capability).err().map(|why| Refusal {
                target: *target,
                why,
            })
        })
        .collect();
    Reach::Missing(refusals)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets(texts: &[&str]) -> Vec<Target> {
        texts.iter().map(|text| text.parse().unwrap()).collect()
    }

    fn target(text: &str) -> Target {
        text.parse().unwrap()
    }

    fn capability(major: u32, minor: u32) -> ComputeCapability {
        ComputeCapability::new(major, minor)
    }

    #[test]
    fn architecture_specific_targets_run_only_on_their_capability() {
        assert_eq!(
            reach(capability(9, 0), &targets(&["sm_90a"])),
            Reach::Cubin(target("sm_90a"))
        );
        assert_eq!(
            reach(capability(10, 0), &targets(&["sm_90a"])),
            Reach::Missing(vec![Refusal {
                target: target("sm_90a"),
                why: Mismatch::OtherArchitecture
            }])
        );
        // The copy in doctor's verdicts let `compute_90a` PTX JIT forward to 10.0.
        assert_eq!(
            reach(capability(10, 0), &targets(&["compute_90a"])),
            Reach::Missing(vec![Refusal {
                target: target("compute_90a"),
                why: Mismatch::OtherArchitecture
            }])
        );
        assert_eq!(
            reach(capability(9, 0), &targets(&["compute_90a"])),
            Reach::Ptx(target("compute_90a"))
        );
    }

    #[test]
    fn family_targets_run_on_their_family_only() {
        assert_eq!(
            reach(capability(10, 3), &targets(&["sm_100f"])),
            Reach::Cubin(target("sm_100f"))
        );
        assert_eq!(
            reach(capability(12, 0), &targets(&["sm_100f"])),
            Reach::Missing(vec![Refusal {
                target: target("sm_100f"),
                why: Mismatch::OtherFamily
            }])
        );
        // The copy in doctor's verdicts let `compute_100f` PTX JIT across families.
        assert_eq!(
            reach(capability(12, 0), &targets(&["compute_100f"])),
            Reach::Missing(vec![Refusal {
                target: target("compute_100f"),
                why: Mismatch::OtherFamily
            }])
        );
        assert_eq!(
            reach(capability(10, 3), &targets(&["compute_100f"])),
            Reach::Ptx(target("compute_100f"))
        );
        assert_eq!(
            target_reach(target("compute_103f"), capability(10, 0)),
            Err(Mismatch::NewerPtx)
        );
    }

    #[test]
    fn portable_ptx_compiles_forward_only() {
        assert_eq!(
            reach(capability(9, 0), &targets(&["compute_80"])),
            Reach::Ptx(target("compute_80"))
        );
        assert_eq!(
            reach(capability(8, 6), &targets(&["compute_89"])),
            Reach::Missing(vec![Refusal {
                target: target("compute_89"),
                why: Mismatch::NewerPtx
            }])
        );
        assert_eq!(
            target_reach(target("compute_100"), capability(9, 0)),
            Err(Mismatch::NewerPtx)
        );
    }

    #[test]
    fn cubins_run_on_the_same_major_upwards() {
        assert_eq!(
            reach(capability(8, 9), &targets(&["sm_86"])),
            Reach::Cubin(target("sm_86"))
        );
        assert_eq!(
            reach(capability(8, 6), &targets(&["sm_89"])),
            Reach::Missing(vec![Refusal {
                target: target("sm_89"),
                why: Mismatch::HigherMinor
            }])
        );
        assert_eq!(
            target_reach(target("sm_90"), capability(10, 0)),
            Err(Mismatch::OtherMajor)
        );
    }

    #[test]
    fn machine_code_wins_over_ptx_and_the_highest_is_chosen() {
        let list = targets(&["sm_80", "sm_86", "compute_89", "sm_90"]);
        assert_eq!(
            reach(capability(8, 9), &list),
            Reach::Cubin(target("sm_86"))
        );
        assert_eq!(
            reach(capability(12, 0), &list),
            Reach::Ptx(target("compute_89"))
        );
        let torch_2_8 = targets(&[
            "sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120",
        ]);
        assert_eq!(
            reach(capability(10, 3), &torch_2_8),
            Reach::Cubin(target("sm_100"))
        );
        match reach(capability(11, 0), &torch_2_8) {
            Reach::Missing(refusals) => {
                assert_eq!(refusals.len(), torch_2_8.len());
                assert!(
                    refusals
                        .iter()
                        .all(|refusal| refusal.why == Mismatch::OtherMajor)
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
