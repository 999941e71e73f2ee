//! The dry run's body is the body `up` sends, for every form of `gpus`.

use super::*;

/// `up --dry-run --json` shows the body `up` then sends, for each GPU form each engine
/// here can take: the GPU request decided once (`gpus = "optional"` by NVML *and* the
/// daemon), placed and written in the engine's form by the same code. Docker without an
/// NVIDIA runtime: `optional` on a host whose NVML sees eight GPUs runs without them, in
/// the dry run as in `up`. Podman 4.3 (drops GPU requests): a count is refused by both,
/// `optional` runs without. Podman 5.4 (CDI, a spec naming the GPUs by UUID): a count
/// pinned to the same GPUs, a named GPU and `optional` (every GPU) are what the container
/// was given.
#[test]
fn the_dry_run_body_is_the_body_up_sends_for_every_gpu_form() {
    let Some(engines) = engines() else {
        return;
    };
    let _turn = turn();
    let machine = Machine::new("");
    let nodes = tempfile::tempdir().unwrap();
    let Some(_spec) = CdiSpec::write(&machine, nodes.path()) else {
        panic!(
            "{CDI_DIR_ENV} is not set: Podman 5.4's CDI spec folder is needed (.ci/podman.sh exports it)"
        );
    };
    let named = format!("gpus = [\"{}\"]\n", machine.uuids[5]);
    for engine in &engines {
        let forms: Vec<(&str, &str)> = match (engine.family, engine.version_pair() >= (5, 4)) {
            (Family::Docker, _) => vec![("optional", "gpus = \"optional\"\n")],
            (Family::Podman, false) => vec![
                ("optional", "gpus = \"optional\"\n"),
                ("count", "gpus = 2\n"),
            ],
            (Family::Podman, true) => vec![
                ("optional", "gpus = \"optional\"\n"),
                ("count", "gpus = 2\n"),
                ("named", named.as_str()),
            ],
        };
        let image = engine.test_image();
        let names: Vec<String> = forms.iter().map(|_| unique_name("plan")).collect();
        // Podman 4.3 raises `nofile` past what this sandbox allows (no CAP_SYS_RESOURCE).
        let texts: Vec<String> = forms
            .iter()
            .map(|(_, rest)| format!("{rest}[ulimits]\nnofile = 1024\nnproc = 1024\n"))
            .collect();
        let profiles: Vec<(&str, &str)> = names
            .iter()
            .zip(&texts)
            .map(|(name, rest)| (name.as_str(), rest.as_str()))
            .collect();
        let folder = project(&image, &profiles);
        for (name, (form, _)) in names.iter().zip(&forms) {
            let container = format!("envctl-{name}");
            let _guard = engine.container_guard(container.clone());
            let mine = |other: &str| other == container;
            let (dry_run, up) = quietly(&engine.host, &mine, || {
                engine.docker(["rm", "-f", container.as_str()]);
                // --force: doctor's checks (no NVIDIA driver here) would refuse first.
                let dry_run = envctl(
                    folder.path(),
                    &machine,
                    &engine.host,
                    &["up", name, "--dry-run", "--force", "--json"],
                );
                let up = envctl(
                    folder.path(),
                    &machine,
                    &engine.host,
                    &["up", name, "--force", "--json"],
                );
                (dry_run, up)
            });
            let said = format!("[{} {form}]\ndry run:\n{dry_run}\nup:\n{up}", engine.name);
            assert_eq!(dry_run.code, up.code, "the dry run and up disagree: {said}");
            if up.code != 0 {
                assert_eq!(
                    (engine.family, *form),
                    (Family::Podman, "count"),
                    "only a count on Podman 4.3 is refused: {said}"
                );
                continue;
            }
            let planned = dry_run.json()["body"].clone();
            let inspected = engine.inspect("container", &container);
            let (config, host) = (&inspected["Config"], &inspected["HostConfig"]);
            assert_eq!(
                config["Labels"]["envctl.gpus"], planned["Labels"]["envctl.gpus"],
                "the GPUs held: {said}"
            );
            // Unset is the engine's default (Docker writes its 64 MiB).
            if !planned["HostConfig"]["ShmSize"].is_null() {
                assert_eq!(host["ShmSize"], planned["HostConfig"]["ShmSize"], "{said}");
            }
            let env = config["Env"].to_string();
            for entry in planned["Env"].as_array().into_iter().flatten() {
                assert!(env.contains(entry.as_str().unwrap()), "{entry}: {said}");
            }
            let requested = &planned["HostConfig"]["DeviceRequests"];
            let gives_gpus = !(*form == "optional" && engine.version_pair() < (5, 4))
                && engine.family == Family::Podman;
            if !gives_gpus {
                // No GPUs in either: the dry run shows none, and the container has none.
                assert!(
                    requested.as_array().is_none_or(Vec::is_empty),
                    "the dry run asks for GPUs up does not give: {said}"
                );
                assert!(
                    host["DeviceRequests"].as_array().is_none_or(Vec::is_empty),
                    "{said}"
                );
                continue;
            }
            // Podman resolved the CDI names the dry run showed into exactly these GPUs.
            let names: Vec<&str> = requested[0]["DeviceIDs"]
                .as_array()
                .unwrap_or_else(|| panic!("no CDI names: {said}"))
                .iter()
                .map(|name| name.as_str().unwrap())
                .collect();
            let given: Vec<usize> = (0..8)
                .filter(|index| env.contains(&format!("ENVCTL_TEST_GPU_{index}=")))
                .collect();
            let shown: Vec<usize> = if names == ["nvidia.com/gpu=all"] {
                (0..8).collect()
            } else {
                names
                    .iter()
                    .map(|name| {
                        let uuid = name.trim_start_matches("nvidia.com/gpu=");
                        machine
                            .uuids
                            .iter()
                            .position(|known| known == uuid)
                            .unwrap()
                    })
                    .collect()
            };
            assert_eq!(given, shown, "{said}");
        }
    }
}
