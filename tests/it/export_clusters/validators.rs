//! Exports judged by the real tools: GPU pods scheduled on real clusters and strict schemas,
//! the PyTorchJob against its pinned CRD, and compose and devcontainer files through their
//! validators with the host access keys.

use super::*;

const KUBERNETES_VERSION: &str = "1.33.0";

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
