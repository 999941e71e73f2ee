//! A server's GPUs as `nvidia-smi` in a probe container tells them (`engine::probe`), for
//! a client on another machine whose NVML cannot see them (issue 38, item 1): the parser
//! of the probe's output, and the facts it gives.
//!
//! Pure: the text is the probe's stdout, which is outside text — every value is checked
//! (a count of columns, a number, a version) and a name is stripped of control characters
//! and capped. A field nvidia-smi marks as unknown (`[N/A]`, `[Not Supported]`, …) stays
//! unknown (`None`); a row that cannot be read fails the whole parse, since a misread
//! column would place on the wrong GPU.

use serde::{Deserialize, Serialize};

use super::gpu::{
    CudaDriverVersion, Fact, FailureKind, GpuDevice, GpuHealth, NvmlFacts, NvmlFailure,
};
use super::gpu_sample::GpuProcess;
use super::versions::ComputeCapability;

/// The `--query-gpu` fields the probe asks for, in this order.
pub const GPU_FIELDS: &str = "index,uuid,name,compute_cap,memory.total,memory.used,driver_version";

/// The `--query-compute-apps` fields the probe asks for, in this order.
pub const APP_FIELDS: &str = "gpu_uuid,pid,used_memory";

/// The marker that opens each section of the probe's output (`engine::probe`'s script).
pub const MARKER: &str = "@@envctl-probe";

/// The longest name or version kept from the output; longer ones are cut.
const TEXT_CAP: usize = 128;

/// One GPU of the server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SmiGpu {
    pub index: u32,
    pub uuid: String,
    pub name: Option<String>,
    pub compute_capability: Option<ComputeCapability>,
    pub memory_total_mib: Option<u64>,
    pub memory_used_mib: Option<u64>,
}

/// A compute process on one of its GPUs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SmiProcess {
    pub gpu_uuid: String,
    /// The host's pid (the probe runs in the host's pid namespace).
    pub pid: u32,
    pub used_memory_mib: Option<u64>,
    /// The container ids (64 hex digits) named in the process's `/proc/PID/cgroup`, as
    /// the probe read it: the caller keeps those the daemon knows. Empty when the process
    /// is in no container's cgroup, or its cgroup could not be read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cgroup_ids: Vec<String>,
}

/// What the probe learnt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerGpus {
    /// `550.54.15`; `None` when no GPU said it.
    pub driver: Option<String>,
    /// The newest CUDA the driver supports; `None` when nvidia-smi did not say.
    pub cuda: Option<CudaDriverVersion>,
    pub gpus: Vec<SmiGpu>,
    pub processes: Vec<SmiProcess>,
}

impl ServerGpus {
    /// The facts in NVML's shape, for the checks and placement: what nvidia-smi was not
    /// asked (PCI bus, MIG, power, health, reserved memory) is unknown, never a default.
    pub fn nvml_facts(&self) -> NvmlFacts {
        let unknown = |what: &str| {
            NvmlFailure::new(
                FailureKind::Other,
                format!("the probe through the daemon does not read {what}"),
            )
        };
        let fact = |value: Option<String>, what: &str| match value {
            Some(value) => Fact::Value(value),
            None => Fact::Error(unknown(what)),
        };
        let gpus: Vec<GpuDevice> = self
            .gpus
            .iter()
            .map(|gpu| GpuDevice {
                index: gpu.index,
                name: fact(gpu.name.clone(), "its name"),
                uuid: Fact::Value(gpu.uuid.clone()),
                pci_bus_id: Fact::Error(unknown("the PCI bus id")),
                compute_capability: match gpu.compute_capability {
                    Some(cc) => Fact::Value(cc),
                    None => Fact::Error(unknown("the compute capability")),
                },
                memory: Fact::Error(unknown("reserved memory")),
                mig_mode: Fact::Error(unknown("the MIG mode")),
                power_limit_watts: Fact::Error(unknown("the power limit")),
                processes: Fact::Value(
                    self.processes
                        .iter()
                        .filter(|process| process.gpu_uuid == gpu.uuid)
                        .map(|process| GpuProcess {
                            pid: process.pid,
                            used_memory_bytes: process.used_memory_mib.map(|mib| mib << 20),
                        })
                        .collect(),
                ),
                minor_number: Fact::Error(unknown("the device minor number")),
                health: GpuHealth::all_failing(unknown("the GPU's health")),
            })
            .collect();
        NvmlFacts {
            driver_version: fact(self.driver.clone(), "the driver version"),
            cuda_driver_version: match self.cuda {
                Some(cuda) => Fact::Value(cuda),
                None => Fact::Error(unknown("the CUDA version")),
            },
            nvml_version: Fact::Error(unknown("the NVML version")),
            device_count: Fact::Value(u32::try_from(gpus.len()).unwrap_or(u32::MAX)),
            gpus,
            shutdown_failure: None,
        }
    }
}

/// Why the probe's output could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SmiError {
    #[error("nvidia-smi failed to {what} (exit status {status}): {said}")]
    Failed {
        what: &'static str,
        status: String,
        said: String,
    },
    #[error("line {line} of nvidia-smi's {what} cannot be read: {why}")]
    Malformed {
        what: &'static str,
        line: usize,
        why: String,
    },
    #[error("the probe's output lacks its {0} section (the probe did not run to its end)")]
    Missing(&'static str),
}

/// Whether nvidia-smi says it does not know this field.
fn unknown(value: &str) -> bool {
    let value = value.trim();
    value.is_empty()
        || value.eq_ignore_ascii_case("N/A")
        || (value.starts_with('[') && value.ends_with(']'))
}

/// Outside text made safe to keep: printable characters only, at most [`TEXT_CAP`].
pub fn clean(text: &str) -> String {
    text.trim()
        .chars()
        .filter(|character| !character.is_control())
        .take(TEXT_CAP)
        .collect()
}

fn number<T: std::str::FromStr>(
    value: &str,
    what: &'static str,
    line: usize,
    field: &str,
) -> Result<Option<T>, SmiError> {
    if unknown(value) {
        return Ok(None);
    }
    value
        .trim()
        .parse()
        .map(Some)
        .map_err(|_| SmiError::Malformed {
            what,
            line,
            why: format!("{field} `{}` is not a number", clean(value)),
        })
}

/// The rows of a CSV answer, each split into exactly `fields` columns.
fn rows<'a>(
    text: &'a str,
    what: &'static str,
    fields: usize,
) -> impl Iterator<Item = Result<(usize, Vec<&'a str>), SmiError>> + 'a {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(move |(number, line)| {
            let columns: Vec<&str> = line.split(',').map(str::trim).collect();
            if columns.len() == fields {
                Ok((number + 1, columns))
            } else {
                Err(SmiError::Malformed {
                    what,
                    line: number + 1,
                    why: format!("{} columns where {fields} were asked for", columns.len()),
                })
            }
        })
}

/// `--query-gpu=GPU_FIELDS --format=csv,noheader,nounits`: the GPUs and the driver.
pub fn parse_gpus(text: &str) -> Result<(Vec<SmiGpu>, Option<String>), SmiError> {
    const WHAT: &str = "GPU list";
    let mut gpus: Vec<SmiGpu> = Vec::new();
    let mut driver: Option<String> = None;
    for row in rows(text, WHAT, 7) {
        let (line, columns) = row?;
        let index =
            number::<u32>(columns[0], WHAT, line, "index")?.ok_or_else(|| SmiError::Malformed {
                what: WHAT,
                line,
                why: "a GPU without an index".into(),
            })?;
        let uuid = clean(columns[1]);
        if unknown(&uuid) || !uuid.starts_with("GPU-") {
            return Err(SmiError::Malformed {
                what: WHAT,
                line,
                why: format!("`{uuid}` is not a GPU UUID"),
            });
        }
        if gpus
            .iter()
            .any(|gpu| gpu.index == index || gpu.uuid == uuid)
        {
            return Err(SmiError::Malformed {
                what: WHAT,
                line,
                why: format!("GPU {index} ({uuid}) is listed twice"),
            });
        }
        let compute_capability =
            if unknown(columns[3]) {
                None
            } else {
                Some(columns[3].parse::<ComputeCapability>().map_err(|why| {
                    SmiError::Malformed {
                        what: WHAT,
                        line,
                        why: clean(&why),
                    }
                })?)
            };
        if !unknown(columns[6]) {
            let said = clean(columns[6]);
            if !said.chars().all(|c| c.is_ascii_digit() || c == '.') {
                return Err(SmiError::Malformed {
                    what: WHAT,
                    line,
                    why: format!("`{said}` is not a driver version"),
                });
            }
            // One driver per machine: two versions would be a forgery or a broken answer.
            match &driver {
                Some(known) if *known != said => {
                    return Err(SmiError::Malformed {
                        what: WHAT,
                        line,
                        why: format!("driver {said} where another GPU said {known}"),
                    });
                }
                _ => driver = Some(said),
            }
        }
        gpus.push(SmiGpu {
            index,
            uuid,
            name: (!unknown(columns[2])).then(|| clean(columns[2])),
            compute_capability,
            memory_total_mib: number(columns[4], WHAT, line, "memory.total")?,
            memory_used_mib: number(columns[5], WHAT, line, "memory.used")?,
        });
    }
    gpus.sort_by_key(|gpu| gpu.index);
    Ok((gpus, driver))
}

/// `--query-compute-apps=APP_FIELDS --format=csv,noheader,nounits`.
pub fn parse_processes(text: &str) -> Result<Vec<SmiProcess>, SmiError> {
    const WHAT: &str = "compute processes";
    let mut processes = Vec::new();
    for row in rows(text, WHAT, 3) {
        let (line, columns) = row?;
        let pid =
            number::<u32>(columns[1], WHAT, line, "pid")?.ok_or_else(|| SmiError::Malformed {
                what: WHAT,
                line,
                why: "a process without a pid".into(),
            })?;
        processes.push(SmiProcess {
            gpu_uuid: clean(columns[0]),
            pid,
            used_memory_mib: number(columns[2], WHAT, line, "used_memory")?,
            cgroup_ids: Vec::new(),
        });
    }
    Ok(processes)
}

/// The CUDA version of `nvidia-smi -q`'s `CUDA Version : 12.4` line; `None` without one
/// or when it says `N/A`.
pub fn parse_cuda(text: &str) -> Option<CudaDriverVersion> {
    text.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == "CUDA Version")
            .then(|| value.trim().parse().ok())
            .flatten()
    })
}

/// The container ids (64 lowercase hex digits) a `/proc/PID/cgroup` names: `docker-ID.scope`
/// (systemd driver, v1 or v2), `/docker/ID` (cgroupfs), `libpod-ID.scope` (Podman).
pub fn cgroup_container_ids(text: &str) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for token in text.split(|c: char| !c.is_ascii_hexdigit()) {
        if token.len() == 64
            && token
                .chars()
                .all(|c| c.is_ascii_digit() || c.is_ascii_lowercase())
            && !ids.iter().any(|id| id == token)
        {
            ids.push(token.to_string());
        }
    }
    ids
}

/// The probe's whole output: sections `MARKER NAME` (`gpus`, `apps`, `query`, and
/// `cgroup PID` per process), and `MARKER status NAME CODE` after each nvidia-smi run.
pub fn parse_probe(output: &str) -> Result<ServerGpus, SmiError> {
    let mut sections: Vec<(String, String)> = Vec::new();
    let mut statuses: Vec<(String, String)> = Vec::new();
    for line in output.lines() {
        match line.strip_prefix(MARKER) {
            Some(rest) => {
                let rest = rest.trim();
                if let Some(status) = rest.strip_prefix("status ") {
                    let (name, code) = status.split_once(' ').unwrap_or((status, ""));
                    statuses.push((name.to_string(), code.trim().to_string()));
                } else {
                    sections.push((rest.to_string(), String::new()));
                }
            }
            None => {
                if let Some((_, text)) = sections.last_mut() {
                    text.push_str(line);
                    text.push('\n');
                }
            }
        }
    }
    let section = |name: &'static str| -> Result<&str, SmiError> {
        sections
            .iter()
            .find(|(found, _)| found == name)
            .map(|(_, text)| text.as_str())
            .ok_or(SmiError::Missing(name))
    };
    let succeeded = |name: &'static str, what: &'static str| -> Result<(), SmiError> {
        match statuses.iter().find(|(found, _)| found == name) {
            Some((_, code)) if code == "0" => Ok(()),
            Some((_, code)) => Err(SmiError::Failed {
                what,
                status: clean(code),
                // A status without its section is a probe whose output was cut or
                // mangled: what nvidia-smi said is not known, which is not "nothing".
                said: section(name).map_or_else(
                    |_| format!("(its output, the probe's {name} section, is missing)"),
                    clean,
                ),
            }),
            None => Err(SmiError::Missing(name)),
        }
    };
    succeeded("gpus", "list the GPUs")?;
    let (gpus, driver) = parse_gpus(section("gpus")?)?;
    succeeded("apps", "list the compute processes")?;
    let mut processes = parse_processes(section("apps")?)?;
    // `-q` only gives the CUDA version: its failure leaves that unknown.
    let cuda = section("query").ok().and_then(parse_cuda);
    for process in &mut processes {
        let name = format!("cgroup {}", process.pid);
        if let Some((_, text)) = sections.iter().find(|(found, _)| *found == name) {
            process.cgroup_ids = cgroup_container_ids(text);
        }
    }
    Ok(ServerGpus {
        driver,
        cuda,
        gpus,
        processes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = "0, GPU-aaaa-1, NVIDIA A100-SXM4-80GB, 8.0, 81920, 1024, 550.54.15\n\
                       1, GPU-aaaa-2, NVIDIA A100-SXM4-80GB, 8.0, 81920, 0, 550.54.15\n";

    #[test]
    fn gpus_are_read_with_their_driver() {
        let (gpus, driver) = parse_gpus(TWO).unwrap();
        assert_eq!(driver.as_deref(), Some("550.54.15"));
        assert_eq!(gpus.len(), 2);
        assert_eq!(gpus[0].uuid, "GPU-aaaa-1");
        assert_eq!(
            gpus[0].compute_capability,
            Some(ComputeCapability::new(8, 0))
        );
        assert_eq!(gpus[0].memory_total_mib, Some(81920));
        assert_eq!(gpus[0].memory_used_mib, Some(1024));
    }

    #[test]
    fn fields_nvidia_smi_does_not_know_stay_unknown() {
        let (gpus, driver) =
            parse_gpus("0, GPU-b, [N/A], [N/A], [Not Supported], N/A, [N/A]\n").unwrap();
        assert_eq!(driver, None);
        assert_eq!(gpus[0].name, None);
        assert_eq!(gpus[0].compute_capability, None);
        assert_eq!(gpus[0].memory_total_mib, None);
        assert_eq!(gpus[0].memory_used_mib, None);
    }

    #[test]
    fn malformed_rows_fail_the_parse() {
        for bad in [
            "0, GPU-a, A100, 8.0, 81920, 0\n",
            "x, GPU-a, A100, 8.0, 81920, 0, 550.1\n",
            "0, not-a-uuid, A100, 8.0, 81920, 0, 550.1\n",
            "0, GPU-a, A100, eight, 81920, 0, 550.1\n",
            "0, GPU-a, A100, 8.0, lots, 0, 550.1\n",
            "0, GPU-a, A100, 8.0, 1, 0, 550.1\n0, GPU-b, A100, 8.0, 1, 0, 550.1\n",
            "0, GPU-a, A100, 8.0, 1, 0, 550.1\n1, GPU-b, A100, 8.0, 1, 0, 535.2\n",
            "0, GPU-a, A100, 8.0, 1, 0, 550;rm\n",
        ] {
            assert!(
                matches!(parse_gpus(bad), Err(SmiError::Malformed { .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn outside_text_is_cleaned_and_capped() {
        let long = "A".repeat(500);
        let (gpus, _) =
            parse_gpus(&format!("0, GPU-a, \u{1b}[31m{long}, 8.0, 1, 0, 550.1\n")).unwrap();
        let name = gpus[0].name.clone().unwrap();
        assert!(!name.contains('\u{1b}'));
        assert_eq!(name.chars().count(), 128);
    }

    #[test]
    fn processes_and_their_cgroups() {
        let id = "a".repeat(64);
        let output = format!(
            "{MARKER} gpus\n{TWO}{MARKER} status gpus 0\n{MARKER} apps\nGPU-aaaa-1, 4242, 2048\nGPU-aaaa-2, 77, [N/A]\n{MARKER} status apps 0\n{MARKER} query\nDriver Version : 550.54.15\nCUDA Version : 12.4\n{MARKER} cgroup 4242\n0::/system.slice/docker-{id}.scope\n{MARKER} cgroup 77\n0::/user.slice\n{MARKER} end\n"
        );
        let facts = parse_probe(&output).unwrap();
        assert_eq!(facts.cuda, Some("12.4".parse().unwrap()));
        assert_eq!(facts.processes.len(), 2);
        assert_eq!(facts.processes[0].pid, 4242);
        assert_eq!(facts.processes[0].used_memory_mib, Some(2048));
        assert_eq!(facts.processes[0].cgroup_ids, vec![id]);
        assert_eq!(facts.processes[1].used_memory_mib, None);
        assert!(facts.processes[1].cgroup_ids.is_empty());
    }

    #[test]
    fn cgroup_v1_paths_name_the_container() {
        let id = "0123456789abcdef".repeat(4);
        assert_eq!(
            cgroup_container_ids(&format!(
                "12:devices:/docker/{id}\n11:memory:/docker/{id}\n"
            )),
            vec![id]
        );
    }

    #[test]
    fn a_failed_or_cut_probe_is_said() {
        let failed = format!("{MARKER} gpus\nNVIDIA-SMI has failed\n{MARKER} status gpus 9\n");
        assert!(matches!(parse_probe(&failed), Err(SmiError::Failed { .. })));
        // A failure whose output the probe's answer lacks says so, not an empty message.
        let unsaid = format!("{MARKER} status gpus 9\n");
        assert_eq!(
            parse_probe(&unsaid).map(|_| ()).map_err(|error| error.to_string()),
            Err(
                "nvidia-smi failed to list the GPUs (exit status 9): (its output, the probe's gpus section, is missing)"
                    .to_string()
            )
        );
        let cut = format!("{MARKER} gpus\n{TWO}{MARKER} status gpus 0\n");
        assert!(matches!(parse_probe(&cut), Err(SmiError::Missing("apps"))));
        assert!(matches!(parse_probe(""), Err(SmiError::Missing("gpus"))));
    }

    #[test]
    fn cuda_not_said_stays_unknown() {
        assert_eq!(parse_cuda("CUDA Version : N/A\n"), None);
        assert_eq!(parse_cuda("Driver Version : 1\n"), None);
    }
}
