//! `envctl export k8s`: bundled profiles carry GPUs, shared memory and mounts; resources, ids,
//! services, claims and the lock; one claim per mount for long names and look-alike volumes;
//! shared memory within the memory limit; port-forward offered for TCP only.

use super::*;

/// Every YAML document of a multi-document file.
/// The `kind` of each document, in order.
fn kinds_of(documents: &[serde_norway::Value]) -> Vec<&str> {
    documents
        .iter()
        .map(|document| document["kind"].as_str().unwrap())
        .collect()
}

/// `document` as JSON, after checking it is a `kind` object of the API group the cluster
/// serves it under. The shape against the API's schemas is `kubernetes-validate --strict`'s
/// to check (tests/it/validators.rs).
fn object(document: &serde_norway::Value, kind: &str) -> Value {
    let api_version = match kind {
        "Pod" | "Service" | "PersistentVolumeClaim" => "v1",
        "Job" => "batch/v1",
        "Deployment" => "apps/v1",
        other => panic!("not an object the export writes: {other}"),
    };
    let json = yaml_to_json(document);
    assert_eq!(
        (json["apiVersion"].as_str(), json["kind"].as_str()),
        (Some(api_version), Some(kind)),
        "{json:#}"
    );
    assert!(json["metadata"]["name"].is_string(), "{json:#}");
    json
}

/// The pod spec of any workload document.
fn pod_spec(document: &serde_norway::Value) -> Value {
    let kind = document["kind"].as_str().unwrap().to_string();
    let json = object(document, &kind);
    let spec = match kind.as_str() {
        "Job" | "Deployment" => &json["spec"]["template"]["spec"],
        _ => &json["spec"],
    };
    assert!(spec["containers"].is_array(), "{json:#}");
    spec.clone()
}

#[test]
fn kubernetes_bundled_profiles_carry_gpu_shm_and_mounts() {
    for name in bundled_names() {
        let resolved = bundled_profile(name);
        for kind in [
            WorkloadKind::Job,
            WorkloadKind::Pod,
            WorkloadKind::Deployment,
        ] {
            let options = KubernetesOptions {
                kind,
                ..KubernetesOptions::default()
            };
            let exported = with_input(&resolved, Path::new(PROJECT), None, None, |input| {
                export::kubernetes(input, options.clone()).unwrap()
            });
            let documents = yaml_documents(&exported.text);
            assert_eq!(documents.len(), 1, "{name} {kind:?}");
            let spec = pod_spec(&documents[0]);
            let container = &spec["containers"][0];
            let limits = &container["resources"]["limits"];
            assert_eq!(limits["nvidia.com/gpu"], "1", "{name}");
            let volumes = &spec["volumes"];
            let empty_dir = &named(volumes, "name", "shm")["emptyDir"];
            assert_eq!(empty_dir["medium"], "Memory");
            assert_eq!(empty_dir["sizeLimit"], "8Gi");
            named(&container["volumeMounts"], "mountPath", "/dev/shm");
            let workspace = named(volumes, "name", "workspace");
            assert_eq!(workspace["hostPath"]["path"], PROJECT);
            assert_eq!(container["args"], serde_json::json!(["sleep", "infinity"]));
            named(&container["env"], "name", "CUDA_DEVICE_ORDER");
            assert!(
                exported
                    .notices
                    .iter()
                    .any(|notice| notice.setting == "ulimits"),
                "{name}: ulimits must be reported"
            );
            if kind == WorkloadKind::Job {
                insta::assert_snapshot!(format!("k8s_{name}"), shown(&exported));
            }
        }
    }
}

#[test]
fn kubernetes_resources_ids_service_claims_and_lock() {
    let resolved = profile(EVERYTHING);
    let lock = format!(
        "version = 1\n\n[[image]]\nprofile = \"everything\"\nimage = \"registry.example.com:5000/team/train:1.0\"\ndigest = \"{DIGEST}\"\ndate = \"2026-11-29\"\nplatform = \"linux/amd64\"\n"
    );
    let options = KubernetesOptions {
        kind: WorkloadKind::Deployment,
        volumes: VolumeMode::Pvc,
        service: true,
        ..KubernetesOptions::default()
    };
    let exported = with_input(&resolved, Path::new(PROJECT), None, Some(&lock), |input| {
        export::kubernetes(input, options.clone()).unwrap()
    });
    let documents = yaml_documents(&exported.text);
    let kinds = kinds_of(&documents);
    assert_eq!(
        kinds,
        [
            "PersistentVolumeClaim",
            "PersistentVolumeClaim",
            "PersistentVolumeClaim",
            "PersistentVolumeClaim",
            "PersistentVolumeClaim",
            "PersistentVolumeClaim",
            "Deployment",
            "Service"
        ]
    );
    for claim in &documents[..6] {
        object(claim, "PersistentVolumeClaim");
    }
    let service = object(&documents[7], "Service");
    let ports: Vec<(i64, &str)> = service["spec"]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|port| {
            (
                port["port"].as_i64().unwrap(),
                port["protocol"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        ports,
        [
            (8888, "TCP"),
            (2222, "TCP"),
            (9000, "UDP"),
            (9001, "UDP"),
            (6006, "TCP")
        ]
    );
    let spec = pod_spec(&documents[6]);
    let container = &spec["containers"][0];
    assert_eq!(
        container["image"],
        format!("registry.example.com:5000/team/train:1.0@{DIGEST}")
    );
    let limits = &container["resources"]["limits"];
    let requests = &container["resources"]["requests"];
    assert_eq!(limits["nvidia.com/gpu"], "2");
    assert_eq!(limits["memory"], "16Gi");
    assert_eq!(requests["memory"], "16Gi");
    assert_eq!(limits["cpu"], "1500m");
    assert_eq!(requests["cpu"], "1500m");
    assert!(requests.get("nvidia.com/gpu").is_none(), "{requests}");
    let security = &container["securityContext"];
    assert_eq!(
        (&security["runAsUser"], &security["runAsGroup"]),
        (&serde_json::json!(1000), &serde_json::json!(1000))
    );
    assert_eq!(spec["restartPolicy"], "Always");
    // `$(X)` would be expanded by the kubelet; `$$(` keeps it.
    let price = named(&container["env"], "name", "PRICE");
    assert_eq!(price["value"], "$5 $$(X)");
    let settings: Vec<&str> = exported
        .notices
        .iter()
        .map(|notice| notice.setting.as_str())
        .collect();
    for expected in ["gpus", "mounts", "ports", "ipc", "ulimits", "restart"] {
        assert!(
            settings.contains(&expected),
            "no `{expected}` notice: {settings:?}"
        );
    }
    let gpus = exported
        .notices
        .iter()
        .find(|notice| notice.setting == "gpus")
        .unwrap();
    assert!(gpus.message.contains("by id (0, 1)"), "{}", gpus.message);
    insta::assert_snapshot!("k8s_everything_deployment_pvc_service", shown(&exported));
}

#[test]
fn kubernetes_stale_lock_keeps_the_tag_and_says_so() {
    let resolved = profile("image = \"busybox:1.37\"\n");
    let lock = format!(
        "version = 1\n[[image]]\nprofile = \"export-test\"\nimage = \"busybox:1.36\"\ndigest = \"{DIGEST}\"\ndate = \"2026-11-29\"\nplatform = \"linux/amd64\"\n"
    );
    let exported = with_input(&resolved, Path::new(PROJECT), None, Some(&lock), |input| {
        export::kubernetes(input, KubernetesOptions::default()).unwrap()
    });
    let spec = pod_spec(&yaml_documents(&exported.text)[0]);
    assert_eq!(spec["containers"][0]["image"], "busybox:1.37");
    // The command adds this reason to the export's notices (`setting` "image").
    let notice = environment(&resolved, Path::new(PROJECT), Some(&lock))
        .lock_notice
        .unwrap();
    assert!(notice.contains("busybox:1.36"), "{notice}");
}

/// A 59-character profile name, so `envctl-NAME-data-train` and `envctl-NAME-data-valid`
/// share their first 63 characters, and named volumes that read the same as Kubernetes
/// names (`my_cache`, `my.cache`), one of them mounted twice.
fn lookalike_mounts_profile() -> String {
    format!(
        "name = \"{}\"\nimage = \"busybox:1.37\"\nmounts = [\"/data/train:/data/train\", \"/data/valid:/data/valid:ro\", \"my_cache:/cache/a\", \"my.cache:/cache/b\", \"my_cache:/cache/c\"]\n",
        LONG_PROFILE_NAME
    )
}

const LONG_PROFILE_NAME: &str = "a-profile-name-of-fifty-nine-characters-for-long-pvc-names9";

/// Whether `name` is a DNS-1123 label, as Kubernetes demands of object and volume names.
fn is_dns_label(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

#[test]
fn kubernetes_claims_are_one_per_mount_for_long_names_and_lookalike_volumes() {
    assert_eq!(LONG_PROFILE_NAME.len(), 59);
    let resolved = profile(&lookalike_mounts_profile());
    let options = KubernetesOptions {
        volumes: VolumeMode::Pvc,
        ..KubernetesOptions::default()
    };
    let exported = with_input(&resolved, Path::new(PROJECT), None, None, |input| {
        export::kubernetes(input, options.clone()).unwrap()
    });
    let documents = yaml_documents(&exported.text);
    let kinds = kinds_of(&documents);
    // One claim per bind mount and per named volume: `my_cache` is mounted twice.
    assert_eq!(
        kinds,
        [
            "PersistentVolumeClaim",
            "PersistentVolumeClaim",
            "PersistentVolumeClaim",
            "PersistentVolumeClaim",
            "Job"
        ]
    );
    let claims: Vec<String> = documents[..4]
        .iter()
        .map(|document| {
            object(document, "PersistentVolumeClaim")["metadata"]["name"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let distinct: std::collections::BTreeSet<&String> = claims.iter().collect();
    assert_eq!(distinct.len(), claims.len(), "duplicate claims: {claims:?}");
    for claim in &claims {
        assert!(is_dns_label(claim), "not a DNS-1123 label: {claim}");
    }

    let spec = pod_spec(&documents[4]);
    let job = object(&documents[4], "Job");
    let job_name = job["metadata"]["name"].as_str().unwrap().to_string();
    assert!(is_dns_label(&job_name), "{job_name}");
    let volumes = spec["volumes"].as_array().unwrap();
    let volume_names: std::collections::BTreeSet<&str> = volumes
        .iter()
        .map(|volume| volume["name"].as_str().unwrap())
        .collect();
    assert_eq!(volume_names.len(), volumes.len(), "{volume_names:?}");
    // mount path → the claim its volume names.
    let claim_of = |path: &str| -> String {
        let mount = named(&spec["containers"][0]["volumeMounts"], "mountPath", path);
        let volume = named(&spec["volumes"], "name", mount["name"].as_str().unwrap());
        let claim = volume["persistentVolumeClaim"]["claimName"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(claims.contains(&claim), "{claim} is not among {claims:?}");
        claim
    };
    let train = claim_of("/data/train");
    let valid = claim_of("/data/valid");
    let underscore = claim_of("/cache/a");
    let dot = claim_of("/cache/b");
    assert_ne!(train, valid, "two bind mounts share a claim");
    assert_ne!(underscore, dot, "`my_cache` and `my.cache` share a claim");
    assert_eq!(
        claim_of("/cache/c"),
        underscore,
        "one named volume, one claim"
    );
    assert_eq!(underscore, "my-cache");

    // Every renamed claim is reported, with the mount it belongs to.
    let notice = |setting: &str| {
        exported
            .notices
            .iter()
            .find(|notice| notice.setting == setting)
            .unwrap_or_else(|| panic!("no `{setting}` notice: {:#?}", exported.notices))
            .message
            .clone()
    };
    for (setting, claim) in [
        ("mounts./data/train", &train),
        ("mounts./data/valid", &valid),
    ] {
        let message = notice(setting);
        assert!(message.contains(&format!("named `{claim}`")), "{message}");
        assert!(
            message.contains("longer than the 63 characters"),
            "{message}"
        );
    }
    let message = notice("mounts./cache/b");
    assert!(
        message.contains("`my-cache` is the name of the named volume `my_cache`"),
        "{message}"
    );
    assert!(notice("name").contains(&format!("named `{job_name}`")));
    assert!(
        !exported.notices.iter().any(
            |notice| notice.setting == "mounts./cache/a" || notice.setting == "mounts./cache/c"
        ),
        "{:#?}",
        exported.notices
    );
    insta::assert_snapshot!("k8s_long_name_lookalike_volumes_pvc", shown(&exported));

    // The binary reports the renames as warnings.
    let project = Project::new();
    project.write(
        &format!("envctl/{LONG_PROFILE_NAME}.toml"),
        &lookalike_mounts_profile(),
    );
    let run = project
        .envctl(&[
            "export",
            LONG_PROFILE_NAME,
            "--to",
            "k8s",
            "--volumes",
            "pvc",
        ])
        .expect(0, "export with long and lookalike names");
    assert!(
        run.stdout.contains(&format!("claimName: {train}")),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(&format!("claimName: {valid}")),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr.contains("k8s: `mounts./cache/b`: the PersistentVolumeClaim for the named volume `my.cache` is named"),
        "{}",
        run.stderr
    );
}

/// Issue 14, item 4: a memory `emptyDir` counts against the container's memory limit, so
/// `/dev/shm` is never sized above it (48 exports had `sizeLimit: 8Gi` over 4Gi or 1Gi),
/// and a notice says so; under the limit it is kept as the profile asks.
#[test]
fn kubernetes_shm_stays_within_the_memory_limit() {
    for (memory, shm, expected, notice) in [
        ("4g", "8g", "4Gi", true),
        ("1g", "8g", "1Gi", true),
        ("16g", "8g", "8Gi", false),
    ] {
        let resolved = profile(&format!(
            "image = \"busybox:1.37\"\nmemory = \"{memory}\"\nshm_size = \"{shm}\"\n"
        ));
        let exported = with_input(&resolved, Path::new(PROJECT), None, None, |input| {
            export::kubernetes(input, KubernetesOptions::default()).unwrap()
        });
        let spec = pod_spec(&yaml_documents(&exported.text)[0]);
        let size = &named(&spec["volumes"], "name", "shm")["emptyDir"]["sizeLimit"];
        assert_eq!(size, expected, "memory {memory}, shm {shm}");
        let said = exported
            .notices
            .iter()
            .any(|each| each.setting == "shm_size" && each.message.contains("counts against"));
        assert_eq!(said, notice, "memory {memory}: {:?}", exported.notices);
    }
}

/// Issue 14, item 5: `kubectl port-forward` carries TCP only: the notice never offers it
/// for UDP or SCTP ports, and says how those are reached.
#[test]
fn kubernetes_port_forward_is_offered_for_tcp_only() {
    let notice_for = |ports: &str| {
        let resolved = profile(&format!("image = \"busybox:1.37\"\nports = [{ports}]\n"));
        let exported = with_input(&resolved, Path::new(PROJECT), None, None, |input| {
            export::kubernetes(input, KubernetesOptions::default()).unwrap()
        });
        exported
            .notices
            .iter()
            .find(|notice| notice.setting == "ports")
            .map(|notice| notice.message.clone())
            .unwrap_or_else(|| panic!("no ports notice: {:?}", exported.notices))
    };
    let udp = notice_for("\"9000:9000/udp\"");
    assert!(
        !udp.contains("reach them with `kubectl port-forward"),
        "{udp}"
    );
    assert!(udp.contains("carries TCP only, so 9000/udp"), "{udp}");
    let mixed = notice_for("\"8888:8888\", \"9000:9000/udp\"");
    assert!(mixed.contains("kubectl port-forward"), "{mixed}");
    assert!(mixed.contains("9000/udp"), "{mixed}");
    let tcp = notice_for("\"8888:8888\"");
    assert!(!tcp.contains("TCP only"), "{tcp}");
}
