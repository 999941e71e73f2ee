//! The GPUs a container is given, as one typed value from the profile to the create
//! request. The profile's `gpus` (or `--gpus`) becomes [`Gpus`] once, with `optional`
//! decided by the host (`Gpus::asked`); placement turns a count into pinned GPUs
//! (`ops::placement`, which reads this value, never a request body); and the engine's
//! form of the request is written once, at the end ([`render`]): `--gpus`'s
//! `DeviceRequests` for the NVIDIA runtime, one CDI request for Docker with CDI and
//! Podman 5.4+, or a refusal where the engine would drop the request.
//!
//! The CDI request follows moby's API documentation for `DeviceRequest` (API 1.44+: a
//! request with `Driver: "cdi"` names fully qualified CDI devices in `DeviceIDs`) and what
//! `docker run --device nvidia.com/gpu=0` sends: every CDI name in one request, no
//! `Count`, no capabilities. Podman 5.4+ reads the same entry.

use serde::Serialize;

use crate::facts::container::GpuAssignment;
use crate::facts::engine::GpuRequestForm;
use crate::profile::model::GpuRequest;

use std::collections::BTreeMap;

use super::DeviceRequest;

/// The CDI kind of NVIDIA's GPUs, as `nvidia-ctk cdi generate` names them.
pub const NVIDIA_CDI_KIND: &str = "nvidia.com/gpu";

/// `DeviceRequest.Driver` of a CDI request.
pub const CDI_DRIVER: &str = "cdi";

/// The engine named, and why it cannot be asked for GPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpusUnavailable {
    pub reason: String,
}

/// Which GPUs a container is to be given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "gpus", content = "devices", rename_all = "snake_case")]
pub enum Gpus {
    /// None: the profile asks for none, or `optional` met a host without them.
    None,
    /// Every GPU the engine can give.
    All,
    /// N GPUs, the choice left to the daemon (its first N) until placement pins them.
    Count(u32),
    /// These GPUs: indexes, GPU or MIG UUIDs as the profile named them, or the UUIDs
    /// placement pinned.
    Devices(Vec<String>),
}

impl Gpus {
    /// What the profile's `gpus` asks for: `optional` is every GPU where the container
    /// can be given them (`gpus_reachable`), else none; zero GPUs is none.
    pub fn asked(request: &GpuRequest, gpus_reachable: bool) -> Gpus {
        match request {
            GpuRequest::All => Gpus::All,
            GpuRequest::Optional if gpus_reachable => Gpus::All,
            GpuRequest::Optional | GpuRequest::None => Gpus::None,
            GpuRequest::Count(0) => Gpus::None,
            GpuRequest::Count(count) => Gpus::Count(*count),
            GpuRequest::Devices(devices) if devices.is_empty() => Gpus::None,
            GpuRequest::Devices(devices) => Gpus::Devices(devices.clone()),
        }
    }

    pub fn is_none(&self) -> bool {
        *self == Gpus::None
    }

    /// The count left to the daemon, which placement may pin.
    pub fn count(&self) -> Option<u32> {
        match self {
            Gpus::Count(count) => Some(*count),
            _ => None,
        }
    }

    /// What a holder's `envctl.gpus` label says of these GPUs; `None` for none.
    pub fn assignment(&self) -> Option<GpuAssignment> {
        match self {
            Gpus::None => None,
            Gpus::All => Some(GpuAssignment::All),
            Gpus::Count(count) => Some(GpuAssignment::Count(i64::from(*count))),
            Gpus::Devices(devices) => Some(GpuAssignment::Devices(devices.clone())),
        }
    }

    /// The `DeviceRequests` of `docker run --gpus` for these GPUs.
    pub fn docker_requests(&self) -> Vec<DeviceRequest> {
        match self {
            Gpus::None => Vec::new(),
            Gpus::All => vec![DeviceRequest::all_gpus()],
            Gpus::Count(count) => vec![DeviceRequest::gpu_count(*count)],
            Gpus::Devices(devices) => vec![DeviceRequest::gpu_devices(devices.clone())],
        }
    }

    /// The fully qualified CDI names of these GPUs: `all`, the first N indexes for a
    /// count (as Docker's NVIDIA driver picks them), each named id as it is (an index or a
    /// UUID, both names `nvidia-ctk cdi generate` writes).
    pub fn cdi_names(&self) -> Vec<String> {
        let qualified = |name: &str| format!("{NVIDIA_CDI_KIND}={name}");
        match self {
            Gpus::None => Vec::new(),
            Gpus::All => vec![qualified("all")],
            Gpus::Count(count) => (0..*count)
                .map(|index| qualified(&index.to_string()))
                .collect(),
            Gpus::Devices(devices) => devices.iter().map(|id| qualified(id)).collect(),
        }
    }
}

/// The variable through which the NVIDIA runtime gives a container GPUs.
pub const VISIBLE_DEVICES: &str = "NVIDIA_VISIBLE_DEVICES";

/// `NVIDIA_VISIBLE_DEVICES` set in `env` to what `gpus` gives, unless `env` sets it
/// already (the profile's own value, which the policy counted): `void` for none, `all`,
/// the first N indexes for a count (as the daemon picks them), the devices named.
///
/// Every CUDA image sets `ENV NVIDIA_VISIBLE_DEVICES=all`: where the NVIDIA runtime is
/// the daemon's default, a container that asked for no GPU (or whose CDI request named
/// two) would get every GPU from the image, beside every count and every policy. The
/// create's own value comes after the image's, and the runtime reads the last.
pub fn pin_visible_devices(env: &mut Vec<String>, gpus: &Gpus) {
    let prefix = format!("{VISIBLE_DEVICES}=");
    if env.iter().any(|pair| pair.starts_with(&prefix)) {
        return;
    }
    let value = match gpus {
        Gpus::None => "void".to_string(),
        Gpus::All => "all".to_string(),
        Gpus::Count(count) => (0..*count)
            .map(|index| index.to_string())
            .collect::<Vec<_>>()
            .join(","),
        Gpus::Devices(devices) => devices.join(","),
    };
    env.push(format!("{prefix}{value}"));
}

/// The create request's `DeviceRequests` for `gpus` on an engine that takes `form`: the
/// one place the engine's form is written. No GPUs is no request, whatever the form.
pub fn render(gpus: &Gpus, form: &GpuRequestForm) -> Result<Vec<DeviceRequest>, GpusUnavailable> {
    if gpus.is_none() {
        return Ok(Vec::new());
    }
    match form {
        GpuRequestForm::Gpus => Ok(gpus.docker_requests()),
        GpuRequestForm::Cdi => Ok(vec![cdi_request(gpus.cdi_names())]),
        GpuRequestForm::Unavailable { reason } => Err(GpusUnavailable {
            reason: reason.clone(),
        }),
    }
}

/// The one request `docker run --device NAME…` sends for CDI names.
pub fn cdi_request(names: Vec<String>) -> DeviceRequest {
    DeviceRequest {
        driver: CDI_DRIVER.into(),
        count: 0,
        device_ids: Some(names),
        capabilities: Vec::new(),
        options: BTreeMap::new(),
    }
}

/// Whether `request` is a CDI request, which `docker run` writes as `--device NAME`.
pub fn is_cdi(request: &DeviceRequest) -> bool {
    request.driver == CDI_DRIVER
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_image_never_decides_which_gpus_the_runtime_gives() {
        let pinned = |gpus: Gpus, env: &[&str]| {
            let mut env: Vec<String> = env.iter().map(|pair| pair.to_string()).collect();
            pin_visible_devices(&mut env, &gpus);
            env
        };
        assert_eq!(
            pinned(Gpus::None, &["A=1"]),
            ["A=1", "NVIDIA_VISIBLE_DEVICES=void"]
        );
        assert_eq!(pinned(Gpus::All, &[]), ["NVIDIA_VISIBLE_DEVICES=all"]);
        assert_eq!(
            pinned(Gpus::Count(3), &[]),
            ["NVIDIA_VISIBLE_DEVICES=0,1,2"]
        );
        assert_eq!(
            pinned(Gpus::Devices(vec!["GPU-a".into(), "GPU-b".into()]), &[]),
            ["NVIDIA_VISIBLE_DEVICES=GPU-a,GPU-b"]
        );
        // The profile's own value stays: the policy has counted it.
        assert_eq!(
            pinned(Gpus::None, &["NVIDIA_VISIBLE_DEVICES=all"]),
            ["NVIDIA_VISIBLE_DEVICES=all"]
        );
    }

    fn rendered(gpus: &Gpus, form: &GpuRequestForm) -> serde_json::Value {
        serde_json::to_value(render(gpus, form).unwrap()).unwrap()
    }

    #[test]
    fn the_profile_asks_once_and_optional_follows_the_host() {
        assert_eq!(Gpus::asked(&GpuRequest::Optional, true), Gpus::All);
        assert_eq!(Gpus::asked(&GpuRequest::Optional, false), Gpus::None);
        assert_eq!(Gpus::asked(&GpuRequest::Count(0), true), Gpus::None);
        assert_eq!(Gpus::asked(&GpuRequest::Count(2), false), Gpus::Count(2));
        assert_eq!(
            Gpus::asked(&GpuRequest::Devices(Vec::new()), true),
            Gpus::None
        );
        assert_eq!(Gpus::asked(&GpuRequest::All, false), Gpus::All);
    }

    #[test]
    fn cdi_requests_are_what_docker_run_device_sends() {
        // moby API 1.44+: `{"Driver": "cdi", "DeviceIDs": ["nvidia.com/gpu=…"]}`.
        assert_eq!(
            rendered(&Gpus::All, &GpuRequestForm::Cdi),
            serde_json::json!([{
                "Driver": "cdi", "Count": 0, "DeviceIDs": ["nvidia.com/gpu=all"],
                "Capabilities": [], "Options": {}
            }])
        );
        assert_eq!(
            rendered(&Gpus::Count(2), &GpuRequestForm::Cdi)[0]["DeviceIDs"],
            serde_json::json!(["nvidia.com/gpu=0", "nvidia.com/gpu=1"])
        );
        assert_eq!(
            rendered(
                &Gpus::Devices(vec![
                    "1".into(),
                    "GPU-8f6e4a1c-0b0e-4c5e-9a59-000000000000".into()
                ]),
                &GpuRequestForm::Cdi
            )[0]["DeviceIDs"],
            serde_json::json!([
                "nvidia.com/gpu=1",
                "nvidia.com/gpu=GPU-8f6e4a1c-0b0e-4c5e-9a59-000000000000"
            ])
        );
    }

    #[test]
    fn the_runtime_form_is_the_gpus_flag_and_no_form_refuses() {
        assert_eq!(
            rendered(&Gpus::Count(2), &GpuRequestForm::Gpus),
            serde_json::to_value(vec![DeviceRequest::gpu_count(2)]).unwrap()
        );
        let refused = render(
            &Gpus::Count(2),
            &GpuRequestForm::Unavailable {
                reason: "Podman 4.3.1 drops GPU requests".into(),
            },
        );
        assert_eq!(
            refused.unwrap_err().reason,
            "Podman 4.3.1 drops GPU requests"
        );
        // Without GPUs nothing is refused, and nothing is asked.
        let unavailable = GpuRequestForm::Unavailable {
            reason: String::new(),
        };
        assert_eq!(render(&Gpus::None, &unavailable).unwrap(), Vec::new());
    }
}
