//! Where a GPU pod may run on a real cluster: the toleration of the `nvidia.com/gpu` taint
//! GPU node pools carry (AKS and many on-premises clusters taint them and add no
//! toleration themselves; GKE adds it, and a second one is harmless), the RuntimeClass the
//! GPU Operator installs (`nvidia`, needed where it is not containerd's default runtime),
//! and the MIG resource names of the device plugin's `mixed` strategy.

use super::objects::Toleration;
use super::{GPU_RESOURCE, KubernetesOptions};

/// The prefix of the device plugin's MIG resources under the `mixed` strategy.
pub const MIG_RESOURCE_PREFIX: &str = "nvidia.com/mig-";

/// The pod-level settings of scheduling.
#[derive(Debug, Default)]
pub(super) struct Scheduling {
    pub(super) tolerations: Option<Vec<Toleration>>,
    pub(super) runtime_class_name: Option<String>,
}

/// The toleration (for a pod that asks for GPUs, unless left out) and the RuntimeClass.
pub(super) fn scheduling(options: &KubernetesOptions, asks_for_gpus: bool) -> Scheduling {
    let tolerations = (asks_for_gpus && !options.no_gpu_toleration).then(|| {
        vec![Toleration {
            key: GPU_RESOURCE.into(),
            operator: "Exists".into(),
            effect: "NoSchedule".into(),
        }]
    });
    Scheduling {
        tolerations,
        runtime_class_name: options.runtime_class.clone(),
    }
}

/// The extended resource of a MIG profile under the `mixed` strategy:
/// `1g.10gb` → `nvidia.com/mig-1g.10gb`.
pub fn mig_resource(profile: &str) -> String {
    format!("{MIG_RESOURCE_PREFIX}{profile}")
}

/// A MIG profile as `nvidia-smi mig -lgip` names it and the device plugin's resource
/// carries it: `1g.10gb`, `3g.40gb`, or with a compute-instance part, `1c.3g.40gb`.
pub fn check_mig_profile(profile: &str) -> Result<(), String> {
    let number = |text: &str, unit: &str| {
        text.strip_suffix(unit).is_some_and(|digits| {
            !digits.is_empty() && digits.len() <= 3 && digits.chars().all(|c| c.is_ascii_digit())
        })
    };
    let parts: Vec<&str> = profile.split('.').collect();
    let valid = match parts.as_slice() {
        [slices, memory] => number(slices, "g") && number(memory, "gb"),
        [compute, slices, memory] => {
            number(compute, "c") && number(slices, "g") && number(memory, "gb")
        }
        _ => false,
    };
    if valid {
        Ok(())
    } else {
        Err(format!(
            "`{}` is not a MIG profile: write it as `nvidia-smi mig -lgip` names it, like `1g.10gb` or `3g.40gb`",
            profile.escape_debug()
        ))
    }
}

/// A RuntimeClass name: a DNS-1123 subdomain (lower-case letters, digits, `-`, `.`; at
/// most 253 characters; parts start and end with a letter or digit).
pub fn check_runtime_class(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|part| {
            !part.is_empty()
                && !part.starts_with('-')
                && !part.ends_with('-')
                && part
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        });
    if valid {
        Ok(())
    } else {
        Err(format!(
            "`{}` is not a RuntimeClass name: lower-case letters, digits, `-` and `.`, like `nvidia`",
            name.escape_debug()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mig_profiles_and_their_resources() {
        for good in ["1g.10gb", "1g.5gb", "3g.40gb", "7g.80gb", "1c.3g.40gb"] {
            assert!(check_mig_profile(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "1g",
            "1g.10",
            "g.10gb",
            "1g.10gb+me",
            "1G.10GB",
            "a1g.10gb",
            "1g.10gb.x.y",
        ] {
            assert!(check_mig_profile(bad).is_err(), "{bad}");
        }
        assert_eq!(mig_resource("1g.10gb"), "nvidia.com/mig-1g.10gb");
    }

    #[test]
    fn runtime_class_names() {
        for good in ["nvidia", "nvidia-cdi", "kata.gpu"] {
            assert!(check_runtime_class(good).is_ok(), "{good}");
        }
        for bad in ["", "NVIDIA", "-x", "a..b", "a_b"] {
            assert!(check_runtime_class(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn gpu_pods_tolerate_the_gpu_taint_unless_told_not_to() {
        let options = KubernetesOptions::default();
        let tolerations = scheduling(&options, true).tolerations.unwrap_or_default();
        assert_eq!(
            serde_json::to_value(&tolerations).unwrap_or_default(),
            serde_json::json!([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])
        );
        assert!(scheduling(&options, false).tolerations.is_none());
        let without = KubernetesOptions {
            no_gpu_toleration: true,
            runtime_class: Some("nvidia".into()),
            ..KubernetesOptions::default()
        };
        let scheduled = scheduling(&without, true);
        assert!(scheduled.tolerations.is_none());
        assert_eq!(scheduled.runtime_class_name.as_deref(), Some("nvidia"));
    }
}
