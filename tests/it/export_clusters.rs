//! The cluster exports (issue 29, items 3, 4 and 6) checked by what reads them:
//!
//! - the sbatch scripts of `--to slurm|pyxis|apptainer` pass `bash -n` and `shellcheck`,
//!   and their rendezvous really runs: each script is run by bash with Slurm's variables
//!   of a two-node job and stand-ins for `scontrol`, `srun` (runs its command once per
//!   node, `SLURM_NODEID` 0 and 1), `envctl`, `apptainer` and the container's command on
//!   `PATH`, which record the words and variables they get; hostile profile values
//!   (quotes, `$(…)`, backticks, newlines) must arrive as the same words;
//! - Kubernetes manifests with the GPU toleration, `--runtime-class`, `--mig-profile` and
//!   the host-access keys pass `kubernetes-validate --strict`; `--nodes N` writes a
//!   PyTorchJob that passes the training operator's pinned CRD schema
//!   (`tests/fixtures/kubeflow/`, strict), whose pod templates pass `kubernetes-validate
//!   --strict` as PodTemplates;
//! - compose files and devcontainer.json with `network`, `devices`, `cap_add` and
//!   `hostname` pass both Compose versions and the pinned devcontainer schema;
//! - on the real Slurm cluster of `.ci/slurm.sh` (`ENVCTL_TEST_SLURM_CONF`), `sbatch`
//!   accepts a two-node `--to slurm` script and runs one ranked task per node.
//!
//! A missing tool skips loudly, and fails under `ENVCTL_REQUIRE_DOCKER=1` (`.ci/run`
//! installs shellcheck and the validators).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::support::cli::envctl_in;
use crate::support::docker::{current_test_name, run_with_timeout, skip_or_panic};

const TOOL_TIMEOUT: Duration = Duration::from_secs(120);
const KUBERNETES_VERSION: &str = "1.33.0";

/// Words no shell may read as code: quotes, substitutions, globs, a newline, a backslash.
const HOSTILE: [&str; 6] = [
    "it's",
    "$(touch /tmp/envctl-pwned)",
    "`id`",
    "a\nb",
    "*; rm -rf ~ \\",
    "\"quoted\" $HOME ${X}",
];

/// A multi-node profile with every key the cluster targets read, and hostile values.
fn training_profile() -> String {
    let command: Vec<String> = ["torchrun", "train.py"]
        .iter()
        .map(|word| (*word).to_string())
        .chain(HOSTILE.iter().map(|word| (*word).to_string()))
        .collect();
    format!(
        "image = \"nvcr.io/nvidia/pytorch:25.01-py3\"\n\
         gpus = 2\ncpus = 8\nmemory = \"32g\"\n\
         network = \"host\"\ndevices = [\"/dev/infiniband\"]\ncap_add = [\"IPC_LOCK\"]\n\
         hostname = \"trainer\"\nworkdir = \"/work space\"\n\
         mounts = [\"./my data:/data:ro\", \"~/cache:/cache\", \"datasets:/datasets\"]\n\
         command = {}\n\
         env = {{ NCCL_DEBUG = \"INFO\", ODD = {}, LIST = \"a,b\", API_TOKEN = \"\" }}\n",
        toml_array(&command),
        toml_string("it's $(id) `x`\nline")
    )
}

fn toml_string(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

fn toml_array(words: &[String]) -> String {
    format!(
        "[{}]",
        words
            .iter()
            .map(|word| toml_string(word))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// A project folder with `./envctl/NAME.toml` for each `(name, text)`.
fn project(profiles: &[(&str, &str)]) -> tempfile::TempDir {
    let folder = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(folder.path().join("envctl")).unwrap();
    std::fs::create_dir_all(folder.path().join("my data")).unwrap();
    for (name, text) in profiles {
        std::fs::write(folder.path().join(format!("envctl/{name}.toml")), text).unwrap();
    }
    folder
}

/// `envctl export ARGS…` in `project`: stdout, stderr, exit code.
fn export(project: &Path, arguments: &[&str]) -> (String, String, i32) {
    let output = envctl_in(project)
        .arg("export")
        .args(arguments)
        .timeout(TOOL_TIMEOUT)
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
        output.status.code().unwrap_or(-1),
    )
}

fn exported(project: &Path, arguments: &[&str]) -> (String, String) {
    let (stdout, stderr, code) = export(project, arguments);
    assert_eq!(code, 0, "export {arguments:?}: {stderr}");
    (stdout, stderr)
}

/// Writes an executable through `install`, so no file descriptor of this process (which
/// another test's fork could hold at that instant) is open on it when it runs: exec would
/// fail with "Text file busy".
fn write_executable(path: &Path, text: &str) {
    let source = path.with_extension("source");
    std::fs::write(&source, text).unwrap();
    let status = Command::new("install")
        .args(["-m", "755"])
        .arg(&source)
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success(), "install {}", path.display());
}

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

fn words_of(path: &Path) -> Vec<String> {
    let bytes = std::fs::read(path).unwrap();
    let mut words: Vec<String> = bytes
        .split(|byte| *byte == 0)
        .map(|word| String::from_utf8(word.to_vec()).unwrap())
        .collect();
    words.pop();
    words
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

// ---------------------------------------------------------------------------------------
// Kubernetes
// ---------------------------------------------------------------------------------------

/// `python3` with the validators' folder, or `None` after a loud skip.
fn python_validators() -> Option<Command> {
    let folder = std::env::var_os("ENVCTL_VALIDATORS").map(PathBuf::from);
    let python = || {
        let mut command = Command::new("python3");
        if let Some(folder) = &folder {
            command.env("PYTHONPATH", folder);
        }
        command
    };
    let mut probe = python();
    probe.args(["-c", "import kubernetes_validate, jsonschema, yaml"]);
    if run_with_timeout(&mut probe, TOOL_TIMEOUT).is_ok_and(|output| output.status.success()) {
        return Some(python());
    }
    skip_or_panic(
        "no kubernetes-validate or jsonschema",
        &current_test_name(),
        "`python3 -c 'import kubernetes_validate, jsonschema, yaml'` failed; set \
         ENVCTL_VALIDATORS=/opt/envctl-ci/validators (what .ci/run does)",
    );
    None
}

fn documents(text: &str) -> Vec<Value> {
    text.split("\n---\n").map(yaml_as_json).collect()
}

/// YAML → JSON through Python (the test binary has no YAML parser of its own).
fn yaml_as_json(document: &str) -> Value {
    let mut command = Command::new("python3");
    if let Some(folder) = std::env::var_os("ENVCTL_VALIDATORS") {
        command.env("PYTHONPATH", folder);
    }
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), document).unwrap();
    command.args([
        "-c",
        "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))",
    ]);
    command.arg(file.path());
    let output = run_with_timeout(&mut command, TOOL_TIMEOUT).unwrap();
    assert!(output.status.success(), "{output:?}");
    serde_json::from_slice(&output.stdout).unwrap()
}

fn kubernetes_validate(python: &mut Command, files: &[PathBuf]) -> (bool, String) {
    python
        .args([
            "-m",
            "kubernetes_validate",
            "--strict",
            "-k",
            KUBERNETES_VERSION,
        ])
        .args(files);
    let output = run_with_timeout(python, TOOL_TIMEOUT).unwrap();
    (
        output.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    )
}

#[test]
fn kubernetes_gpu_pods_schedule_on_real_clusters_and_pass_the_strict_schemas() {
    let Some(_) = python_validators() else {
        return;
    };
    let project = project(&[
        ("train", &training_profile()),
        (
            "plain",
            "image = \"busybox\"\nhostname = \"box-1\"\ncap_add = [\"SYS_NICE\"]\nnetwork = \"lab\"\n",
        ),
        (
            "mig",
            "image = \"busybox\"\ngpus = [\"MIG-8e6d1f5a-3c2b-4a1e-9f00-123456789abc\"]\n",
        ),
    ]);
    let root = project.path();
    let out = root.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let cases: [(&str, &[&str]); 6] = [
        ("train", &[]),
        (
            "train",
            &[
                "--no-gpu-toleration",
                "--runtime-class",
                "nvidia",
                "--kind",
                "pod",
            ],
        ),
        (
            "train",
            &[
                "--mig-profile",
                "1g.10gb",
                "--kind",
                "deployment",
                "--volumes",
                "pvc",
            ],
        ),
        ("plain", &["--service"]),
        ("mig", &[]),
        ("mig", &["--mig-profile", "3g.40gb"]),
    ];
    let mut files = Vec::new();
    let mut outputs = Vec::new();
    for (index, (profile, options)) in cases.iter().enumerate() {
        let mut arguments = vec![*profile, "--to", "k8s"];
        arguments.extend_from_slice(options);
        let (text, stderr) = exported(root, &arguments);
        let file = out.join(format!("{index}.yaml"));
        std::fs::write(&file, &text).unwrap();
        files.push(file);
        outputs.push((text, stderr));
    }
    let mut python = python_validators().unwrap();
    let (ok, said) = kubernetes_validate(&mut python, &files);
    assert!(ok, "{said}");

    // The GPU pod tolerates the taint by default, with the RuntimeClass when asked.
    let pod_spec = |text: &str| -> Value {
        let workload = documents(text)
            .into_iter()
            .find(|document| {
                ["Job", "Pod", "Deployment"]
                    .contains(&document["kind"].as_str().unwrap_or_default())
            })
            .unwrap();
        match workload["kind"].as_str() {
            Some("Pod") => workload["spec"].clone(),
            _ => workload["spec"]["template"]["spec"].clone(),
        }
    };
    let default = pod_spec(&outputs[0].0);
    assert_eq!(
        default["tolerations"],
        serde_json::json!([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])
    );
    assert_eq!(default["hostNetwork"], true);
    assert_eq!(default["dnsPolicy"], "ClusterFirstWithHostNet");
    assert_eq!(
        default["containers"][0]["securityContext"]["capabilities"]["add"],
        serde_json::json!(["IPC_LOCK"])
    );
    assert!(
        default["hostname"].is_null(),
        "a host-network pod has the node's name"
    );
    assert!(outputs[0].1.contains("`devices`"), "{}", outputs[0].1);
    let told = pod_spec(&outputs[1].0);
    assert!(told["tolerations"].is_null(), "{told}");
    assert_eq!(told["runtimeClassName"], "nvidia");
    let mig = pod_spec(&outputs[2].0);
    assert_eq!(
        mig["containers"][0]["resources"]["limits"]["nvidia.com/mig-1g.10gb"],
        "2"
    );
    assert!(mig["containers"][0]["resources"]["limits"]["nvidia.com/gpu"].is_null());
    assert!(
        outputs[2].1.contains("`mixed` MIG strategy"),
        "{}",
        outputs[2].1
    );
    let plain = pod_spec(&outputs[3].0);
    assert_eq!(plain["hostname"], "box-1");
    assert!(plain["tolerations"].is_null(), "no GPU, no toleration");
    assert!(
        outputs[3].1.contains("the Docker network `lab`"),
        "{}",
        outputs[3].1
    );
    // A MIG UUID says which strategy `nvidia.com/gpu` assumes.
    assert!(
        outputs[4].1.contains("`single` MIG strategy"),
        "{}",
        outputs[4].1
    );
    assert_eq!(
        pod_spec(&outputs[5].0)["containers"][0]["resources"]["limits"]["nvidia.com/mig-3g.40gb"],
        "1"
    );
}

#[test]
fn pytorch_job_passes_the_pinned_crd_and_its_templates_the_pod_schema() {
    let Some(mut python) = python_validators() else {
        return;
    };
    let project = project(&[("train", &training_profile())]);
    let root = project.path();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kubeflow");
    let crd = fixtures.join("kubeflow.org_pytorchjobs.yaml");
    let out = root.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let (text, stderr) = exported(root, &["train", "--to", "k8s", "--nodes", "3"]);
    assert!(stderr.contains("`hostname`: not set"), "{stderr}");
    // The named volume's claim must be shared storage for replicas on several nodes.
    assert!(stderr.contains("ReadWriteMany"), "{stderr}");
    let job_file = out.join("job.yaml");
    std::fs::write(&job_file, &text).unwrap();
    let (bare, _) = exported(
        root,
        &[
            "train",
            "--to",
            "k8s",
            "--nodes",
            "2",
            "--no-gpu-toleration",
            "--volumes",
            "pvc",
        ],
    );
    let bare_file = out.join("bare.yaml");
    std::fs::write(&bare_file, &bare).unwrap();

    let mut command = python_validators().unwrap();
    command
        .arg(fixtures.join("validate.py"))
        .arg(&crd)
        .arg(&job_file)
        .arg(&bare_file);
    let output = run_with_timeout(&mut command, TOOL_TIMEOUT).unwrap();
    assert!(
        output.status.success(),
        "the pinned CRD refused it: {output:?}\n{text}"
    );

    let all = documents(&text);
    let job = all.iter().find(|d| d["kind"] == "PyTorchJob").unwrap();
    assert_eq!(job["apiVersion"], "kubeflow.org/v1");
    let specs = &job["spec"]["pytorchReplicaSpecs"];
    assert_eq!(specs["Master"]["replicas"], 1);
    assert_eq!(specs["Worker"]["replicas"], 2);
    assert_eq!(job["spec"]["nprocPerNode"], "2");
    assert_eq!(job["spec"]["runPolicy"]["backoffLimit"], 0);
    // The operator injects its variables into the container named `pytorch` only.
    let template = &specs["Worker"]["template"];
    assert_eq!(template["spec"]["containers"][0]["name"], "pytorch");
    assert_eq!(
        template["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"],
        "2"
    );
    // The other documents, and each replica's template as a PodTemplate, pass the
    // Kubernetes schemas.
    let mut files = Vec::new();
    for (index, document) in all.iter().enumerate() {
        let file = out.join(format!("document-{index}.json"));
        let value = if document["kind"] == "PyTorchJob" {
            continue;
        } else {
            document.clone()
        };
        std::fs::write(&file, value.to_string()).unwrap();
        files.push(file);
    }
    for replica in ["Master", "Worker"] {
        let file = out.join(format!("{replica}.json"));
        let pod_template = serde_json::json!({
            "apiVersion": "v1",
            "kind": "PodTemplate",
            "metadata": {"name": replica.to_lowercase()},
            "template": specs[replica]["template"],
        });
        std::fs::write(&file, pod_template.to_string()).unwrap();
        files.push(file);
    }
    let (ok, said) = kubernetes_validate(&mut python, &files);
    assert!(ok, "{said}");

    // The checks refuse what they should: a misspelled field fails both.
    let broken = text.replace("replicas: 2", "replica: 2");
    let broken_file = out.join("broken.yaml");
    std::fs::write(&broken_file, broken).unwrap();
    let mut command = python_validators().unwrap();
    command
        .arg(fixtures.join("validate.py"))
        .arg(&crd)
        .arg(&broken_file);
    let output = run_with_timeout(&mut command, TOOL_TIMEOUT).unwrap();
    assert!(
        !output.status.success(),
        "the strict CRD check accepted `replica`"
    );
    let mut template = serde_json::json!({
        "apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "x"},
        "template": specs["Master"]["template"],
    });
    template["template"]["spec"]["hostNetwrok"] = Value::Bool(true);
    let broken_template = out.join("broken-template.json");
    std::fs::write(&broken_template, template.to_string()).unwrap();
    let mut python = python_validators().unwrap();
    let (ok, _) = kubernetes_validate(&mut python, &[broken_template]);
    assert!(!ok, "kubernetes-validate --strict accepted `hostNetwrok`");
}

// ---------------------------------------------------------------------------------------
// Compose and devcontainer.json
// ---------------------------------------------------------------------------------------

#[test]
fn compose_and_devcontainer_carry_the_host_access_keys_and_pass_their_validators() {
    let Some((compose_v1, compose_v2)) = crate::validators::require_composes() else {
        return;
    };
    let Some(mut python) = python_validators() else {
        return;
    };
    let project = project(&[
        (
            "train",
            &training_profile().replace("API_TOKEN = \"\"", "X = \"1\""),
        ),
        (
            "named",
            "image = \"busybox\"\nnetwork = \"lab-net\"\ndevices = [\"/dev/fuse:/dev/fuse:rw\"]\n",
        ),
    ]);
    let root = project.path();
    let mut devcontainers = Vec::new();
    for profile in ["train", "named"] {
        let file = root.join(format!("{profile}.compose.yml"));
        exported(
            root,
            &[profile, "--to", "compose", "-o", file.to_str().unwrap()],
        );
        for program in [&compose_v1, &compose_v2] {
            let mut command = Command::new(&program[0]);
            command
                .args(&program[1..])
                .arg("-f")
                .arg(&file)
                .args(["config", "-q"]);
            command.current_dir(root);
            let output = run_with_timeout(&mut command, TOOL_TIMEOUT).unwrap();
            assert!(
                output.status.success() && output.stderr.is_empty(),
                "{program:?} refused {}: {}",
                file.display(),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        let file = root.join(format!("{profile}.devcontainer.json"));
        exported(
            root,
            &[
                profile,
                "--to",
                "devcontainer",
                "-o",
                file.to_str().unwrap(),
            ],
        );
        devcontainers.push(file);
    }
    let compose = std::fs::read_to_string(root.join("train.compose.yml")).unwrap();
    for line in [
        "network_mode: host",
        "hostname: trainer",
        "- /dev/infiniband",
        "- CAP_IPC_LOCK",
    ] {
        assert!(compose.contains(line), "{line} in\n{compose}");
    }
    let named = std::fs::read_to_string(root.join("named.compose.yml")).unwrap();
    assert!(named.contains("external: true"), "{named}");
    assert!(!named.contains("network_mode"), "{named}");

    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/devcontainer");
    python
        .arg(fixtures.join("validate.py"))
        .arg(fixtures.join("devContainer.base.schema.json"))
        .args(&devcontainers);
    let output = run_with_timeout(&mut python, TOOL_TIMEOUT).unwrap();
    assert!(output.status.success(), "{output:?}");
    let devcontainer: Value =
        serde_json::from_str(&std::fs::read_to_string(&devcontainers[0]).unwrap()).unwrap();
    assert_eq!(devcontainer["capAdd"], serde_json::json!(["IPC_LOCK"]));
    let run_args: Vec<&str> = devcontainer["runArgs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for pair in [
        ["--network", "host"],
        ["--device", "/dev/infiniband"],
        ["--hostname", "trainer"],
    ] {
        assert!(
            run_args.windows(2).any(|window| window == pair),
            "{pair:?} in {run_args:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------
// On a real Slurm cluster
// ---------------------------------------------------------------------------------------

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
