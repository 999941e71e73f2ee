//! Memory, CPU and GPUs as the container's resource requests and limits: memory and CPU
//! as equal requests and limits (Docker's are limits; equal requests make the pod
//! Guaranteed, so it is not the first evicted), GPUs as the device plugin's
//! `nvidia.com/gpu` limit (extended resources take limits only), or with `--mig-profile`
//! as the `mixed` strategy's `nvidia.com/mig-<profile>`.

use std::collections::BTreeMap;

use super::objects::ResourceRequirements;
use super::scheduling::mig_resource;
use super::{GPU_RESOURCE, Notices};
use crate::export::decimal_cpus;
use crate::export::view::{BodyView, Gpus};

/// The container's resources, and the GPUs it asks for.
#[derive(Debug)]
pub(super) struct Resources {
    pub(super) requirements: Option<ResourceRequirements>,
    /// The `nvidia.com/gpu` limit, if any.
    pub(super) gpus: Option<u32>,
}

pub(super) fn resources(
    view: &BodyView<'_>,
    mig_profile: Option<&str>,
    notices: &mut Notices,
) -> Resources {
    let mut requests = BTreeMap::new();
    let mut limits = BTreeMap::new();
    if let Some(memory) = view.memory {
        let quantity = binary_quantity(memory);
        requests.insert("memory".to_string(), quantity.clone());
        limits.insert("memory".to_string(), quantity);
    }
    if let Some(nanos) = view.nano_cpus {
        let quantity = cpu(nanos, notices);
        requests.insert("cpu".to_string(), quantity.clone());
        limits.insert("cpu".to_string(), quantity);
    }
    let gpus = gpu_count(view.gpus, notices);
    if let Some(count) = gpus {
        let resource = match mig_profile {
            Some(profile) => {
                let resource = mig_resource(profile);
                notices.add(
                    "gpus",
                    format!(
                        "each GPU is a MIG device `{resource}`: this assumes the device plugin's `mixed` MIG strategy; under the `single` strategy MIG devices are `{GPU_RESOURCE}`, so export without `--mig-profile`"
                    ),
                );
                resource
            }
            None => {
                if mig_devices(view.gpus) {
                    notices.add(
                        "gpus",
                        format!(
                            "the MIG devices are asked for as `{GPU_RESOURCE}`: this assumes the device plugin's `single` MIG strategy (every GPU of the node cut alike); under the `mixed` strategy export with `--mig-profile PROFILE` (for example `1g.10gb`)"
                        ),
                    );
                }
                GPU_RESOURCE.to_string()
            }
        };
        limits.insert(resource, count.to_string());
    } else if mig_profile.is_some() {
        notices.add(
            "gpus",
            "`--mig-profile` is for a profile that asks for GPUs; this one asks for none, so nothing is written",
        );
    }
    let requirements = (!limits.is_empty()).then(|| ResourceRequirements {
        requests: (!requests.is_empty()).then_some(requests),
        limits,
    });
    Resources { requirements, gpus }
}

/// The CPU quantity, with a notice where thousandths could not say it exactly.
fn cpu(nanos: i64, notices: &mut Notices) -> String {
    let (quantity, rounded) = cpu_quantity(nanos);
    if rounded {
        notices.add(
            "cpus",
            format!(
                "Kubernetes counts CPUs in thousandths: {} rounded up to {quantity}",
                decimal_cpus(nanos)
            ),
        );
    }
    quantity
}

/// The `nvidia.com/gpu` limit for a GPU request, with a notice where Kubernetes cannot
/// say the same thing.
fn gpu_count(gpus: Gpus<'_>, notices: &mut Notices) -> Option<u32> {
    match gpus {
        Gpus::None => None,
        Gpus::Count(count) => Some(count),
        Gpus::All => {
            notices.add(
                "gpus",
                format!(
                    "Kubernetes has no \"all GPUs\": the pod asks for 1 `{GPU_RESOURCE}`; raise the limit to the GPUs of your nodes"
                ),
            );
            Some(1)
        }
        Gpus::Optional => {
            notices.add(
                "gpus",
                format!(
                    "Kubernetes has no optional GPU: the pod asks for 1 `{GPU_RESOURCE}` and runs only on GPU nodes; delete the limit to run it without"
                ),
            );
            Some(1)
        }
        Gpus::Devices(devices) => {
            let count = u32::try_from(devices.len()).unwrap_or(u32::MAX);
            notices.add(
                "gpus",
                format!(
                    "Kubernetes cannot pick GPUs by id ({}): the pod asks for {count} `{GPU_RESOURCE}` and the device plugin chooses which",
                    devices.join(", ")
                ),
            );
            Some(count)
        }
    }
}

/// Whether the profile names MIG devices by UUID (`MIG-…`).
fn mig_devices(gpus: Gpus<'_>) -> bool {
    matches!(gpus, Gpus::Devices(devices) if devices.iter().any(|device| device.starts_with("MIG-")))
}

/// Bytes in the largest binary unit that holds them exactly (`16Gi`), else plain bytes.
pub(super) fn binary_quantity(bytes: u64) -> String {
    const UNITS: [(&str, u32); 6] = [
        ("Ei", 60),
        ("Pi", 50),
        ("Ti", 40),
        ("Gi", 30),
        ("Mi", 20),
        ("Ki", 10),
    ];
    for (suffix, shift) in UNITS {
        let unit = 1u64 << shift;
        if bytes >= unit && bytes.is_multiple_of(unit) {
            return format!("{}{suffix}", bytes >> shift);
        }
    }
    bytes.to_string()
}

/// NanoCpus as a CPU quantity in whole CPUs or millicores (rounded up), and whether it
/// had to be rounded.
pub(super) fn cpu_quantity(nanos: i64) -> (String, bool) {
    let millis = (nanos + 999_999) / 1_000_000;
    let rounded = nanos % 1_000_000 != 0;
    let text = if millis % 1000 == 0 {
        (millis / 1000).to_string()
    } else {
        format!("{millis}m")
    };
    (text, rounded)
}
