//! `envctl export compose`: host IPs, relative paths, GPUs and dollars kept, counts and all GPUs
//! explicit, and `docker compose config` accepting every bundled profile and reading the
//! everything-profile as meant.

use super::*;

/// `docker-compose` (v1) or `docker compose` (v2), whichever answers.
fn compose_program() -> Option<Vec<String>> {
    let answers = |program: &str, arguments: &[&str]| {
        let mut command = Command::new(program);
        command.args(arguments);
        run_with_timeout(&mut command, Duration::from_secs(30))
            .is_ok_and(|output| output.status.success())
    };
    if answers("docker-compose", &["version"]) {
        Some(vec!["docker-compose".into()])
    } else if answers("docker", &["compose", "version"]) {
        Some(vec!["docker".into(), "compose".into()])
    } else {
        None
    }
}

/// The compose program, or `None` after printing a skip (a panic with
/// `ENVCTL_REQUIRE_DOCKER=1`).
fn require_compose() -> Option<Vec<String>> {
    let program = compose_program();
    if program.is_none() {
        skip_or_panic(
            "no docker-compose",
            &crate::support::docker::current_test_name(),
            "neither `docker-compose` nor `docker compose` runs: `sudo apt-get install docker-compose`",
        );
    }
    program
}

#[test]
fn compose_keeps_host_ips_relative_paths_gpus_and_dollars() {
    let resolved = profile(EVERYTHING);
    let exported = with_input(
        &resolved,
        Path::new(PROJECT),
        Some("deploy/compose.yml"),
        None,
        |input| export::compose(input).unwrap(),
    );
    let document = yaml_to_json(&yaml_documents(&exported.text)[0]);
    let service = &document["services"]["everything"];
    assert_eq!(
        service["ports"],
        serde_json::json!([
            "127.0.0.1:8888:8888/tcp",
            "0.0.0.0:2222:22/tcp",
            "[::1]:9000-9001:9000-9001/udp",
            "127.0.0.1::6006/tcp"
        ])
    );
    let sources: Vec<&str> = service["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|volume| volume["source"].as_str().unwrap())
        .collect();
    // Relative to deploy/, where compose reads them from.
    assert_eq!(
        sources,
        [
            "..",
            "../data",
            "../../shared",
            "~/cache",
            "/srv/models",
            "datasets"
        ]
    );
    assert_eq!(document["volumes"]["datasets"]["name"], "datasets");
    let devices = &service["deploy"]["resources"]["reservations"]["devices"][0];
    assert_eq!(devices["device_ids"], serde_json::json!(["0", "1"]));
    // Compose v2 refuses `count` next to `device_ids` (issue 14, item 1).
    assert!(devices.get("count").is_none(), "{devices}");
    assert_eq!(devices["capabilities"], serde_json::json!(["gpu"]));
    assert_eq!(service["environment"]["FLAG"], "on");
    assert_eq!(service["environment"]["PRICE"], "$$5 $$(X)");
    assert_eq!(service["environment"]["CUDA_DEVICE_ORDER"], "PCI_BUS_ID");
    assert_eq!(service["command"][3], "$$HOME/runs");
    assert_eq!(service["cpus"], 1.5);
    assert_eq!(service["mem_limit"], "16g");
    assert_eq!(service["shm_size"], "2g");
    assert_eq!(service["ulimits"]["nofile"]["hard"], 2048);
    assert_eq!(service["labels"]["envctl.profile"], "everything");
    // `up`'s network and restart policy; binds through the Mount API (no missing source
    // made), named volumes without it.
    assert_eq!(service["network_mode"], "bridge");
    assert_eq!(service["restart"], "no");
    for volume in service["volumes"].as_array().unwrap() {
        match volume["type"].as_str().unwrap() {
            "bind" => assert_eq!(volume["bind"]["propagation"], "rprivate", "{volume}"),
            _ => assert!(volume.get("bind").is_none(), "{volume}"),
        }
    }
    // Compose (v1 and v2) expresses all of it: no notice (tests/it/compose_runs.rs starts a
    // GPU list on both).
    assert!(exported.notices.is_empty(), "{:?}", exported.notices);
    insta::assert_snapshot!("compose_everything", shown(&exported));
}

#[test]
fn compose_count_and_all_gpus_are_explicit() {
    for (gpus, count) in [
        ("2", serde_json::json!(2)),
        ("\"all\"", serde_json::json!("all")),
    ] {
        let resolved = profile(&format!("image = \"busybox\"\ngpus = {gpus}\n"));
        let exported = with_input(&resolved, Path::new(PROJECT), None, None, |input| {
            export::compose(input).unwrap()
        });
        let document = yaml_to_json(&yaml_documents(&exported.text)[0]);
        let devices = &document["services"]["export-test"]["deploy"]["resources"]["reservations"]["devices"]
            [0];
        assert_eq!(devices["count"], count, "{gpus}");
        assert!(devices.get("device_ids").is_none());
        // The GPU defaults of `up`: 8 GiB of /dev/shm and the PCI bus order.
        assert_eq!(document["services"]["export-test"]["shm_size"], "8g");
    }
    let optional = profile("image = \"busybox\"\ngpus = \"optional\"\n");
    let exported = with_input(&optional, Path::new(PROJECT), None, None, |input| {
        export::compose(input).unwrap()
    });
    assert!(exported.text.contains("count: all"));
    assert_eq!(exported.notices.len(), 1);
    assert!(exported.notices[0].message.contains("GPU if available"));
}

/// `docker-compose config` (the compose CLI's own validation) accepts the export of every
/// bundled profile, and reads back the GPU reservation, shm and mounts.
#[test]
fn compose_config_accepts_every_bundled_profile() {
    let Some(program) = require_compose() else {
        return;
    };
    let project = Project::new();
    for name in bundled_names() {
        let resolved = bundled_profile(name);
        let file = format!("{name}/compose.yml");
        let exported = with_input(&resolved, project.path(), Some(&file), None, |input| {
            export::compose(input).unwrap()
        });
        project.write(&file, &exported.text);
        let config = compose(&program, project.path(), &["-f", &file, "config"]);
        let document = yaml_to_json(&yaml_documents(&config)[0]);
        let service = &document["services"][name];
        assert_eq!(service["shm_size"], "8g", "{name}: {config}");
        let device = &service["deploy"]["resources"]["reservations"]["devices"][0];
        assert_eq!(device["count"], "all", "{name}: {config}");
        assert_eq!(device["capabilities"], serde_json::json!(["gpu"]), "{name}");
        // `./` of the profile is the project folder, seen from `<name>/compose.yml`.
        let volume = &service["volumes"][0];
        assert_eq!(
            volume["source"].as_str().unwrap(),
            project.path().to_str().unwrap(),
            "{name}: {config}"
        );
    }
}

/// compose's YAML 1.1 parser reads what the export meant: `on` stays a string, `$$` is a
/// literal `$`, and relative paths land where `up` puts them.
#[test]
fn compose_config_reads_the_everything_profile_as_meant() {
    let Some(program) = require_compose() else {
        return;
    };
    let project = Project::new();
    let resolved = profile(EVERYTHING);
    let exported = with_input(
        &resolved,
        project.path(),
        Some("deploy/compose.yml"),
        None,
        |input| export::compose(input).unwrap(),
    );
    project.write("deploy/compose.yml", &exported.text);
    let config = compose(
        &program,
        project.path(),
        &["-f", "deploy/compose.yml", "config"],
    );
    let document = yaml_to_json(&yaml_documents(&config)[0]);
    let service = &document["services"]["everything"];
    let environment = &service["environment"];
    assert_eq!(environment["FLAG"], "on", "{config}");
    assert_eq!(environment["TIME"], "12:30", "{config}");
    let sources: Vec<String> = service["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|volume| volume["source"].as_str().unwrap().to_string())
        .collect();
    let root = project.path().to_str().unwrap();
    assert!(sources.contains(&format!("{root}/data")), "{config}");
    assert!(sources.contains(&root.to_string()), "{config}");
}

// `docker compose up` of the export against `envctl up`, field by field: tests/it/compose_runs.rs.
