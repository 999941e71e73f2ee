//! `envctl export devcontainer`: every bundled profile, and ports, mounts, GPU ids and the
//! command carried over.

use super::*;

#[test]
fn devcontainer_bundled_profiles() {
    for name in bundled_names() {
        let resolved = bundled_profile(name);
        let exported = with_input(
            &resolved,
            Path::new(PROJECT),
            Some(".devcontainer/devcontainer.json"),
            None,
            |input| export::devcontainer(input).unwrap(),
        );
        let document: Value = serde_json::from_str(&exported.text).unwrap();
        assert_eq!(document["hostRequirements"]["gpu"], true, "{name}");
        assert_eq!(
            document["workspaceMount"],
            "type=bind,source=${localWorkspaceFolder},target=/workspace"
        );
        assert_eq!(document["workspaceFolder"], "/workspace");
        assert_eq!(document["containerEnv"]["CUDA_DEVICE_ORDER"], "PCI_BUS_ID");
        assert_eq!(document["init"], true);
        let run_args: Vec<&str> = document["runArgs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|argument| argument.as_str().unwrap())
            .collect();
        assert!(run_args.windows(2).any(|pair| pair == ["--shm-size", "8g"]));
        assert!(run_args.windows(2).any(|pair| pair == ["--ipc", "private"]));
        assert!(
            !run_args.contains(&"--gpus"),
            "hostRequirements.gpu already adds --gpus all"
        );
        assert!(
            exported
                .notices
                .iter()
                .any(|notice| notice.setting == "ulimits")
        );
        insta::assert_snapshot!(format!("devcontainer_{name}"), shown(&exported));
    }
}

#[test]
fn devcontainer_ports_mounts_gpu_ids_and_command() {
    let resolved = profile(EVERYTHING);
    let exported = with_input(
        &resolved,
        Path::new(PROJECT),
        Some(".devcontainer/devcontainer.json"),
        None,
        |input| export::devcontainer(input).unwrap(),
    );
    let document: Value = serde_json::from_str(&exported.text).unwrap();
    assert!(document.get("hostRequirements").is_none());
    assert_eq!(
        document["appPort"],
        serde_json::json!([
            "127.0.0.1:8888:8888/tcp",
            "0.0.0.0:2222:22/tcp",
            "[::1]:9000-9001:9000-9001/udp",
            "127.0.0.1::6006/tcp"
        ])
    );
    // Issue 14, item 5: `forwardPorts` would forward the same ports again and collide
    // with the host ports `appPort` holds.
    assert!(document.get("forwardPorts").is_none(), "{document}");
    assert_eq!(
        document["mounts"],
        serde_json::json!([
            "type=bind,source=${localWorkspaceFolder}/data,target=/data,readonly",
            "type=bind,source=${localWorkspaceFolder}/../shared,target=/shared",
            "type=bind,source=${localEnv:HOME}/cache,target=/cache",
            "type=bind,source=/srv/models,target=/models,readonly",
            "type=volume,source=datasets,target=/datasets"
        ])
    );
    assert_eq!(document["containerUser"], "1000:1000");
    let run_args: Vec<&str> = document["runArgs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|argument| argument.as_str().unwrap())
        .collect();
    assert!(
        run_args
            .windows(2)
            .any(|pair| pair == ["--gpus", "\"device=0,1\""])
    );
    assert!(run_args.windows(2).any(|pair| pair == ["--cpus", "1.5"]));
    assert!(run_args.windows(2).any(|pair| pair == ["--memory", "16g"]));
    let settings: Vec<&str> = exported
        .notices
        .iter()
        .map(|notice| notice.setting.as_str())
        .collect();
    for expected in ["gpus", "ulimits", "command"] {
        assert!(
            settings.contains(&expected),
            "no `{expected}` notice: {settings:?}"
        );
    }
    let optional = profile("image = \"busybox\"\ngpus = \"optional\"\n");
    let exported = with_input(&optional, Path::new(PROJECT), None, None, |input| {
        export::devcontainer(input).unwrap()
    });
    let document: Value = serde_json::from_str(&exported.text).unwrap();
    assert_eq!(document["hostRequirements"]["gpu"], "optional");
}
