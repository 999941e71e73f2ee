//! nvidia-check's pure core: the scripts that run inside the container, the facts they
//! print ([`RawReport`]), and the verdicts over those facts ([`judge`]). No I/O here: the
//! command (`commands::nvidia_check`) runs the exec and gathers the host's facts.
//!
//! Files:
//! - `nvidia_check.sh` — the shell half (POSIX sh, busybox-compatible), embedded with
//!   `include_str!`: `/dev/nvidia*`, `nvidia-smi --query-gpu=…`, `df -P -k /dev/shm`,
//!   `ulimit -l`/`-s`, the GPU variables, then the Python half under a watchdog. Each part of
//!   its output follows a marker line, so stray output cannot break the parse.
//! - `nvidia_check.py` — the Python half (stdlib and torch only, every probe in try/except):
//!   torch and CUDA versions, cuDNN, `is_available`, devices, the arch list, NCCL, and per GPU
//!   a torch kernel, a float32 matmul against float64 on the CPU, TF32 and bfloat16 matmuls,
//!   then (without `--quick`) a timed matmul and the pinned copy bandwidth. Runnable by hand
//!   to record a fixture: `python3 src/nvcheck/nvidia_check.py`.
//! - `script` — the embedded scripts and the exec command lines.
//! - `report` — [`RawReport`] and [`parse_output`].
//! - `values` — readings of the raw text (nvidia-smi CSV, `df`, `ulimit`, cuDNN numbers).
//! - `judge` — [`judge`], [`Expectations`], [`Area`] (the printed sections) and the ids.
//!
//! Finding ids, by section:
//! - GPU passthrough: `nvidia-check.timeout` (fail: the check or its Python part ran out of
//!   time), `nvidia-check.report` (fail: no report; warn: part unreadable),
//!   `gpu.devices` (fail: no /dev/nvidiaN, explained by [`no_gpu_explained`] from what the
//!   container was really given ([`GivenGpus`]), the host's NVML and the daemon's cgroup
//!   driver and runtimes ([`DaemonGpuFacts`]); warn: no /dev/nvidia-uvm), `gpu.nvidia-smi`
//!   (warn: absent; fail: fails or hangs), `gpu.driver-match` (fail: the driver inside is not
//!   the host's NVML driver; info: the host's is unknown or the daemon remote),
//!   `gpu.visible-devices` (warn: CUDA_VISIBLE_DEVICES hides every GPU, or a value differs
//!   from the profile's), `gpu.count` (fail: fewer GPUs than the profile asks; warn: more).
//! - PyTorch: `python.interpreter` (no python: fail when the profile's [stack] names torch,
//!   else warn; fail: the Python part died), `torch.import` (not installed: fail/warn as
//!   python; fail: import error), `torch.stack` (warn: differs from the profile's [stack]),
//!   `torch.cuda-build` (fail: CPU-only or ROCm build), `torch.cudnn` (warn: unavailable),
//!   `torch.cuda-available` (fail: False, with torch's reason), `torch.devices` (warn: torch
//!   and nvidia-smi disagree unexplained; info: one line per GPU model).
//! - Architectures: `gpu.torch-arch` — doctor's id, rules (compat-facts §2c) and wording,
//!   applied to the build's real `torch.cuda.get_arch_list()` per distinct capability
//!   (fail: `sm_120 is not compatible with the current PyTorch installation`, hint naming a
//!   bundled profile), the matrix's verdict when the list is unavailable;
//!   `gpu.torch-arch-matrix` (warn: the matrix disagrees with the real list).
//! - Compute (per GPU, identical lines folded): `compute.kernel` (fail: a torch kernel
//!   fails, e.g. no kernel image), `compute.matmul` (fail: error, NaN, or relative error
//!   above 1e-3), `compute.bf16` (fail above 5e-2; info: not before Ampere),
//!   `compute.tf32` (fail above 1e-2; info: not before Ampere), `compute.throughput`
//!   (info: TFLOP/s; warn: failed), `compute.copy-bandwidth` (warn: below 3 GB/s, not pinned,
//!   or failed).
//! - Environment: `environment.shm` (warn below 1 GiB), `environment.memlock` (warn unless
//!   unlimited), `environment.stack` (warn below 8 MiB, info below 64 MiB),
//!   `environment.nccl` (warn: several GPUs and no NCCL), `environment.device-order` (warn:
//!   not PCI_BUS_ID on a mix of GPU models).

mod judge;
mod report;
mod script;
pub mod slurm;
mod values;

#[cfg(test)]
mod tests;

pub use judge::*;
pub use report::*;
pub use script::{PYTHON_NAMES, PYTHON_SCRIPT, SHELL_SCRIPT, python_command, shell_command};
pub use values::{FileSystemSize, Limit, SmiGpu, cudnn_version, df_size, smi_gpus, ulimit_value};
