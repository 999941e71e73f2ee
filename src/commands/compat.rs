//! `envctl compat`: doctor's verdicts for a host described on the command line (a cluster
//! node, a machine to buy) instead of this one.

use serde::Serialize;

use super::Context;
use crate::checks::{Finding, Status, worst};
use crate::compat::{self, ComputeCapability, DriverVersion, TorchCandidate};
use crate::error::Error;
use crate::exit::ExitStatus;
use crate::ops::doctor::bundled_candidates;
use crate::ops::matrix::load_matrix;
use crate::profile::model::{CudaVersion, TorchVersion};
use crate::ui::findings::{Section, print_sections};

pub struct CompatArguments {
    pub profile: Option<String>,
    pub image_cuda: Option<String>,
    pub torch: Option<String>,
    pub driver: String,
    pub gpus: Vec<String>,
    pub capabilities: Vec<String>,
    pub datacenter: bool,
    pub matrix: Option<std::path::PathBuf>,
}

#[derive(Debug, Serialize)]
struct GpuReport {
    name: String,
    compute_capability: ComputeCapability,
    verdict: &'static str,
    findings: Vec<Finding>,
}

#[derive(Debug, Serialize)]
struct CompatReport {
    verdict: &'static str,
    driver: String,
    cuda: Option<CudaVersion>,
    torch: Option<TorchVersion>,
    gpus: Vec<GpuReport>,
    findings: Vec<Finding>,
}

fn usage(message: String, hint: &str) -> Error {
    Error::Usage {
        message,
        hint: Some(hint.to_string()),
    }
}

pub fn run(arguments: CompatArguments, context: &Context) -> Result<ExitStatus, Error> {
    let matrix = load_matrix(
        arguments.matrix.as_deref(),
        context.environment.config_home().as_deref(),
    )?;
    let driver: DriverVersion = arguments.driver.parse().map_err(|message: String| {
        usage(
            message,
            "write the driver as `nvidia-smi` prints it, e.g. --driver 550.54.15",
        )
    })?;
    let (cuda, torch, label) = match &arguments.profile {
        Some(profile) => {
            let resolved = context.search_path.resolve(profile)?;
            let stack = resolved.profile.stack;
            if stack.cuda.is_none() && stack.torch.is_none() {
                return Err(usage(
                    format!(
                        "profile `{}` has no [stack], so there is nothing to check",
                        resolved.profile.name
                    ),
                    "add [stack] cuda = \"X.Y\" and torch = \"…\" to it, or pass --image-cuda",
                ));
            }
            (
                stack.cuda,
                stack.torch,
                format!("profile {}", resolved.profile.name),
            )
        }
        None => {
            let cuda: CudaVersion = arguments
                .image_cuda
                .as_deref()
                .ok_or_else(|| usage("give --profile or --image-cuda".into(), "e.g. envctl compat --image-cuda 12.8 --torch 2.8.0+cu128 --driver 550.54.15 --gpu \"RTX 4090\""))?
                .parse()
                .map_err(|message: String| usage(message, "e.g. --image-cuda 12.8"))?;
            let torch: Option<TorchVersion> = arguments
                .torch
                .as_deref()
                .map(|text| {
                    text.parse()
                        .map_err(|message: String| usage(message, "e.g. --torch 2.8.0+cu128"))
                })
                .transpose()?;
            (Some(cuda), torch, format!("CUDA {cuda}"))
        }
    };
    let mut gpus: Vec<(String, ComputeCapability)> = Vec::new();
    for name in &arguments.gpus {
        match compat::model_capability(&matrix, name).as_slice() {
            [] => {
                return Err(usage(
                    format!("GPU model `{name}` is not in {}", matrix.describe()),
                    "give its compute capability instead: --cc 8.9",
                ));
            }
            [(model, capability)] => gpus.push((model.clone(), *capability)),
            several => {
                let names: Vec<String> = several
                    .iter()
                    .map(|(model, capability)| format!("{model} ({capability})"))
                    .collect();
                return Err(usage(
                    format!("GPU model `{name}` is ambiguous: {}", names.join(", ")),
                    "name it fully, or give --cc",
                ));
            }
        }
    }
    for text in &arguments.capabilities {
        let capability: ComputeCapability = text
            .parse()
            .map_err(|message: String| usage(message, "e.g. --cc 8.9"))?;
        gpus.push((format!("compute capability {capability}"), capability));
    }
    if gpus.is_empty() {
        return Err(usage(
            "name at least one GPU".into(),
            "--gpu \"RTX 4090\" or --cc 8.9 (repeat for mixed hosts)",
        ));
    }
    let bundled = bundled_candidates();
    let candidates: Vec<TorchCandidate<'_>> = bundled
        .iter()
        .map(|(name, torch, cuda)| TorchCandidate::new(name, torch, *cuda))
        .collect();
    let reports: Vec<GpuReport> = gpus
        .into_iter()
        .map(|(name, capability)| {
            let mut findings = Vec::new();
            let datacenter = arguments.datacenter || crate::checks::profile::is_datacenter(&name);
            if let Some(cuda) = cuda {
                findings.push(compat::driver_vs_cuda(&matrix, &driver, cuda, datacenter));
                findings.push(compat::cuda_vs_gpu(&matrix, cuda, capability));
            }
            if let Some(torch) = &torch {
                findings.push(compat::gpu_vs_torch(
                    &matrix,
                    capability,
                    torch,
                    cuda,
                    Some(&driver),
                    &candidates,
                ));
            }
            GpuReport {
                verdict: worst(&findings).verdict(),
                name,
                compute_capability: capability,
                findings,
            }
        })
        .collect();
    let status = reports
        .iter()
        .map(|gpu| worst(&gpu.findings))
        .max()
        .unwrap_or(Status::Pass);
    let report = CompatReport {
        verdict: status.verdict(),
        driver: driver.to_string(),
        cuda,
        torch,
        gpus: reports,
        findings: Vec::new(),
    };
    if context.json {
        context.printer.json(&report)?;
    } else {
        let sections: Vec<Section> = report
            .gpus
            .iter()
            .map(|gpu| Section {
                title: format!(
                    "{} ({}) with {label} on driver {}",
                    gpu.name,
                    gpu.compute_capability.sm(),
                    report.driver
                ),
                findings: gpu.findings.clone(),
            })
            .collect();
        print_sections(&context.printer, &sections)?;
    }
    Ok(if status == Status::Fail {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}
