//! The Slurm job this process runs in, from the variables Slurm sets (read once by
//! `context::Environment::slurm`), into `facts::slurm::SlurmJob`.
//!
//! `SLURM_STEP_GPUS` (set under `srun`) wins over `SLURM_JOB_GPUS` (the batch script);
//! `CUDA_VISIBLE_DEVICES` is never read. A value that cannot be read is kept as such,
//! never replaced by a default.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

use envctl_facts::slurm::SlurmVariables;

/// Where slurm.conf lies without `SLURM_CONF` (Debian's and most sites' place).
const DEFAULT_CONF: &str = "/etc/slurm/slurm.conf";
use envctl_facts::slurm::{GpuAllocation, JobCpus, JobMemory, SlurmJob, UnreadableVariable};

/// The job, when `SLURM_JOB_ID` is set.
pub fn job(variables: &SlurmVariables) -> Option<SlurmJob> {
    let job_id = variables.job_id.clone()?;
    let mut unreadable = Vec::new();
    let mut number = |variable: &str, value: &Option<String>| -> Option<u64> {
        let text = value.as_deref()?;
        match text.trim().parse::<u64>() {
            Ok(number) => Some(number),
            Err(_) => {
                unreadable.push(UnreadableVariable {
                    variable: variable.to_string(),
                    value: text.to_string(),
                });
                None
            }
        }
    };
    let per_node = number("SLURM_MEM_PER_NODE", &variables.mem_per_node);
    let per_cpu = number("SLURM_MEM_PER_CPU", &variables.mem_per_cpu);
    let per_task = number("SLURM_CPUS_PER_TASK", &variables.cpus_per_task);
    let on_node = number("SLURM_CPUS_ON_NODE", &variables.cpus_on_node);
    let node_id = number("SLURM_NODEID", &variables.node_id);
    let nodes = number("SLURM_NNODES", &variables.nodes);
    let memory = job_memory(per_node, per_cpu, on_node);
    let cpus = job_cpus(per_task, on_node);
    let gpus = match (&variables.step_gpus, &variables.job_gpus) {
        (Some(step), _) => allocation("SLURM_STEP_GPUS", step, |ids| GpuAllocation::Step { ids }),
        (None, Some(job)) => allocation("SLURM_JOB_GPUS", job, |ids| GpuAllocation::Job { ids }),
        (None, None) => GpuAllocation::None,
    };
    let gpu_minors = gpu_minors(variables, &gpus);
    Some(SlurmJob {
        job_id,
        // A batch script has no SLURM_STEP_ID: its step is Slurm's `batch` step.
        step_id: variables
            .step_id
            .clone()
            .or_else(|| variables.batch.then(|| "batch".to_string())),
        gpus,
        memory,
        cpus,
        node_list: variables.job_node_list.clone(),
        node_id: node_id.and_then(|id| u32::try_from(id).ok()),
        nodes: nodes.and_then(|count| u32::try_from(count).ok()),
        gpu_minors,
        unreadable,
    })
}

/// The job's memory limit: per node, else per CPU times the node's CPUs.
fn job_memory(
    per_node: Option<u64>,
    per_cpu: Option<u64>,
    on_node: Option<u64>,
) -> Option<JobMemory> {
    let mebibytes = |value: u64| value.saturating_mul(1 << 20);
    match (per_node, per_cpu, on_node) {
        // Slurm's `--mem=0` means "all of the node's memory": no limit envctl can apply.
        (Some(0), _, _) => None,
        (Some(per_node), _, _) => Some(JobMemory {
            bytes: mebibytes(per_node),
            from: format!("SLURM_MEM_PER_NODE={per_node}"),
        }),
        (None, Some(per_cpu), Some(cpus)) if per_cpu > 0 => Some(JobMemory {
            bytes: mebibytes(per_cpu.saturating_mul(cpus)),
            from: format!("SLURM_MEM_PER_CPU={per_cpu} × SLURM_CPUS_ON_NODE={cpus}"),
        }),
        _ => None,
    }
}

/// The job's CPUs: per task, else the node's.
fn job_cpus(per_task: Option<u64>, on_node: Option<u64>) -> Option<JobCpus> {
    match (per_task, on_node) {
        (Some(count), _) => Some(("SLURM_CPUS_PER_TASK", count)),
        (None, Some(count)) => Some(("SLURM_CPUS_ON_NODE", count)),
        (None, None) => None,
    }
    .and_then(|(variable, count)| {
        Some(JobCpus {
            count: u32::try_from(count).ok()?,
            from: format!("{variable}={count}"),
        })
    })
}

/// The device minor numbers of the allocated GPUs, from the node's gres.conf beside
/// slurm.conf.
fn gpu_minors(variables: &SlurmVariables, gpus: &GpuAllocation) -> Option<Vec<u32>> {
    gpus.ids().and_then(|ids| {
        let conf = variables
            .conf
            .as_deref()
            .map_or_else(|| Path::new(DEFAULT_CONF), Path::new);
        let listed = gres_gpu_minors(
            &conf.with_file_name("gres.conf"),
            variables.node_name.as_deref()?,
        )?;
        ids.iter()
            .map(|&id| listed.get(id as usize).copied())
            .collect::<Option<Vec<u32>>>()
    })
}

/// The device minor numbers of `node`'s GPUs, in the order of gres.conf's `File=` lists
/// (Slurm's GPU indices are positions in it): each file's own minor number when it is a
/// character device, else the N of a name ending in `nvidiaN`. `None` when the file cannot
/// be read or a listed file says no number (never a guess).
pub fn gres_gpu_minors(gres_conf: &Path, node: &str) -> Option<Vec<u32>> {
    let bytes =
        envctl_core::untrusted::read(gres_conf, 1 << 20, envctl_core::untrusted::Named::Found)
            .ok()??;
    let text = String::from_utf8(bytes).ok()?;
    let mut minors = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or_default();
        let field = |key: &str| {
            line.split_whitespace()
                .find_map(|pair| pair.strip_prefix(key))
                .map(str::to_string)
        };
        if !field("Name=").is_some_and(|name| name.eq_ignore_ascii_case("gpu")) {
            continue;
        }
        if let Some(nodes) = field("NodeName=")
            && !hostlist(&nodes).iter().any(|name| name == node)
        {
            continue;
        }
        let Some(files) = field("File=") else {
            continue;
        };
        for file in hostlist(&files) {
            let path = Path::new(&file);
            let minor = match std::fs::metadata(path) {
                Ok(metadata) if metadata.file_type().is_char_device() => {
                    u32::try_from(super::split_device_number(metadata.rdev()).1).ok()
                }
                _ => file
                    .rsplit_once("nvidia")
                    .and_then(|(_, number)| number.parse().ok()),
            };
            minors.push(minor?);
        }
    }
    (!minors.is_empty()).then_some(minors)
}

/// Slurm's list form: `a,b`, `n[1-2,4]`, `/dev/nvidia[0-3]` → each name.
fn hostlist(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        // The next comma outside brackets ends one entry.
        let mut depth = 0;
        let end = rest
            .char_indices()
            .find(|(_, character)| {
                match character {
                    '[' => depth += 1,
                    ']' => depth -= 1,
                    ',' if depth == 0 => return true,
                    _ => {}
                }
                false
            })
            .map_or(rest.len(), |(index, _)| index);
        let entry = &rest[..end];
        rest = rest.get(end + 1..).unwrap_or_default();
        match (entry.find('['), entry.rfind(']')) {
            (Some(open), Some(close)) if open < close => {
                let (prefix, suffix) = (&entry[..open], &entry[close + 1..]);
                for part in entry[open + 1..close].split(',') {
                    let (first, last) = part.split_once('-').unwrap_or((part, part));
                    let (Ok(from), Ok(to)) = (first.parse::<u32>(), last.parse::<u32>()) else {
                        continue;
                    };
                    for number in from..=to.min(from.saturating_add(4096)) {
                        // Zero-padded ranges (`n[01-02]`) keep their width.
                        names.push(format!(
                            "{prefix}{number:0width$}{suffix}",
                            width = first.len()
                        ));
                    }
                }
            }
            _ => names.push(entry.to_string()),
        }
    }
    names
}

/// `0,1` or `2-3,5` as indices, in Slurm's order without repeats.
fn allocation(
    variable: &str,
    value: &str,
    made: impl FnOnce(Vec<u32>) -> GpuAllocation,
) -> GpuAllocation {
    match indices(value) {
        Some(ids) => made(ids),
        None => GpuAllocation::Unreadable {
            variable: variable.to_string(),
            value: value.to_string(),
        },
    }
}

fn indices(value: &str) -> Option<Vec<u32>> {
    let mut ids = Vec::new();
    for part in value.trim().split(',') {
        let (first, last) = match part.split_once('-') {
            Some((first, last)) => (first.parse::<u32>().ok()?, last.parse::<u32>().ok()?),
            None => {
                let id = part.parse::<u32>().ok()?;
                (id, id)
            }
        };
        // A range wider than any node's GPUs is not an allocation.
        if last < first || last - first > 1024 {
            return None;
        }
        for id in first..=last {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    Some(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn variables(pairs: &[(&str, &str)]) -> SlurmVariables {
        SlurmVariables::from_lookup(|name| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| value.to_string())
        })
    }

    #[test]
    fn outside_a_job_there_is_none() {
        assert_eq!(job(&variables(&[("SLURM_JOB_GPUS", "0")])), None);
    }

    #[test]
    fn the_step_gpus_win_and_cuda_visible_devices_is_never_read() {
        let read = job(&variables(&[
            ("SLURM_JOB_ID", "7"),
            ("SLURM_STEP_ID", "0"),
            ("SLURM_JOB_GPUS", "0,1,2,3"),
            ("SLURM_STEP_GPUS", "2,3"),
            ("CUDA_VISIBLE_DEVICES", "0,1"),
        ]))
        .unwrap();
        assert_eq!(read.gpus, GpuAllocation::Step { ids: vec![2, 3] });
        let batch = job(&variables(&[
            ("SLURM_JOB_ID", "7"),
            ("SLURM_JOB_GPUS", "2-3,5"),
            ("CUDA_VISIBLE_DEVICES", "0,1,2"),
        ]))
        .unwrap();
        assert_eq!(batch.gpus, GpuAllocation::Job { ids: vec![2, 3, 5] });
        let salloc = job(&variables(&[("SLURM_JOB_ID", "7")])).unwrap();
        assert_eq!(salloc.gpus, GpuAllocation::None);
    }

    #[test]
    fn gres_files_give_the_minor_numbers_in_slurms_order() {
        let folder = tempfile::tempdir().unwrap();
        let gres = folder.path().join("gres.conf");
        std::fs::write(
            &gres,
            "AutoDetect=off\n# n2's GPUs are the second four\nNodeName=n1 Name=gpu File=/x/nvidia[0-3]\nNodeName=n[2-3] Name=gpu File=/x/nvidia[4-5],/x/nvidia7,/x/nvidia6\nNodeName=n2 Name=mps Count=100\n",
        )
        .unwrap();
        assert_eq!(gres_gpu_minors(&gres, "n1"), Some(vec![0, 1, 2, 3]));
        assert_eq!(gres_gpu_minors(&gres, "n2"), Some(vec![4, 5, 7, 6]));
        assert_eq!(gres_gpu_minors(&gres, "n9"), None);
        assert_eq!(gres_gpu_minors(&folder.path().join("none"), "n1"), None);
        let conf = folder.path().join("slurm.conf");
        let read = job(&variables(&[
            ("SLURM_JOB_ID", "7"),
            ("SLURM_STEP_GPUS", "2,3"),
            ("SLURMD_NODENAME", "n2"),
            ("SLURM_CONF", conf.to_str().unwrap()),
        ]))
        .unwrap();
        assert_eq!(read.gpu_minors, Some(vec![7, 6]));
        assert_eq!(hostlist("n[01-02],x"), vec!["n01", "n02", "x"]);
    }

    #[test]
    fn memory_and_cpus_come_from_the_job_and_bad_values_are_named() {
        let read = job(&variables(&[
            ("SLURM_JOB_ID", "7"),
            ("SLURM_MEM_PER_CPU", "100"),
            ("SLURM_CPUS_ON_NODE", "4"),
        ]))
        .unwrap();
        assert_eq!(read.memory.unwrap().bytes, 400 << 20);
        assert_eq!(read.cpus.unwrap().count, 4);
        let per_node = job(&variables(&[
            ("SLURM_JOB_ID", "7"),
            ("SLURM_MEM_PER_NODE", "2048"),
            ("SLURM_CPUS_PER_TASK", "2"),
            ("SLURM_CPUS_ON_NODE", "8"),
        ]))
        .unwrap();
        assert_eq!(per_node.memory.unwrap().bytes, 2 << 30);
        assert_eq!(per_node.cpus.unwrap().from, "SLURM_CPUS_PER_TASK=2");
        let bad = job(&variables(&[
            ("SLURM_JOB_ID", "7"),
            ("SLURM_MEM_PER_NODE", "lots"),
            ("SLURM_JOB_GPUS", "gpu:2"),
        ]))
        .unwrap();
        assert_eq!(bad.memory, None);
        assert_eq!(bad.unreadable[0].variable, "SLURM_MEM_PER_NODE");
        assert!(matches!(bad.gpus, GpuAllocation::Unreadable { .. }));
    }
}
