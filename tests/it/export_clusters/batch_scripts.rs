//! The Slurm, Pyxis and Apptainer batch scripts, run against a fake cluster: one ranked
//! `envctl run` per node with the words as written, the lock's digest, the documented flags,
//! `bash -n` and shellcheck clean, the EDF file, and cluster flags refused where they do not
//! apply.

use super::*;

/// Stand-ins for Slurm and the runtimes, recording into `$RECORD`: each writes its words
/// NUL-separated, after the node's rank and the working directory.
fn fake_cluster(folder: &Path) -> PathBuf {
    let bin = folder.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    write_executable(
        &bin.join("scontrol"),
        "#!/bin/bash\n[ \"$1 $2\" = 'show hostnames' ] && [ \"$3\" = 'node-[a-b]' ] || exit 3\nprintf 'node-a\\nnode-b\\n'\n",
    );
    // srun: its own options first (recorded), then the command once per node.
    write_executable(
        &bin.join("srun"),
        "#!/bin/bash\nprintf '%s\\0' \"$@\" > \"$RECORD/srun\"\n\
         while [ \"$#\" -gt 0 ] && [ \"${1#--}\" != \"$1\" ]; do shift; done\n\
         for ((node = 0; node < SLURM_JOB_NUM_NODES; node++)); do\n\
         SLURM_NODEID=$node SLURM_PROCID=$node \"$@\" || exit $?\ndone\n",
    );
    let recorder = "#!/bin/bash\nprintf '%s\\0' \"${NODE_RANK-unset}\" \"$PWD\" \"$@\" > \"$RECORD/$(basename \"$0\").$SLURM_NODEID\"\n";
    for tool in ["envctl", "apptainer", "torchrun"] {
        write_executable(&bin.join(tool), recorder);
    }
    bin
}

/// Runs `script` with bash as sbatch would on a two-node job with 2 GPUs per node.
fn run_script(script: &Path, bin: &Path, record: &Path, extra: &[(&str, &str)]) -> (bool, String) {
    let mut command = Command::new("bash");
    command
        .arg(script)
        .env_clear()
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("HOME", record.join("home"))
        .env("RECORD", record)
        .env("SLURM_JOB_NODELIST", "node-[a-b]")
        .env("SLURM_JOB_NUM_NODES", "2")
        .env("SLURM_GPUS_ON_NODE", "2")
        .current_dir(record);
    for (key, value) in extra {
        command.env(key, value);
    }
    let output = run_with_timeout(&mut command, TOOL_TIMEOUT).unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A record: the rank, the working directory and the words.
fn record(path: &Path) -> (String, String, Vec<String>) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut words: Vec<String> = bytes
        .split(|byte| *byte == 0)
        .map(|word| String::from_utf8(word.to_vec()).unwrap())
        .collect();
    assert_eq!(words.pop().as_deref(), Some(""), "NUL-terminated");
    let rank = words.remove(0);
    let directory = words.remove(0);
    (rank, directory, words)
}

fn profile_command() -> Vec<String> {
    ["torchrun", "train.py"]
        .iter()
        .chain(HOSTILE.iter())
        .map(|word| (*word).to_string())
        .collect()
}

fn rendezvous(rank: u32) -> Vec<String> {
    [
        "MASTER_ADDR=node-a".to_string(),
        "MASTER_PORT=29500".into(),
        "NNODES=2".into(),
        format!("NODE_RANK={rank}"),
        "NPROC_PER_NODE=2".into(),
        "WORLD_SIZE=4".into(),
        "PET_MASTER_ADDR=node-a".into(),
        "PET_MASTER_PORT=29500".into(),
        "PET_NNODES=2".into(),
        format!("PET_NODE_RANK={rank}"),
        "PET_NPROC_PER_NODE=2".into(),
    ]
    .to_vec()
}

#[test]
fn slurm_script_runs_one_ranked_envctl_run_per_node_with_the_words_as_written() {
    let project = project(&[("train", &training_profile())]);
    let root = project.path();
    // The profile asks for the host's network: every node's `envctl run` would refuse it
    // (issue 39's trust rule), so the export asks for the yes once, and its hint runs.
    let (_, refused, code) = export(root, &["train", "--to", "slurm", "--nodes", "2"]);
    assert_eq!(code, 2, "{refused}");
    assert!(
        refused.contains("`envctl export train --trust --to slurm --nodes 2`"),
        "{refused}"
    );
    let (script, stderr) = exported(root, &["train", "--trust", "--to", "slurm", "--nodes", "2"]);
    assert!(stderr.contains("trusted (--trust): "), "{stderr}");
    for line in [
        "#SBATCH --nodes=2\n",
        "#SBATCH --ntasks-per-node=1\n",
        "#SBATCH --gres=gpu:2\n",
        "#SBATCH --cpus-per-task=8\n",
        "#SBATCH --mem=32G\n",
        "#SBATCH --job-name=envctl-train\n",
    ] {
        assert!(script.contains(line), "{line} in\n{script}");
    }
    // No lock: the tag is pulled on each node, said as a notice.
    assert!(stderr.contains("envctl lock"), "{stderr}");
    let file = root.join("job.sh");
    std::fs::write(&file, &script).unwrap();
    let record_folder = tempfile::tempdir().unwrap();
    let bin = fake_cluster(record_folder.path());
    let (ok, stderr) = run_script(&file, &bin, record_folder.path(), &[]);
    assert!(ok, "{stderr}\n{script}");
    let srun = words_of(&record_folder.path().join("srun"));
    assert_eq!(srun[0], "--kill-on-bad-exit=1", "{srun:?}");
    for rank in [0, 1] {
        let (_, directory, words) = record(&record_folder.path().join(format!("envctl.{rank}")));
        assert_eq!(
            std::fs::canonicalize(&directory).unwrap(),
            std::fs::canonicalize(root).unwrap(),
            "envctl runs where the profile and envctl.lock are found"
        );
        let mut expected = vec![
            "run".to_string(),
            "--trust".into(),
            "train".into(),
            "--".into(),
            "env".into(),
        ];
        expected.extend(rendezvous(rank));
        expected.extend(profile_command());
        assert_eq!(words, expected, "node {rank}");
    }
    assert!(!Path::new("/tmp/envctl-pwned").exists());

    // `sbatch FILE COMMAND…` replaces the profile's command.
    let mut command = Command::new("bash");
    command
        .arg(&file)
        .args(["python", "-c", "print('$x')"])
        .env_clear()
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("RECORD", record_folder.path())
        .env("SLURM_JOB_NODELIST", "node-[a-b]")
        .env("SLURM_JOB_NUM_NODES", "2");
    let output = run_with_timeout(&mut command, TOOL_TIMEOUT).unwrap();
    assert!(output.status.success(), "{output:?}");
    let (_, _, words) = record(&record_folder.path().join("envctl.1"));
    assert_eq!(
        &words[words.len() - 3..],
        ["python", "-c", "print('$x')"],
        "{words:?}"
    );
    // Without SLURM_GPUS_ON_NODE, the profile's count.
    assert!(words.contains(&"NPROC_PER_NODE=2".to_string()), "{words:?}");
}

#[test]
fn slurm_script_with_a_lock_says_the_digest_and_names_a_profile_file_by_its_path() {
    let digest = format!("sha256:{}", "c".repeat(64));
    let project = project(&[("locked", "image = \"busybox:1.36\"\ncommand = [\"true\"]\n")]);
    let root = project.path();
    std::fs::write(
        root.join("envctl.lock"),
        format!(
            "version = 1\n\n[[image]]\nprofile = \"locked\"\nimage = \"busybox:1.36\"\ndigest = \"{digest}\"\ndate = \"2026-12-01\"\nplatform = \"linux/amd64\"\n"
        ),
    )
    .unwrap();
    let (script, stderr) = exported(root, &["locked", "--to", "slurm"]);
    assert!(
        script.contains(&format!(
            "# Image: busybox:1.36@{digest} (the digest envctl.lock pins"
        )),
        "{script}"
    );
    assert!(!stderr.contains("envctl lock"), "{stderr}");
    assert!(script.contains("#SBATCH --nodes=1\n"), "{script}");
    assert!(!script.contains("--gres"), "no GPU asked: {script}");
    let (json, _) = exported(root, &["locked", "--to", "pyxis", "--json"]);
    let document: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(document["schema_version"], 1, "{document}");
    assert_eq!(document["target"], "pyxis");
    assert!(
        document["content"]
            .as_str()
            .unwrap()
            .contains(&format!("--container-image=busybox:1.36@{digest}")),
        "{document}"
    );
    assert!(
        document["notices"]
            .as_array()
            .unwrap()
            .iter()
            .any(|notice| notice["setting"] == "image" && notice["target"] == "pyxis"),
        "the enroot 4.0 notice: {document}"
    );
    let (script, _) = exported(root, &["./envctl/locked.toml", "--to", "slurm"]);
    let path = root.join("envctl/locked.toml");
    assert!(
        script.contains(&format!("envctl-task {} \"$@\"", path.display())),
        "a profile file is named by its absolute path: {script}"
    );
}

#[test]
fn pyxis_script_passes_the_documented_flags_and_ranks_each_node() {
    let project = project(&[("train", &training_profile())]);
    let root = project.path();
    let (script, stderr) = exported(root, &["train", "--to", "pyxis", "--nodes", "2"]);
    for setting in [
        "`ports`",
        "`shm_size`",
        "`cap_add`",
        "`hostname`",
        "mounts./datasets",
    ] {
        let expected = setting != "`ports`";
        assert_eq!(stderr.contains(setting), expected, "{setting}: {stderr}");
    }
    let file = root.join("pyxis.sh");
    std::fs::write(&file, &script).unwrap();
    let record_folder = tempfile::tempdir().unwrap();
    let bin = fake_cluster(record_folder.path());
    // The secret must come from the submitter's environment: the script stops without it.
    let (ok, stderr) = run_script(&file, &bin, record_folder.path(), &[]);
    assert!(
        !ok && stderr.contains("export API_TOKEN before sbatch"),
        "{stderr}"
    );
    assert!(!record_folder.path().join("srun").exists());
    let (ok, stderr) = run_script(&file, &bin, record_folder.path(), &[("API_TOKEN", "t0ken")]);
    assert!(ok, "{stderr}\n{script}");
    let srun = words_of(&record_folder.path().join("srun"));
    let home = record_folder.path().join("home");
    let data = root.join("my data");
    // pyxis's flags (args.c): the image as enroot's URI, mounts SRC:DST[:ro] joined by
    // commas, the workdir, the names of the variables the job's environment gives.
    assert_eq!(
        srun[..5],
        [
            "--kill-on-bad-exit=1".to_string(),
            "--container-image=nvcr.io#nvidia/pytorch:25.01-py3".into(),
            format!(
                "--container-mounts={}:/data:ro,{}/cache:/cache",
                data.display(),
                home.display()
            ),
            "--container-workdir=/work space".into(),
            "--container-env=API_TOKEN,CUDA_DEVICE_ORDER,LIST,NCCL_DEBUG,ODD".into(),
        ],
        "{srun:?}"
    );
    for rank in [0, 1] {
        let (node_rank, _, words) = record(&record_folder.path().join(format!("torchrun.{rank}")));
        assert_eq!(node_rank, rank.to_string());
        assert_eq!(words, profile_command()[1..], "node {rank}");
    }
}

#[test]
fn apptainer_script_passes_the_documented_flags_and_ranks_each_node() {
    let project = project(&[("train", &training_profile())]);
    let root = project.path();
    let (script, _) = exported(root, &["train", "--to", "apptainer", "--nodes", "2"]);
    // `--env` splits at commas, so such a value and the secret go as APPTAINERENV_*.
    assert!(
        script.contains("export APPTAINERENV_LIST=a,b\n"),
        "{script}"
    );
    assert!(
        script.contains("export APPTAINERENV_API_TOKEN=\"${API_TOKEN:?"),
        "{script}"
    );
    let file = root.join("apptainer.sh");
    std::fs::write(&file, &script).unwrap();
    let record_folder = tempfile::tempdir().unwrap();
    let bin = fake_cluster(record_folder.path());
    let (ok, stderr) = run_script(&file, &bin, record_folder.path(), &[("API_TOKEN", "t")]);
    assert!(ok, "{stderr}\n{script}");
    let home = record_folder.path().join("home");
    let data = root.join("my data");
    for rank in [0, 1] {
        let (node_rank, _, words) = record(&record_folder.path().join(format!("apptainer.{rank}")));
        assert_eq!(node_rank, rank.to_string());
        let mut expected: Vec<String> = vec![
            "exec".into(),
            "--nv".into(),
            "--bind".into(),
            format!("{}:/data:ro", data.display()),
            "--bind".into(),
            format!("{}/cache:/cache", home.display()),
            "--env".into(),
            "CUDA_DEVICE_ORDER=PCI_BUS_ID".into(),
            "--env".into(),
            "NCCL_DEBUG=INFO".into(),
            "--env".into(),
            "ODD=it's $(id) `x`\nline".into(),
            "--pwd".into(),
            "/work space".into(),
            "docker://nvcr.io/nvidia/pytorch:25.01-py3".into(),
        ];
        expected.extend(profile_command());
        assert_eq!(words, expected, "node {rank}");
    }
}

/// shellcheck, or `None` after a loud skip.
fn shellcheck() -> Option<()> {
    let probe = Command::new("shellcheck").arg("--version").output();
    if probe.is_ok_and(|output| output.status.success()) {
        return Some(());
    }
    skip_or_panic(
        "no shellcheck",
        &current_test_name(),
        "`shellcheck --version` failed. Install: `apt-get install shellcheck` (what .ci/run does).",
    );
    None
}

#[test]
fn every_sbatch_script_passes_bash_n_and_shellcheck() {
    let project = project(&[
        ("train", &training_profile()),
        ("bare", "image = \"busybox\"\n"),
        (
            "all-gpus",
            "image = \"busybox\"\ngpus = \"all\"\ncpus = 0.5\nmemory = \"1500m\"\nports = [\"8888:8888\"]\n",
        ),
    ]);
    let root = project.path();
    let mut files = Vec::new();
    for profile in ["train", "bare", "all-gpus"] {
        for target in ["slurm", "pyxis", "apptainer"] {
            for nodes in ["1", "3"] {
                let mut arguments = vec![profile, "--to", target, "--nodes", nodes];
                // `train` asks for the host's network: its Slurm script needs the yes.
                if profile == "train" && target == "slurm" {
                    arguments.push("--trust");
                }
                let (script, _) = exported(root, &arguments);
                assert!(script.starts_with("#!/bin/bash\n"), "{script}");
                let file = root.join(format!("{profile}.{target}.{nodes}.sh"));
                std::fs::write(&file, script).unwrap();
                let output = Command::new("bash").arg("-n").arg(&file).output().unwrap();
                assert!(
                    output.status.success(),
                    "bash -n {}: {output:?}",
                    file.display()
                );
                files.push(file);
            }
        }
    }
    if shellcheck().is_none() {
        return;
    }
    let output = Command::new("shellcheck")
        .args(["--shell=bash", "--severity=info"])
        .args(&files)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "shellcheck:\n{}",
        String::from_utf8_lossy(&output.stdout)
    );
}

#[test]
fn edf_is_toml_with_the_image_mounts_workdir_and_env() {
    let project = project(&[("train", &training_profile())]);
    let root = project.path();
    let (text, stderr) = exported(root, &["train", "--to", "edf"]);
    let table: toml::Table = text.parse().unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(
        table["image"].as_str(),
        Some("nvcr.io#nvidia/pytorch:25.01-py3")
    );
    assert_eq!(table["workdir"].as_str(), Some("/work space"));
    let data = root.join("my data");
    assert_eq!(
        table["mounts"].as_array().unwrap(),
        &vec![
            toml::Value::from(format!("{}:/data:ro", data.display())),
            toml::Value::from("${HOME}/cache:/cache"),
        ]
    );
    assert_eq!(table["env"]["ODD"].as_str(), Some("it's $(id) `x`\nline"));
    assert!(table["env"].get("API_TOKEN").is_none(), "{text}");
    assert!(
        stderr.contains("srun --environment=FILE torchrun"),
        "{stderr}"
    );
    let (_, stderr, code) = export(root, &["train", "--to", "edf", "--nodes", "2"]);
    assert_eq!(code, 2, "{stderr}");
}

#[test]
fn cluster_flags_are_refused_where_they_do_not_apply() {
    let project = project(&[("train", &training_profile())]);
    let root = project.path();
    for (arguments, expected) in [
        (
            &["train", "--to", "compose", "--nodes", "2"][..],
            "--nodes only apply to",
        ),
        (
            &["train", "--to", "slurm", "--runtime-class", "nvidia"],
            "--runtime-class only apply to `--to k8s`",
        ),
        (
            &["train", "--to", "k8s", "--mig-profile", "1g"],
            "is not a MIG profile",
        ),
        (
            &["train", "--to", "k8s", "--runtime-class", "NVIDIA"],
            "is not a RuntimeClass name",
        ),
        (
            &["train", "--to", "k8s", "--nodes", "2", "--kind", "pod"],
            "PyTorchJob, which takes no --kind",
        ),
        (
            &["train", "--to", "k8s", "--nodes", "0"],
            "0 is not in 1..=4096",
        ),
    ] {
        let (_, stderr, code) = export(root, arguments);
        assert_eq!(code, 2, "{arguments:?}: {stderr}");
        assert!(stderr.contains(expected), "{arguments:?}: {stderr}");
    }
}
