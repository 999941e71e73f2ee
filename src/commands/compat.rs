//! `envctl compat`: doctor's verdicts for a host described on the command line (a cluster
//! node, a machine to buy) instead of this one.

use super::Context;
use crate::checks::Status;
use crate::compat::{self, ComputeCapability, DriverVersion};
use crate::error::Error;
use crate::exit::ExitStatus;
use crate::ops::compat::{CapabilityRow, DescribedGpu, DescribedHost, DescribedStack};
use crate::ops::matrix::load_matrix;
use crate::profile::model::{CudaVersion, TorchVersion};
use crate::ui::findings::{Section, print_sections};
use std::path::PathBuf;

/// `envctl compat`'s arguments, as clap parses them.
#[derive(Debug, clap::Args)]
pub struct CompatArgs {
    /// Take CUDA and torch from this profile's [stack]
    #[arg(long, value_name = "PROFILE", conflicts_with_all = ["image_cuda", "torch"])]
    pub profile: Option<String>,
    /// The image's CUDA release, e.g. 12.8 (default: the CUDA of --torch's +cuXYZ)
    #[arg(long, value_name = "X.Y")]
    pub image_cuda: Option<String>,
    /// The image's torch build, e.g. 2.8.0+cu128 (+cu128 names CUDA 12.8)
    #[arg(long, value_name = "VERSION")]
    pub torch: Option<String>,
    /// The host's NVIDIA driver, e.g. 550.54.15
    #[arg(long, value_name = "VERSION")]
    pub driver: String,
    /// A GPU model as NVML or nvidia-smi names it (repeat for mixed hosts)
    #[arg(long, value_name = "NAME")]
    pub gpu: Vec<String>,
    /// A GPU by compute capability, e.g. 8.9 (repeat for mixed hosts)
    #[arg(long, value_name = "X.Y")]
    pub cc: Vec<String>,
    /// The GPUs are data-center parts (H100, A100, … are known by name): below a CUDA
    /// major's driver floor, the verdict says what cuda-compat forward compatibility offers
    #[arg(long)]
    pub datacenter: bool,
    /// The host's platform, whose torch wheel is judged: x86_64 or aarch64; GPUs found
    /// only in Arm hosts (GH200, GB200, GB300, GB10, Thor) are always judged as aarch64
    #[arg(long, value_name = "ARCH", default_value = "x86_64")]
    pub platform: String,
    /// MIG is enabled on the GPUs: NVIDIA's MIG driver floors apply (H200 needs 550.90.07)
    #[arg(long)]
    pub mig: bool,
    /// A compatibility matrix file whose rows add to or replace the bundled ones
    #[arg(long, value_name = "FILE")]
    pub matrix: Option<PathBuf>,
}

fn usage(message: String, hint: &str) -> Error {
    Error::Usage {
        message,
        hint: Some(hint.to_string()),
    }
}

pub fn run(arguments: CompatArgs, context: &Context) -> Result<ExitStatus, Error> {
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
    let stack = described_stack(&arguments, context)?;
    let platform: compat::Platform = arguments.platform.parse().map_err(|message: String| {
        usage(
            message,
            "--platform x86_64, or --platform aarch64 for Arm hosts (`uname -m` names it)",
        )
    })?;
    let gpus = described_gpus(&matrix, &arguments)?;
    let host = DescribedHost {
        driver,
        platform,
        mig: arguments.mig,
        today: crate::ops::doctor::today(context.environment.now()),
    };
    let (report, status) = crate::ops::compat::report(&matrix, &host, &stack, gpus);
    if context.json {
        context.printer.json(&report)?;
    } else {
        print_report(&report, &stack, context)?;
    }
    Ok(if status == Status::Fail {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

/// The stack to check: the profile's `[stack]`, or what `--image-cuda` and `--torch` say.
fn described_stack(arguments: &CompatArgs, context: &Context) -> Result<DescribedStack, Error> {
    Ok(match &arguments.profile {
        Some(profile) => {
            let resolved = context.search_path.resolve(profile)?;
            crate::ops::compat::profile_stack(&resolved).ok_or_else(|| {
                usage(
                    format!(
                        "profile `{}` has no [stack], so there is nothing to check",
                        resolved.profile.name
                    ),
                    "add [stack] cuda = \"X.Y\" and torch = \"…\" to it, or pass --image-cuda or --torch",
                )
            })?
        }
        None => stack_from_arguments(arguments.image_cuda.as_deref(), arguments.torch.as_deref())?,
    })
}

/// A section of verdicts for each GPU, then the driver's own findings.
fn print_report(
    report: &crate::ops::compat::CompatReport,
    stack: &DescribedStack,
    context: &Context,
) -> Result<(), Error> {
    let mut sections: Vec<Section> = report
        .gpus
        .iter()
        .map(|gpu| Section {
            title: format!(
                "{} ({}{}{}) with {} on driver {}",
                gpu.name,
                gpu.compute_capability.sm(),
                if gpu.datacenter == Some(true) {
                    ", data-center"
                } else {
                    ""
                },
                if gpu
                    .capability_rows
                    .iter()
                    .any(|row| row.status == compat::RowStatus::Derived)
                {
                    "; capability derived from NVIDIA's documents, see --json"
                } else {
                    ""
                },
                stack.label,
                report.driver
            ),
            findings: gpu.findings.clone(),
        })
        .collect();
    if !report.findings.is_empty() {
        sections.push(Section {
            title: format!("driver {}", report.driver),
            findings: report.findings.clone(),
        });
    }
    print_sections(&context.printer, &sections)
}

/// `--image-cuda` and `--torch`: the image's CUDA is `--image-cuda`, else the CUDA the torch
/// build names (`2.8.0+cu128` → 12.8); both given and disagreeing is a usage error, since
/// one of them is wrong and envctl cannot tell which.
fn stack_from_arguments(
    image_cuda: Option<&str>,
    torch: Option<&str>,
) -> Result<DescribedStack, Error> {
    let image_cuda: Option<CudaVersion> = image_cuda
        .map(|text| {
            text.parse()
                .map_err(|message: String| usage(message, "e.g. --image-cuda 12.8"))
        })
        .transpose()?;
    let torch: Option<TorchVersion> = torch
        .map(|text| {
            text.parse()
                .map_err(|message: String| usage(message, "e.g. --torch 2.8.0+cu128"))
        })
        .transpose()?;
    let torch_cuda = torch
        .as_ref()
        .map(compat::torch_cuda)
        .transpose()
        .map_err(|message| usage(message, "e.g. --torch 2.8.0+cu128 (CUDA 12.8)"))?
        .flatten();
    match (image_cuda, torch_cuda, &torch) {
        (Some(image), Some(named), Some(torch)) if image != named => Err(usage(
            format!(
                "--image-cuda {image} disagrees with --torch {torch}, whose +{} names CUDA {named}",
                torch.variant.as_deref().unwrap_or_default()
            ),
            "give the one you are sure of, or make them agree (--torch alone takes CUDA from its +cuXYZ)",
        )),
        (Some(image), _, _) => Ok(DescribedStack {
            cuda: Some(image),
            cuda_from: Some("--image-cuda"),
            torch,
            label: format!("CUDA {image}"),
        }),
        (None, Some(named), Some(build)) => Ok(DescribedStack {
            cuda: Some(named),
            cuda_from: Some("torch"),
            label: format!("torch {build} (CUDA {named})"),
            torch,
        }),
        (None, _, Some(build)) => Ok(DescribedStack {
            cuda: None,
            cuda_from: None,
            label: format!("torch {build}"),
            torch,
        }),
        (None, _, None) => Err(usage(
            "give --profile, --image-cuda or --torch".into(),
            "e.g. envctl compat --torch 2.8.0+cu128 --driver 570.124.06 --gpu \"RTX 4090\"",
        )),
    }
}

/// `--gpu` names (resolved through the matrix) and `--cc` capabilities (only those that
/// exist), each marked data-center or not.
fn described_gpus(
    matrix: &compat::Matrix,
    arguments: &CompatArgs,
) -> Result<Vec<DescribedGpu>, Error> {
    let mut gpus = Vec::new();
    for name in &arguments.gpu {
        let (model, capability, capability_rows) = gpu_model(matrix, name)?;
        let consumer = model.contains("GeForce") || model.contains("TITAN");
        if arguments.datacenter && consumer {
            return Err(usage(
                format!(
                    "--datacenter does not fit {model}: NVIDIA's forward compatibility is not supported on GeForce or TITAN cards"
                ),
                "drop --datacenter, or name the data-center GPU",
            ));
        }
        let datacenter = if consumer {
            Some(false)
        } else if arguments.datacenter || crate::checks::profile::is_datacenter(&model) {
            Some(true)
        } else {
            None
        };
        gpus.push(DescribedGpu {
            name: model,
            capability,
            datacenter,
            capability_rows,
        });
    }
    for text in &arguments.cc {
        let capability = known_capability(matrix, text)?;
        gpus.push(DescribedGpu {
            name: format!("compute capability {capability}"),
            capability,
            datacenter: arguments.datacenter.then_some(true),
            capability_rows: Vec::new(),
        });
    }
    if gpus.is_empty() {
        return Err(usage(
            "name at least one GPU".into(),
            "--gpu \"RTX 4090\" or --cc 8.9 (repeat for mixed hosts)",
        ));
    }
    Ok(gpus)
}

/// NVIDIA's list of compute capabilities by GPU, the source of the matrix's model rows.
const CUDA_GPUS_PAGE: &str = "https://developer.nvidia.com/cuda-gpus";

/// The matrix's rows of these models, as `compat` reports them.
fn capability_rows(
    matrix: &compat::Matrix,
    models: &[(String, ComputeCapability)],
) -> Vec<CapabilityRow> {
    matrix
        .gpus()
        .filter(|row| models.iter().any(|(model, _)| *model == row.name))
        .map(|row| CapabilityRow {
            name: row.name.clone(),
            status: row.status,
            source: row.source.clone(),
        })
        .collect()
}

/// One model for a `--gpu` name with the rows its capability comes from, or a usage error
/// that says why not: another vendor's part, a name the matrix lacks (with the nearest
/// known names), or an ambiguous one.
fn gpu_model(
    matrix: &compat::Matrix,
    name: &str,
) -> Result<(String, ComputeCapability, Vec<CapabilityRow>), Error> {
    let models = compat::model_capability(matrix, name);
    match models.as_slice() {
        [(model, capability)] => Ok((model.clone(), *capability, capability_rows(matrix, &models))),
        [] => {
            if let Some(vendor) = compat::other_vendor(name) {
                return Err(usage(
                    format!(
                        "`{name}` is not an NVIDIA GPU (it is {vendor}'s); envctl's matrix covers NVIDIA GPUs only"
                    ),
                    "envctl checks NVIDIA drivers, CUDA and GPUs; name an NVIDIA GPU with --gpu, or its compute capability with --cc",
                ));
            }
            let nearest: Vec<String> = compat::nearest_models(matrix, name, 3)
                .into_iter()
                .map(|(model, capability)| format!("{model} ({capability})"))
                .collect();
            let look_up = format!(
                "look up its compute capability on {CUDA_GPUS_PAGE} and give it with --cc X.Y instead of --gpu"
            );
            let hint = if nearest.is_empty() {
                look_up
            } else {
                format!(
                    "nearest known models: {}; if it is none of these, {look_up}",
                    nearest.join(", ")
                )
            };
            Err(usage(
                format!("GPU model `{name}` is not in {}", matrix.describe()),
                &hint,
            ))
        }
        // Every model the name fits has one capability (`Orin (nvgpu)`, as nvidia-smi
        // prints a Jetson Orin; `RTX PRO 6000`): that capability is the answer.
        [(_, capability), rest @ ..] if rest.iter().all(|(_, other)| other == capability) => Ok((
            name.to_string(),
            *capability,
            capability_rows(matrix, &models),
        )),
        several => {
            let names: Vec<String> = several
                .iter()
                .map(|(model, capability)| format!("{model} ({capability})"))
                .collect();
            Err(usage(
                format!("GPU model `{name}` is ambiguous: {}", names.join(", ")),
                "name it fully, or give --cc",
            ))
        }
    }
}

/// A `--cc` value that names a compute capability NVIDIA documents (the matrix's GPU and
/// architecture rows); `9.9` and the like are refused with the valid ones listed.
fn known_capability(matrix: &compat::Matrix, text: &str) -> Result<ComputeCapability, Error> {
    let capability: ComputeCapability = text
        .parse()
        .map_err(|message: String| usage(message, "e.g. --cc 8.9"))?;
    let known = matrix.known_capabilities();
    if known.contains(&capability) {
        return Ok(capability);
    }
    let listed: Vec<String> = known.iter().map(ToString::to_string).collect();
    let renamed = matrix
        .target_rename
        .iter()
        .filter(|rename| rename.status.usable())
        .find(|rename| rename.old.capability == capability)
        .map(|rename| {
            format!(
                "{} was renamed {} in CUDA {}: give --cc {}; ",
                rename.old, rename.new, rename.from_cuda, rename.new.capability
            )
        })
        .unwrap_or_default();
    Err(usage(
        format!(
            "compute capability {capability} ({}) does not exist: no GPU or architecture in {} has it",
            capability.sm(),
            matrix.describe()
        ),
        &format!(
            "{renamed}the compute capabilities that exist are {}; a GPU's is on {CUDA_GPUS_PAGE}",
            listed.join(", ")
        ),
    ))
}
