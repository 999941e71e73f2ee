//! Unit tests of the profile → create body mapping and its `docker run` line.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::profile::resolve::{ResolvedProfile, resolve_text};
use crate::profile::size::ByteSize;

use super::*;

const WORKING_DIRECTORY: &str = "/work/project";
const HOME: &str = "/home/ada";

fn resolve(text: &str) -> ResolvedProfile {
    resolve_text("test.toml", text).unwrap_or_else(|error| panic!("{error}: {error:?}"))
}

fn every_path_exists(_: &Path) -> bool {
    true
}

fn context(host_has_gpus: bool) -> SpecContext<'static> {
    SpecContext {
        working_directory: PathBuf::from(WORKING_DIRECTORY),
        home: Some(PathBuf::from(HOME)),
        host_has_gpus,
        overrides: Overrides::default(),
        path_exists: &every_path_exists,
    }
}

fn body_of(text: &str) -> CreateBody {
    create_body(&resolve(text), &context(false)).unwrap()
}

const FULL_PROFILE: &str = r#"
name = "full"
description = "a profile that uses every key"
image = "registry.example.com:5000/team/pytorch:2.8.0"
command = ["python", "-m", "jupyter", "lab", "--notebook-dir=/workspace"]
workdir = "/workspace"
user = "1000:1000"
gpus = 2
memory = "16g"
cpus = 7.5
shm_size = "2g"
ipc = "shareable"
ports = ["8888:8888", "0.0.0.0:2222:22", "[::1]:6006:6006", "9000-9001:9000-9001/udp"]
mounts = ["./notebooks:/workspace/notebooks", "~/datasets:/data:ro", "models:/models"]
env = { PYTHONUNBUFFERED = "1", HF_HOME = "/models/hf" }

[ulimits]
memlock = -1
stack = 67108864

[stack]
cuda = "12.8"
torch = "2.8.0"

[commands]
train = ["python", "train.py"]
"#;

#[test]
fn every_key_maps_to_the_engine_api_json() {
    let resolved = resolve(FULL_PROFILE);
    let body = create_body(&resolved, &context(false)).unwrap();
    let expected = format!(
        concat!(
            r#"{{"Image":"registry.example.com:5000/team/pytorch:2.8.0","#,
            r#""Cmd":["python","-m","jupyter","lab","--notebook-dir=/workspace"],"#,
            r#""Env":["CUDA_DEVICE_ORDER=PCI_BUS_ID","HF_HOME=/models/hf","PYTHONUNBUFFERED=1"],"#,
            r#""WorkingDir":"/workspace","User":"1000:1000","#,
            r#""Labels":{{"envctl.config-hash":"{hash}","envctl.profile":"full"}},"#,
            r#""ExposedPorts":{{"22/tcp":{{}},"6006/tcp":{{}},"8888/tcp":{{}},"9000/udp":{{}},"9001/udp":{{}}}},"#,
            r#""HostConfig":{{"Memory":17179869184,"NanoCpus":7500000000,"ShmSize":2147483648,"#,
            r#""IpcMode":"shareable","#,
            r#""PortBindings":{{"22/tcp":[{{"HostIp":"0.0.0.0","HostPort":"2222"}}],"#,
            r#""6006/tcp":[{{"HostIp":"::1","HostPort":"6006"}}],"#,
            r#""8888/tcp":[{{"HostIp":"127.0.0.1","HostPort":"8888"}}],"#,
            r#""9000/udp":[{{"HostIp":"127.0.0.1","HostPort":"9000"}}],"#,
            r#""9001/udp":[{{"HostIp":"127.0.0.1","HostPort":"9001"}}]}},"#,
            r#""Mounts":[{{"Type":"bind","Source":"/work/project/notebooks","Target":"/workspace/notebooks"}},"#,
            r#"{{"Type":"bind","Source":"/home/ada/datasets","Target":"/data","ReadOnly":true}},"#,
            r#"{{"Type":"volume","Source":"models","Target":"/models"}}],"#,
            r#""Ulimits":[{{"Name":"memlock","Soft":-1,"Hard":-1}},{{"Name":"stack","Soft":67108864,"Hard":67108864}}],"#,
            r#""RestartPolicy":{{"Name":"no","MaximumRetryCount":0}},"#,
            r#""DeviceRequests":[{{"Driver":"","Count":2,"DeviceIDs":null,"Capabilities":[["gpu"]],"Options":{{}}}}]}}}}"#,
        ),
        hash = resolved.config_hash
    );
    assert_eq!(serde_json::to_string(&body).unwrap(), expected);
    // The JSON reads back into the same body.
    let read_back: CreateBody = serde_json::from_str(&expected).unwrap();
    assert_eq!(read_back, body);
}

#[test]
fn docker_run_line_of_every_key() {
    let resolved = resolve(FULL_PROFILE);
    let body = create_body(&resolved, &context(false)).unwrap();
    let expected = format!(
        "docker run -d --name envctl-full \
         --label envctl.config-hash={hash} --label envctl.profile=full \
         -e CUDA_DEVICE_ORDER=PCI_BUS_ID -e HF_HOME=/models/hf -e PYTHONUNBUFFERED=1 \
         -w /workspace --user 1000:1000 --memory 16g --cpus 7.5 --shm-size 2g --ipc shareable \
         -p 0.0.0.0:2222:22/tcp -p '[::1]:6006:6006/tcp' -p 127.0.0.1:8888:8888/tcp \
         -p 127.0.0.1:9000-9001:9000-9001/udp \
         --mount type=bind,source=/work/project/notebooks,target=/workspace/notebooks \
         --mount type=bind,source=/home/ada/datasets,target=/data,readonly \
         --mount type=volume,source=models,target=/models \
         --ulimit memlock=-1:-1 --ulimit stack=67108864:67108864 \
         --gpus 2 \
         registry.example.com:5000/team/pytorch:2.8.0 python -m jupyter lab --notebook-dir=/workspace",
        hash = resolved.config_hash
    );
    assert_eq!(
        docker_run_line(&body, &container_name(&resolved.profile.name)),
        expected
    );
}

#[test]
fn minimal_profile_keeps_the_container_alive_with_init() {
    let body = body_of(r#"image = "busybox:1.36""#);
    assert_eq!(body.cmd, ["sleep", "infinity"]);
    assert_eq!(body.host_config.init, Some(true));
    assert!(body.env.is_empty());
    let json = serde_json::to_string(&body).unwrap();
    assert!(
        json.ends_with(
            r#""HostConfig":{"RestartPolicy":{"Name":"no","MaximumRetryCount":0},"Init":true}}"#
        ),
        "{json}"
    );
    assert!(
        !json.contains("ExposedPorts") && !json.contains("Env"),
        "{json}"
    );
    assert!(
        docker_run_line(&body, "c").ends_with(" --init busybox:1.36 sleep infinity"),
        "{}",
        docker_run_line(&body, "c")
    );
    let with_command = body_of("image = \"busybox:1.36\"\ncommand = [\"sh\"]");
    assert_eq!(with_command.host_config.init, None);
}

#[test]
fn labels_hold_profile_name_and_config_hash_only() {
    let resolved = resolve("name = \"lab\"\nimage = \"busybox:1.36\"");
    let body = create_body(&resolved, &context(false)).unwrap();
    let labels: Vec<(&str, &str)> = body
        .labels
        .iter()
        .map(|(key, value)| (key.as_str(), value.as_str()))
        .collect();
    assert_eq!(
        labels,
        [
            (CONFIG_HASH_LABEL, resolved.config_hash.as_str()),
            (PROFILE_LABEL, "lab")
        ]
    );
    assert_eq!(container_name("lab"), "envctl-lab");
    // Same profile, same body: nothing varies between runs.
    assert_eq!(create_body(&resolved, &context(false)).unwrap(), body);
}

fn device_json(gpus: &str, host_has_gpus: bool) -> (String, Vec<String>) {
    let resolved = resolve(&format!("image = \"busybox:1.36\"\ngpus = {gpus}"));
    let body = create_body(&resolved, &context(host_has_gpus)).unwrap();
    let json = serde_json::to_string(&body.host_config.device_requests).unwrap();
    (json, body.env)
}

#[test]
fn gpu_forms_are_what_docker_run_gpus_sends() {
    let cuda_order = vec!["CUDA_DEVICE_ORDER=PCI_BUS_ID".to_string()];
    let all =
        r#"[{"Driver":"","Count":-1,"DeviceIDs":null,"Capabilities":[["gpu"]],"Options":{}}]"#;
    assert_eq!(
        device_json("\"all\"", false),
        (all.into(), cuda_order.clone())
    );
    assert_eq!(
        device_json("2", false),
        (
            r#"[{"Driver":"","Count":2,"DeviceIDs":null,"Capabilities":[["gpu"]],"Options":{}}]"#
                .into(),
            cuda_order.clone()
        )
    );
    assert_eq!(
        device_json(r#"["0", "GPU-5f8c1d0e-9c4b-4a3e-8f2a-123456789abc"]"#, false),
        (
            r#"[{"Driver":"","Count":0,"DeviceIDs":["0","GPU-5f8c1d0e-9c4b-4a3e-8f2a-123456789abc"],"Capabilities":[["gpu"]],"Options":{}}]"#
                .into(),
            cuda_order.clone()
        )
    );
    assert_eq!(device_json("\"optional\"", true), (all.into(), cuda_order));
    assert_eq!(
        device_json("\"optional\"", false),
        ("[]".into(), Vec::new())
    );
    assert_eq!(device_json("\"none\"", true), ("[]".into(), Vec::new()));
    let no_gpu = body_of("image = \"busybox:1.36\"\ngpus = \"none\"");
    assert!(
        !serde_json::to_string(&no_gpu)
            .unwrap()
            .contains("DeviceRequests")
    );
}

#[test]
fn gpus_flag_spellings() {
    let line = |gpus: &str| {
        let body = body_of(&format!("image = \"busybox:1.36\"\ngpus = {gpus}"));
        docker_run_line(&body, "c")
    };
    assert!(line("\"all\"").contains(" --gpus all "));
    assert!(line("3").contains(" --gpus 3 "));
    assert!(line("[\"0\", \"1\"]").contains(r#" --gpus '"device=0,1"' "#));
    // One device needs no CSV quotes.
    assert!(line("[\"1\"]").contains(" --gpus device=1 "));
    assert!(!line("\"none\"").contains("--gpus"));
}

#[test]
fn profile_cuda_device_order_is_kept() {
    let body = body_of(
        "image = \"busybox:1.36\"\ngpus = \"all\"\nenv = { CUDA_DEVICE_ORDER = \"FASTEST_FIRST\" }",
    );
    assert_eq!(body.env, ["CUDA_DEVICE_ORDER=FASTEST_FIRST"]);
}

#[test]
fn default_shared_memory_rules() {
    let shm = |text: &str| body_of(text).host_config.shm_size;
    let eight_gib = Some(8 << 30);
    assert_eq!(DEFAULT_SHM_SIZE, 8 * 1024 * 1024 * 1024);
    // PyTorch by image name, by stack, or any GPU container: the default.
    assert_eq!(
        shm(r#"image = "pytorch/pytorch:2.8.0-cuda12.8-cudnn9-runtime""#),
        eight_gib
    );
    assert_eq!(
        shm("image = \"nvcr.io/nvidia/base:1\"\n[stack]\ntorch = \"2.8.0\""),
        eight_gib
    );
    assert_eq!(shm("image = \"busybox:1.36\"\ngpus = 1"), eight_gib);
    // Neither PyTorch nor GPUs: Docker's own default.
    assert_eq!(shm(r#"image = "busybox:1.36""#), None);
    // The host's IPC namespace: Docker does not size /dev/shm.
    assert_eq!(
        shm("image = \"pytorch/pytorch:2.8.0\"\nipc = \"host\"\ngpus = \"all\""),
        None
    );
    // What the profile writes wins.
    assert_eq!(
        shm("image = \"pytorch/pytorch:2.8.0\"\nshm_size = \"1g\""),
        Some(1 << 30)
    );
    assert_eq!(
        shm("image = \"busybox:1.36\"\nshm_size = \"256m\"\nipc = \"private\""),
        Some(256 << 20)
    );
    // `optional` on a GPU-less host requests nothing, so it does not count as GPUs.
    assert_eq!(shm("image = \"busybox:1.36\"\ngpus = \"optional\""), None);
}

#[test]
fn port_ranges_expand_per_port_and_host_ips_are_kept() {
    let body = body_of(
        r#"
image = "busybox:1.36"
ports = ["8000-8002:9000-9002", "[2001:db8::1]:8888:8888", "127.0.0.1::6006", "0.0.0.0:5353:53/udp", "[::1]:8888:8888"]
"#,
    );
    let bindings = serde_json::to_string(&body.host_config.port_bindings).unwrap();
    assert_eq!(
        bindings,
        concat!(
            r#"{"53/udp":[{"HostIp":"0.0.0.0","HostPort":"5353"}],"#,
            r#""6006/tcp":[{"HostIp":"127.0.0.1","HostPort":""}],"#,
            r#""8888/tcp":[{"HostIp":"2001:db8::1","HostPort":"8888"},{"HostIp":"::1","HostPort":"8888"}],"#,
            r#""9000/tcp":[{"HostIp":"127.0.0.1","HostPort":"8000"}],"#,
            r#""9001/tcp":[{"HostIp":"127.0.0.1","HostPort":"8001"}],"#,
            r#""9002/tcp":[{"HostIp":"127.0.0.1","HostPort":"8002"}]}"#
        )
    );
    let exposed: Vec<&str> = body.exposed_ports.keys().map(String::as_str).collect();
    assert_eq!(
        exposed,
        [
            "53/udp", "6006/tcp", "8888/tcp", "9000/tcp", "9001/tcp", "9002/tcp"
        ]
    );
    let line = docker_run_line(&body, "c");
    assert!(
        line.contains(
            " -p 127.0.0.1::6006/tcp -p '[2001:db8::1]:8888:8888/tcp' \
             -p 127.0.0.1:8000-8002:9000-9002/tcp -p 0.0.0.0:5353:53/udp -p '[::1]:8888:8888/tcp' "
        ),
        "{line}"
    );
}

#[test]
fn bind_sources_resolve_against_working_directory_and_home() {
    let body = body_of(
        r#"
image = "busybox:1.36"
mounts = ["./data:/data", "../shared/models:/models:ro", "~/.cache/huggingface:/root/.cache/huggingface", "/srv/scratch/:/scratch", "volume-name:/volume"]
"#,
    );
    let mounts: Vec<(MountType, &str, &str, bool)> = body
        .host_config
        .mounts
        .iter()
        .map(|mount| {
            (
                mount.kind,
                mount.source.as_str(),
                mount.target.as_str(),
                mount.read_only,
            )
        })
        .collect();
    assert_eq!(
        mounts,
        [
            (MountType::Bind, "/work/project/data", "/data", false),
            (MountType::Bind, "/work/shared/models", "/models", true),
            (
                MountType::Bind,
                "/home/ada/.cache/huggingface",
                "/root/.cache/huggingface",
                false
            ),
            (MountType::Bind, "/srv/scratch", "/scratch", false),
            (MountType::Volume, "volume-name", "/volume", false),
        ]
    );
}

#[test]
fn missing_bind_sources_are_refused_with_mkdir_hint() {
    let resolved = resolve(
        r#"
image = "busybox:1.36"
mounts = ["./data:/data", "./present:/present", "~/my datasets:/datasets", "models:/models"]
"#,
    );
    let existing: BTreeSet<PathBuf> = [PathBuf::from("/work/project/present")].into();
    let exists = |path: &Path| existing.contains(path);
    let mut context = context(false);
    context.path_exists = &exists;
    let error = create_body(&resolved, &context).unwrap_err();
    assert_eq!(
        error.to_string(),
        "2 bind mount sources do not exist: `/work/project/data`, `/home/ada/my datasets`"
    );
    assert_eq!(
        error.hint().unwrap(),
        "create them first: `mkdir -p /work/project/data '/home/ada/my datasets'` \
         (envctl never lets Docker create host folders: they would belong to root), \
         or fix the mount's source"
    );

    let resolved = resolve("image = \"busybox:1.36\"\nmounts = [\"./data:/data:ro\"]");
    let error = create_body(&resolved, &context).unwrap_err();
    assert_eq!(
        error.to_string(),
        "bind mount source `/work/project/data` (written `./data`, mounted at `/data`) does not exist"
    );
    assert!(
        error
            .hint()
            .unwrap()
            .starts_with("create it first: `mkdir -p /work/project/data`")
    );
    // Volumes are Docker's to create: never checked.
    let resolved = resolve("image = \"busybox:1.36\"\nmounts = [\"models:/models\"]");
    assert!(create_body(&resolved, &context).is_ok());
}

#[test]
fn tilde_without_home_is_an_error() {
    let resolved = resolve("image = \"busybox:1.36\"\nmounts = [\"~/data:/data\"]");
    let mut context = context(false);
    context.home = None;
    let error = create_body(&resolved, &context).unwrap_err();
    assert!(matches!(error, SpecError::HomeUnknown { .. }), "{error:?}");
    assert!(error.hint().is_some());
}

#[test]
fn overrides_apply_on_top_and_change_the_hash() {
    let resolved = resolve(
        r#"
image = "busybox:1.36"
env = { A = "1" }
ports = ["8888:8888"]
mounts = ["./data:/data"]
"#,
    );
    let plain = create_body(&resolved, &context(false)).unwrap();
    let mut context = context(false);
    context.overrides = Overrides::parse(
        &["A=2".to_string(), "B=3".to_string()],
        &["6006:6006".to_string()],
        &["/srv/data:/data:ro".to_string()],
        &|_| None,
    )
    .unwrap();
    let body = create_body(&resolved, &context).unwrap();
    assert_eq!(body.env, ["A=2", "B=3"]);
    let ports: Vec<&str> = body
        .host_config
        .port_bindings
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(ports, ["6006/tcp", "8888/tcp"]);
    assert_eq!(
        body.host_config.mounts,
        [Mount {
            kind: MountType::Bind,
            source: "/srv/data".into(),
            target: "/data".into(),
            read_only: true,
        }]
    );
    assert_ne!(
        body.labels[CONFIG_HASH_LABEL],
        plain.labels[CONFIG_HASH_LABEL]
    );
    assert_eq!(plain.labels[CONFIG_HASH_LABEL], resolved.config_hash);

    context.overrides = Overrides::parse(&[], &["8888:1234".to_string()], &[], &|_| None).unwrap();
    let error = create_body(&resolved, &context).unwrap_err();
    assert_eq!(
        error.to_string(),
        "ports `127.0.0.1:8888:8888/tcp` and `127.0.0.1:8888:1234/tcp` publish the same host port"
    );
}

#[test]
fn values_beyond_the_engine_api_integers_are_refused() {
    let mut resolved = resolve("image = \"busybox:1.36\"\ncpus = 2.0");
    assert_eq!(
        create_body(&resolved, &context(false))
            .unwrap()
            .host_config
            .nano_cpus,
        Some(2_000_000_000)
    );
    resolved.profile.cpus = Some(1e12);
    assert!(matches!(
        create_body(&resolved, &context(false)),
        Err(SpecError::CpusOutOfRange { .. })
    ));
    resolved.profile.cpus = Some(0.000_000_000_1);
    assert!(matches!(
        create_body(&resolved, &context(false)),
        Err(SpecError::CpusOutOfRange { .. })
    ));
    resolved.profile.cpus = None;
    resolved.profile.memory = Some(ByteSize(u64::MAX));
    let error = create_body(&resolved, &context(false)).unwrap_err();
    assert!(
        matches!(error, SpecError::SizeOutOfRange { key: "memory", .. }),
        "{error:?}"
    );
}

#[test]
fn the_profile_file_label_is_absolute_and_clean_and_none_for_bundled() {
    let search = crate::profile::SearchPath::new("/nowhere/envctl".into(), Vec::new(), None);
    let bundled = search.resolve("pytorch-2.8").unwrap();
    assert_eq!(
        super::profile_file_label(&bundled, std::path::Path::new("/work")),
        None
    );
    let mut on_disk = bundled;
    on_disk.source = crate::profile::SourceKind::Path;
    on_disk.file = "./team/../envctl/x.toml".into();
    assert_eq!(
        super::profile_file_label(&on_disk, std::path::Path::new("/work/project")).as_deref(),
        Some("/work/project/envctl/x.toml")
    );
    on_disk.file = "/abs/x.toml".into();
    assert_eq!(
        super::profile_file_label(&on_disk, std::path::Path::new("/work")).as_deref(),
        Some("/abs/x.toml")
    );
}
