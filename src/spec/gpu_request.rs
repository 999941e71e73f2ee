//! The GPU request as this engine takes it. `create_body` writes GPUs as `docker run
//! --gpus` does (`DeviceRequests` with `Driver: ""`); [`for_engine`] turns that into the
//! request of the engine's [`GpuRequestForm`]: kept for the NVIDIA runtime, one CDI request
//! (`Driver: "cdi"`, `DeviceIDs: ["nvidia.com/gpu=0", …]`) for Docker 25+ with CDI and for
//! Podman 5.4+, and refused where the engine would drop it. Pure: the form comes from
//! `checks::host::gpu_request_form`.
//!
//! The CDI body follows moby's API documentation for `DeviceRequest` (API 1.44+: a
//! request with `Driver: "cdi"` names fully qualified CDI devices in `DeviceIDs`) and
//! what `docker run --device nvidia.com/gpu=0` sends: every CDI name in one request, no
//! `Count`, no capabilities. Podman 5.4+ reads the same entry (it appends the `DeviceIDs`
//! of every `cdi` request to its devices).

use std::collections::BTreeMap;

use crate::facts::engine::GpuRequestForm;

use super::{CreateBody, DeviceRequest};

/// The CDI kind of NVIDIA's GPUs, as `nvidia-ctk cdi generate` names them.
pub const NVIDIA_CDI_KIND: &str = "nvidia.com/gpu";

/// `DeviceRequest.Driver` of a CDI request.
pub const CDI_DRIVER: &str = "cdi";

/// The engine named, and why it cannot be asked for GPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpusUnavailable {
    pub reason: String,
}

/// `body` with its GPU request in `form`. A body without GPUs is returned as it is,
/// whatever the form.
pub fn for_engine(body: &CreateBody, form: &GpuRequestForm) -> Result<CreateBody, GpusUnavailable> {
    let requests = &body.host_config.device_requests;
    if requests.is_empty() {
        return Ok(body.clone());
    }
    match form {
        GpuRequestForm::Gpus => Ok(body.clone()),
        GpuRequestForm::Unavailable { reason } => Err(GpusUnavailable {
            reason: reason.clone(),
        }),
        GpuRequestForm::Cdi => {
            let mut body = body.clone();
            let names: Vec<String> = requests.iter().flat_map(cdi_names).collect();
            body.host_config.device_requests = vec![cdi_request(names)];
            Ok(body)
        }
    }
}

/// The CDI names of one `--gpus` request: `all` for `Count: -1`, the first N indexes for
/// `Count: N` (as Docker's NVIDIA driver picks them), each id of `DeviceIDs` as it is (an
/// index or a UUID, both names `nvidia-ctk cdi generate` can write). A request that is
/// CDI already keeps its names.
fn cdi_names(request: &DeviceRequest) -> Vec<String> {
    if request.driver == CDI_DRIVER {
        return request.device_ids.clone().unwrap_or_default();
    }
    let qualified = |name: &str| format!("{NVIDIA_CDI_KIND}={name}");
    match &request.device_ids {
        Some(ids) if !ids.is_empty() => ids.iter().map(|id| qualified(id)).collect(),
        _ if request.count < 0 => vec![qualified("all")],
        _ => (0..request.count)
            .map(|index| qualified(&index.to_string()))
            .collect(),
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
    use crate::spec::HostConfig;

    fn body_with(requests: Vec<DeviceRequest>) -> CreateBody {
        CreateBody {
            image: "x:1".into(),
            cmd: Vec::new(),
            env: Vec::new(),
            working_dir: None,
            user: None,
            hostname: None,
            labels: Default::default(),
            exposed_ports: Default::default(),
            host_config: HostConfig {
                device_requests: requests,
                ..HostConfig::default()
            },
            env_from_shell: Default::default(),
        }
    }

    fn translated(request: DeviceRequest) -> serde_json::Value {
        let body = for_engine(&body_with(vec![request]), &GpuRequestForm::Cdi).unwrap();
        serde_json::to_value(&body.host_config.device_requests).unwrap()
    }

    #[test]
    fn cdi_requests_are_what_docker_run_device_sends() {
        // moby API 1.44+: `{"Driver": "cdi", "DeviceIDs": ["nvidia.com/gpu=…"]}`.
        assert_eq!(
            translated(DeviceRequest::all_gpus()),
            serde_json::json!([{
                "Driver": "cdi", "Count": 0, "DeviceIDs": ["nvidia.com/gpu=all"],
                "Capabilities": [], "Options": {}
            }])
        );
        assert_eq!(
            translated(DeviceRequest::gpu_count(2))[0]["DeviceIDs"],
            serde_json::json!(["nvidia.com/gpu=0", "nvidia.com/gpu=1"])
        );
        assert_eq!(
            translated(DeviceRequest::gpu_devices(vec![
                "1".into(),
                "GPU-8f6e4a1c-0b0e-4c5e-9a59-000000000000".into()
            ]))[0]["DeviceIDs"],
            serde_json::json!([
                "nvidia.com/gpu=1",
                "nvidia.com/gpu=GPU-8f6e4a1c-0b0e-4c5e-9a59-000000000000"
            ])
        );
        // Translating twice changes nothing.
        let once = for_engine(
            &body_with(vec![DeviceRequest::gpu_count(1)]),
            &GpuRequestForm::Cdi,
        )
        .unwrap();
        assert_eq!(for_engine(&once, &GpuRequestForm::Cdi).unwrap(), once);
    }

    #[test]
    fn the_runtime_path_keeps_the_request_and_no_path_refuses_it() {
        let body = body_with(vec![DeviceRequest::gpu_count(2)]);
        assert_eq!(for_engine(&body, &GpuRequestForm::Gpus).unwrap(), body);
        let refused = for_engine(
            &body,
            &GpuRequestForm::Unavailable {
                reason: "Podman 4.3.1 drops GPU requests".into(),
            },
        );
        assert_eq!(
            refused.unwrap_err().reason,
            "Podman 4.3.1 drops GPU requests"
        );
        // Without GPUs nothing is refused.
        let plain = body_with(Vec::new());
        let unavailable = GpuRequestForm::Unavailable {
            reason: String::new(),
        };
        assert_eq!(for_engine(&plain, &unavailable).unwrap(), plain);
    }
}
