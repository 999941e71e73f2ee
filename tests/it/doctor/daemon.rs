//! The Docker daemon side: a real daemon's facts without an NVIDIA runtime, a missing socket
//! failing fast, a daemon that never answers named after the ping timeout, and CPUs and memory
//! beyond the daemon's host failing with its figures.

use super::*;

#[test]
fn real_daemon_facts_and_no_nvidia_runtime() {
    if !crate::support::docker::require_daemon() {
        return;
    }
    let version = crate::support::docker::daemon_status()
        .as_ref()
        .unwrap()
        .clone();
    let scenario = Scenario::new(Nvml::Stub("healthy-8x-h100.conf"));
    let (report, _) = scenario.doctor_json(&["pytorch-2.8"]);
    let engine = &report["host"]["engine"];
    assert_eq!(engine["status"], "reachable", "{engine:#}");
    assert_eq!(engine["server_version"], version.as_str(), "{engine:#}");
    assert!(
        engine["api_version"]
            .as_str()
            .is_some_and(|api| !api.is_empty())
    );
    assert!(
        engine["runtimes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|runtime| runtime.as_str().is_some_and(|name| name.contains("runc"))),
        "{engine:#}"
    );
    let endpoint = engine["endpoint"].as_str().unwrap();
    match std::env::var("DOCKER_HOST") {
        Ok(host) if !host.is_empty() => assert_eq!(endpoint, host),
        _ => assert_eq!(endpoint, "unix:///var/run/docker.sock"),
    }
    let reachable = finding(&report["findings"], "docker.reachable");
    assert_eq!(reachable["status"], "pass");
    assert!(
        message(reachable).starts_with(&format!("Docker {version} at {endpoint} (API ")),
        "{}",
        message(reachable)
    );
    assert_eq!(
        finding(&report["findings"], "docker.cgroup")["status"],
        "info"
    );
    let gpu_support = finding(&report["findings"], "docker.gpu-support");
    let registered = engine["runtimes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|runtime| runtime == "nvidia");
    if registered {
        assert_eq!(gpu_support["status"], "pass", "{gpu_support:#}");
    } else {
        assert_ne!(
            gpu_support["facts"]["gpu_support"]["via"], "runtime",
            "no `nvidia` runtime is registered: {gpu_support:#}"
        );
    }
    assert_gpu_runtime_verdict(&report, profile(&report, "pytorch-2.8"));
}

#[test]
fn missing_docker_socket_fails_fast() {
    let scenario = Scenario::new(Nvml::Stub("healthy-8x-h100.conf"));
    let socket = scenario.path().join("docker.sock");
    let scenario = scenario.docker_host(format!("unix://{}", socket.display()));
    let output = scenario.run(&["doctor", "--json", "pytorch-2.8"]);
    assert!(
        output.elapsed < Duration::from_secs(3),
        "a missing socket is known at once, took {:?}",
        output.elapsed
    );
    assert_eq!(output.code, 1, "{}", output.stderr);
    let report = output.json();
    assert_report_shape(&report);
    assert_eq!(report["host"]["engine"]["status"], "unreachable");
    let reachable = finding(&report["findings"], "docker.reachable");
    assert_eq!(reachable["status"], "fail");
    assert!(
        message(reachable).contains(socket.to_str().unwrap()),
        "the message names the socket: {}",
        message(reachable)
    );
    assert_eq!(reachable["facts"]["cause"], "socket_missing");
    assert!(
        hint(reachable).contains("DOCKER_HOST"),
        "{}",
        hint(reachable)
    );
    let pytorch = profile(&report, "pytorch-2.8");
    let daemon = finding(&pytorch["findings"], "profile.daemon");
    assert_eq!(daemon["status"], "fail");
    assert!(
        message(daemon).contains("nothing can start"),
        "{}",
        message(daemon)
    );
    // Issue 31: the fix is said once (under Docker), and names DOCKER_HOST as set.
    assert!(daemon["hint"].is_null(), "{daemon:#}");
    assert!(
        message(reachable).contains(&format!("(DOCKER_HOST=unix://{})", socket.display())),
        "{}",
        message(reachable)
    );
    assert_eq!(pytorch["verdict"], "fail");
    // The GPUs are still judged: the daemon being away changes nothing about them.
    assert!(
        gpu_rows(pytorch)
            .iter()
            .all(|(_, _, _, verdict)| verdict == "ok")
    );

    let human = scenario.run(&["doctor", "pytorch-2.8"]);
    assert_eq!(human.code, 1);
    assert!(
        human
            .stdout
            .contains("✗ Docker\n  ✗ the engine is not reachable"),
        "{}",
        human.stdout
    );
}

#[test]
fn a_daemon_that_never_answers_is_named_after_the_ping_timeout() {
    let scenario = Scenario::new(Nvml::Stub("healthy-8x-h100.conf"));
    let socket = scenario.path().join("hung.sock");
    // Listening but never accepting: connections queue and no answer ever comes.
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let scenario = scenario.docker_host(format!("unix://{}", socket.display()));
    let (report, code) = scenario.doctor_json(&[]);
    let reachable = finding(&report["findings"], "docker.reachable");
    assert_eq!(reachable["status"], "fail");
    assert_eq!(reachable["facts"]["cause"], "timeout", "{reachable:#}");
    assert!(
        message(reachable).contains("did not answer within 3 s"),
        "{}",
        message(reachable)
    );
    assert_eq!(code, 1);
}

/// Issue 15, item 5: more CPUs or memory than the daemon's host has is a doctor failure with
/// the host's figure and a fix (before, doctor passed and `up` met the daemon's bare 400).
#[test]
fn cpus_and_memory_beyond_the_daemons_host_fail_with_its_figures() {
    if !crate::support::docker::require_daemon() {
        return;
    }
    let host_cpus = crate::support::docker::docker_stdout(["info", "--format", "{{.NCPU}}"]);
    let scenario = Scenario::new(Nvml::System);
    scenario.write(
        "envctl/huge.toml",
        "image = \"busybox:1\"\ncpus = 4096\nmemory = \"64t\"\n",
    );
    scenario.write(
        "envctl/fits.toml",
        "image = \"busybox:1\"\ncpus = 1\nmemory = \"64m\"\n",
    );
    let (report, code) = scenario.doctor_json(&["huge", "fits"]);
    assert_eq!(code, 1);
    let huge = profile(&report, "huge");
    let cpus = finding(&huge["findings"], "profile.cpus");
    assert_eq!(cpus["status"], "fail");
    assert!(
        message(cpus).contains(&format!("has {host_cpus} CPU")),
        "{cpus}"
    );
    assert!(
        hint(cpus).contains(&format!("cpus = {host_cpus} or less")),
        "{cpus}"
    );
    let memory = finding(&huge["findings"], "profile.memory");
    assert_eq!(memory["status"], "fail");
    assert!(message(memory).contains("GiB"), "{memory}");
    let fits = profile(&report, "fits");
    assert!(all_with_id(&fits["findings"], "profile.cpus").is_empty());
    assert!(all_with_id(&fits["findings"], "profile.memory").is_empty());
}
