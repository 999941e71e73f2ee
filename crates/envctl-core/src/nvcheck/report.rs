//! The raw facts of one nvidia-check run ([`RawReport`]) and the parser that finds them in
//! the script's output. Every field is optional and unknown fields are ignored, so a report
//! from an older or newer script, or a half-finished one, still parses as far as it goes.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// The version of the facts' shape, in `--json` and in recorded fixtures.
pub const SCHEMA_VERSION: u32 = 1;

/// The marker lines the scripts print before each part of their output.
pub const SHELL_MARKER: &str = "@@envctl-nvidia-check:shell@@";
pub const PYTHON_RUN_MARKER: &str = "@@envctl-nvidia-check:python-run@@";
pub const PYTHON_OUTPUT_MARKER: &str = "@@envctl-nvidia-check:python-output@@";
pub const END_MARKER: &str = "@@envctl-nvidia-check:end@@";
/// Printed by the Python half itself, right before its one-line JSON document.
pub const PYTHON_MARKER: &str = "@@envctl-nvidia-check:python@@";

/// Everything one run gathered: how the exec went, the shell half's facts, how the Python
/// half ran, and what it found. A failure report can be replayed from this.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RawReport {
    pub schema_version: u32,
    pub run: RunFacts,
    pub shell: Option<ShellFacts>,
    pub python_run: Option<PythonRun>,
    pub python: Option<PythonFacts>,
}

/// How the exec itself went, as envctl saw it from outside.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunFacts {
    pub timeout_seconds: u64,
    pub quick: bool,
    /// envctl's own timeout cut the exec before the script finished.
    pub timed_out: bool,
    pub exit_code: Option<i64>,
    /// What ran the check: `sh`, or `python3`/`python` directly in an image without a shell.
    pub runner: Option<String>,
    /// The image has no `sh`.
    pub shell_missing: bool,
    /// What could not be understood in the output.
    pub problems: Vec<String>,
    pub stdout_bytes: usize,
    /// The end of what the exec wrote on stderr.
    pub stderr_tail: String,
}

/// What the shell half gathered.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ShellFacts {
    pub schema_version: u32,
    /// false when the image lacks sed or tr: every text fact is then null.
    pub escaped: bool,
    /// `id` inside the container.
    pub user: Option<String>,
    /// `/dev/nvidia*`.
    pub devices: Vec<DeviceFile>,
    /// None when the container has no nvidia-smi.
    pub nvidia_smi: Option<SmiRun>,
    /// `df -P -k /dev/shm`.
    pub shm: Option<CommandOutput>,
    pub ulimits: Ulimits,
    /// The GPU-related variables; None for a variable that is not set.
    pub environment: BTreeMap<String, Option<String>>,
    /// The interpreter found (`python3`, else `python`), as a path.
    pub python: Option<String>,
    pub temporary_directory: Option<String>,
    pub elapsed_seconds: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DeviceFile {
    /// The name under /dev: `nvidia0`, `nvidiactl`, `nvidia-uvm`.
    pub name: String,
    /// `character`, `directory` or `other`.
    pub kind: String,
}

/// One `nvidia-smi --query-gpu=… --format=csv,noheader,nounits`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SmiRun {
    pub path: Option<String>,
    /// The fields asked for, comma-separated: the columns of `stdout`.
    pub query: String,
    pub exit_status: Option<i64>,
    pub timed_out: bool,
    pub limit_seconds: Option<u64>,
    pub stdout: Option<String>,
    pub stderr: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CommandOutput {
    pub exit_status: Option<i64>,
    pub output: Option<String>,
}

/// `ulimit -l` and `ulimit -s` as the shell printed them (KiB, or `unlimited`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Ulimits {
    pub memlock: Option<String>,
    pub stack: Option<String>,
}

/// How the Python half ran under the shell's watchdog.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PythonRun {
    pub path: Option<String>,
    pub budget_seconds: Option<u64>,
    pub exit_status: Option<i64>,
    pub timed_out: bool,
    /// The end of its stderr.
    pub stderr: Option<String>,
}

/// What the Python half found (`nvidia_check.py`'s document).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PythonFacts {
    pub schema_version: u32,
    pub quick: bool,
    pub python: Option<Interpreter>,
    pub torch: Option<TorchFacts>,
    pub devices: Vec<DeviceFacts>,
    pub errors: Vec<ProbeError>,
    pub seconds: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Interpreter {
    pub version: Option<String>,
    pub executable: Option<String>,
    pub implementation: Option<String>,
    pub error: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProbeError {
    pub probe: String,
    pub error: String,
}

/// torch as the Python half saw it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TorchFacts {
    /// `importlib.util.find_spec("torch")` found it.
    pub found: bool,
    pub import_error: Option<String>,
    pub import_traceback: Option<String>,
    pub import_seconds: Option<f64>,
    /// `torch.__version__`.
    pub version: Option<String>,
    pub version_error: Option<String>,
    /// `torch.version.cuda`: None for a CPU-only (or ROCm) build.
    pub cuda: Option<String>,
    pub cuda_error: Option<String>,
    /// `torch.version.hip`: set for a ROCm build.
    pub hip: Option<String>,
    pub debug: Option<bool>,
    pub cudnn_available: Option<bool>,
    /// `torch.backends.cudnn.version()`: 91002 for 9.10.2, 8902 for 8.9.2.
    pub cudnn_version: Option<i64>,
    pub cudnn_error: Option<String>,
    pub cuda_available: Option<bool>,
    pub cuda_available_error: Option<String>,
    pub device_count: Option<u32>,
    pub device_count_error: Option<String>,
    /// `torch.cuda.get_arch_list()`: `sm_90`, `compute_120`.
    pub arch_list: Option<Vec<String>>,
    pub arch_list_error: Option<String>,
    pub tf32_matmul_allowed: Option<bool>,
    pub tf32_cudnn_allowed: Option<bool>,
    pub tf32_error: Option<String>,
    pub nccl_version: Option<String>,
    pub nccl_error: Option<String>,
    /// Every warning torch raised while the probes ran (CUDA initialisation, capability).
    pub warnings: Vec<String>,
}

/// One GPU as torch saw it, with the compute checks run on it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DeviceFacts {
    pub index: u32,
    pub name: Option<String>,
    /// `[major, minor]`.
    pub capability: Option<Vec<u32>>,
    pub total_memory_bytes: Option<u64>,
    pub multiprocessors: Option<u32>,
    pub error: Option<String>,
    pub set_device_error: Option<String>,
    pub bf16_supported: Option<bool>,
    pub bf16_error: Option<String>,
    /// One of torch's own kernels (not cuBLAS): the first to fail without kernels for the GPU.
    pub elementwise: Option<KernelCheck>,
    /// float32 with TF32 off, against float64 on the CPU.
    pub matmul: Option<MatmulCheck>,
    pub tf32_matmul: Option<MatmulCheck>,
    pub bf16_matmul: Option<MatmulCheck>,
    pub benchmark: Option<Benchmark>,
    pub copy: Option<CopyCheck>,
    pub compute_error: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct KernelCheck {
    pub ok: bool,
    pub value: Option<f64>,
    pub expected: Option<f64>,
    pub error: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MatmulCheck {
    pub dtype: String,
    pub size: Option<u32>,
    pub tf32: bool,
    pub seconds: Option<f64>,
    pub all_finite: Option<bool>,
    pub max_abs_error: Option<f64>,
    pub reference_max_abs: Option<f64>,
    /// The largest error relative to the largest value of the exact product.
    pub relative_error: Option<f64>,
    pub error: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Benchmark {
    pub dtype: Option<String>,
    pub size: Option<u32>,
    pub iterations: Option<u32>,
    pub seconds: Option<f64>,
    pub tflops: Option<f64>,
    pub error: Option<String>,
    pub skipped: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CopyCheck {
    pub bytes: Option<u64>,
    pub repeats: Option<u32>,
    pub pinned: Option<bool>,
    pub pin_error: Option<String>,
    pub seconds: Option<f64>,
    pub gigabytes_per_second: Option<f64>,
    pub error: Option<String>,
    pub skipped: Option<String>,
}

/// The parts found in the script's output.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParsedOutput {
    pub shell: Option<ShellFacts>,
    pub python_run: Option<PythonRun>,
    pub python: Option<PythonFacts>,
    /// Parts that were there but could not be understood.
    pub problems: Vec<String>,
}

/// Splits the shell-run script's stdout at its marker lines and parses each part. Text
/// before the first marker (an entrypoint's banner, a warning) is ignored.
pub fn parse_output(stdout: &str) -> ParsedOutput {
    let mut sections: BTreeMap<&str, String> = BTreeMap::new();
    let mut current: Option<&str> = None;
    for line in stdout.lines() {
        let marker = match line.trim_end() {
            SHELL_MARKER => Some("shell"),
            PYTHON_RUN_MARKER => Some("python-run"),
            PYTHON_OUTPUT_MARKER => Some("python-output"),
            END_MARKER => Some("end"),
            _ => None,
        };
        match (marker, current) {
            (Some(name), _) => {
                current = Some(name);
                sections.entry(name).or_default();
            }
            (None, Some(name)) => {
                let section = sections.entry(name).or_default();
                section.push_str(line);
                section.push('\n');
            }
            (None, None) => {}
        }
    }
    let mut parsed = ParsedOutput::default();
    if let Some(text) = sections.get("shell") {
        match first_document::<ShellFacts>(text) {
            Ok(shell) => parsed.shell = Some(shell),
            Err(error) => parsed.problems.push(format!(
                "the shell part's report is not valid JSON: {error}"
            )),
        }
    }
    if let Some(text) = sections.get("python-run") {
        match first_document::<PythonRun>(text) {
            Ok(run) => parsed.python_run = Some(run),
            Err(error) => parsed.problems.push(format!(
                "the report of how Python ran is not valid JSON: {error}"
            )),
        }
    }
    if let Some(text) = sections.get("python-output") {
        match python_document(text) {
            Ok(Some(python)) => parsed.python = Some(python),
            Ok(None) => {}
            Err(error) => parsed.problems.push(error),
        }
    }
    parsed
}

/// Finds the Python half's document in what the interpreter printed: after its marker
/// line, or else (a recording, a stand-in) the first line opening a JSON object that
/// parses. `Ok(None)` when it printed none.
pub fn python_document(text: &str) -> Result<Option<PythonFacts>, String> {
    if let Some(position) = text.find(PYTHON_MARKER) {
        let after = &text[position + PYTHON_MARKER.len()..];
        return first_document::<PythonFacts>(after)
            .map(Some)
            .map_err(|error| format!("the Python part's report is not valid JSON: {error}"));
    }
    let mut first_error = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.trim_start().starts_with('{') {
            match first_document::<PythonFacts>(&text[offset..]) {
                Ok(facts) => return Ok(Some(facts)),
                Err(error) => {
                    first_error.get_or_insert(error);
                }
            }
        }
        offset += line.len();
    }
    match first_error {
        Some(error) => Err(format!(
            "the Python part's report is not valid JSON: {error}"
        )),
        None => Ok(None),
    }
}

/// The first JSON value in `text` (leading whitespace skipped, anything after it ignored).
fn first_document<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    let mut documents = serde_json::Deserializer::from_str(text.trim_start()).into_iter::<T>();
    match documents.next() {
        Some(Ok(document)) => Ok(document),
        Some(Err(error)) => Err(error.to_string()),
        None => Err("nothing was printed".to_string()),
    }
}
