//! A two-node Slurm export accepted and ranked by a real Slurm cluster.

use super::*;

/// The test cluster's slurm.conf (`.ci/slurm.sh` exports it), when its slurmctld answers.
fn slurm_cluster() -> Option<PathBuf> {
    let test = current_test_name();
    let Some(conf) = std::env::var_os("ENVCTL_TEST_SLURM_CONF").filter(|value| !value.is_empty())
    else {
        skip_or_panic(
            "no Slurm cluster",
            &test,
            "ENVCTL_TEST_SLURM_CONF is not set.\nFix: `sudo bash .ci/slurm.sh start` and export the ENVCTL_TEST_SLURM_CONF it prints.",
        );
        return None;
    };
    let conf = PathBuf::from(conf);
    let ping = Command::new("scontrol")
        .arg("ping")
        .env("SLURM_CONF", &conf)
        .output();
    if !ping.is_ok_and(|output| String::from_utf8_lossy(&output.stdout).contains("UP")) {
        skip_or_panic(
            "no Slurm cluster",
            &test,
            &format!(
                "`scontrol ping` with SLURM_CONF={} does not say UP",
                conf.display()
            ),
        );
        return None;
    }
    Some(conf)
}

/// Cancels the job when dropped, so a failed test leaves nothing queued.
struct JobGuard {
    id: String,
    conf: PathBuf,
}

impl Drop for JobGuard {
    fn drop(&mut self) {
        let _ = Command::new("scancel")
            .arg(&self.id)
            .env("SLURM_CONF", &self.conf)
            .output();
    }
}

/// The script `sbatch` really runs on two nodes: Slurm accepts its `#SBATCH` lines
/// (`--gres=gpu:2` against the cluster's gres.conf, `--cpus-per-task`, `--mem`), and each
/// node's task gets its rank from the real `SLURM_NODEID`, the master from the real
/// `scontrol show hostnames`. `envctl` is a stand-in that records its words: `envctl run`
/// itself is tested with this cluster in `tests/it/slurm.rs`.
#[test]
fn a_two_node_slurm_export_is_accepted_and_ranked_by_a_real_cluster() {
    let Some(conf) = slurm_cluster() else {
        return;
    };
    let project = project(&[(
        "train",
        "image = \"busybox:1.36\"\ngpus = 2\ncpus = 2\nmemory = \"200m\"\nnetwork = \"host\"\n\
         command = [\"torchrun\", \"it's $(id)\"]\n",
    )]);
    let root = project.path();
    std::fs::set_permissions(root, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    // Host network: the nodes' `envctl run` gets the yes given here (`--trust`).
    let (script, _) = exported(root, &["train", "--to", "slurm", "--nodes", "2", "--trust"]);
    let file = root.join("job.sh");
    std::fs::write(&file, &script).unwrap();
    let records = root.join("records");
    std::fs::create_dir(&records).unwrap();
    let bin = root.join("bin");
    std::fs::create_dir(&bin).unwrap();
    write_executable(
        &bin.join("envctl"),
        "#!/bin/bash\nprintf '%s\\0' \"$SLURMD_NODENAME\" \"$@\" > \"$RECORD/envctl.$SLURM_NODEID\"\n",
    );
    let output = Command::new("sbatch")
        .args(["--parsable", "--export=ALL"])
        .arg(format!("--output={}", records.join("job.out").display()))
        .arg(&file)
        .current_dir(root)
        .env("SLURM_CONF", &conf)
        .env("RECORD", &records)
        .env(
            "PATH",
            format!(
                "{}:{}",
                bin.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "sbatch refused the script: {output:?}\n{script}"
    );
    let id = String::from_utf8_lossy(&output.stdout)
        .trim()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    let _job = JobGuard {
        id: id.clone(),
        conf: conf.clone(),
    };
    let started = std::time::Instant::now();
    let done = |rank: u32| records.join(format!("envctl.{rank}")).exists();
    while !(done(0) && done(1)) {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "job {id} did not run on both nodes in 60 s: {:?}",
            std::fs::read_to_string(records.join("job.out"))
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let mut nodes = Vec::new();
    for rank in [0, 1] {
        let mut words = words_of(&records.join(format!("envctl.{rank}")));
        nodes.push(words.remove(0));
        let master = words
            .iter()
            .find_map(|word| word.strip_prefix("MASTER_ADDR="))
            .unwrap()
            .to_string();
        assert_eq!(master, nodes[0], "the first node is the master: {words:?}");
        assert!(words.contains(&format!("NODE_RANK={rank}")), "{words:?}");
        for expected in ["NNODES=2", "NPROC_PER_NODE=2", "WORLD_SIZE=4"] {
            assert!(
                words.contains(&expected.to_string()),
                "{expected}: {words:?}"
            );
        }
        assert_eq!(&words[words.len() - 2..], ["torchrun", "it's $(id)"]);
    }
    assert_ne!(nodes[0], nodes[1], "one task per node: {nodes:?}");
}
