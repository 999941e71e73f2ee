//! The policy's verdict on one container: pure, over a [`PolicyRequest`] that says what the
//! create body asks for.

use std::net::IpAddr;

use serde::Serialize;

use super::{
    LOOPBACK_ONLY, MAX_CPUS, MAX_GPUS_PER_CONTAINER, MAX_GPUS_PER_USER, MAX_MEMORY, Policy,
    REGISTRIES, REQUIRE_MEMORY_LIMIT, Rule,
};
use crate::container_plan::CreateBody;
use crate::container_plan::gpus::{CDI_DRIVER, NVIDIA_CDI_KIND};
use crate::profile::image::ImageReference;
use crate::profile::size::ByteSize;

/// What the container about to be created asks for, as far as a rule looks.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyRequest {
    /// The image reference as the body names it.
    pub image: String,
    /// How many GPUs it gets; `None` when it asks for all of them and how many the host
    /// has is unknown.
    pub gpus: Option<u32>,
    /// `HostConfig.Memory` in bytes; `None` without a limit.
    pub memory: Option<u64>,
    /// CPUs (`HostConfig.NanoCpus` / 10⁹); `None` without a limit.
    pub cpus: Option<f64>,
    /// Every published port, with the host address it binds.
    pub ports: Vec<PublishedPort>,
    /// The login name of the user running envctl.
    pub user: String,
    /// GPUs this user's other containers hold already; `None` when nobody counted them,
    /// `Err` with why when they could not be counted.
    pub user_gpus_held: Option<Result<u32, String>>,
    /// GPUs asked for through the environment (`NVIDIA_VISIBLE_DEVICES=all`), as
    /// `KEY=VALUE`: counted in [`PolicyRequest::gpus`], and refused by the per-user rule,
    /// which counts what users hold by their containers' GPU requests.
    pub environment_gpus: Vec<String>,
}

/// The variables through which a container can be given GPUs without a GPU request: the
/// NVIDIA runtime (where it is the daemon's default) gives the GPUs that
/// `NVIDIA_VISIBLE_DEVICES` names, and CUDA programs use those `CUDA_VISIBLE_DEVICES` names.
pub const GPU_VARIABLES: [&str; 2] = ["NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"];

/// The GPUs the body's environment names through [`GPU_VARIABLES`], as `KEY=VALUE`
/// entries: empty when it names none (unset, empty, `none`, `void`).
pub fn environment_gpus(body: &CreateBody) -> Vec<String> {
    body.env
        .iter()
        .filter(|pair| {
            let Some((key, value)) = pair.split_once('=') else {
                return false;
            };
            GPU_VARIABLES.contains(&key)
                && !matches!(value.trim(), "" | "none" | "void" | "NoDevFiles")
        })
        .cloned()
        .collect()
}

/// How many GPUs one variable's value names: `all` is `None` (as many as the host has).
fn named_in_value(value: &str) -> Option<u32> {
    if value.trim() == "all" {
        return None;
    }
    let named = value
        .split(',')
        .filter(|entry| !entry.trim().is_empty())
        .count();
    Some(u32::try_from(named).unwrap_or(u32::MAX))
}

/// One published port: `8888/tcp` on host address `127.0.0.1` (empty: every address).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedPort {
    pub container_port: String,
    pub host_ip: String,
}

/// One rule the container breaks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Violation {
    /// The rule's key, `limits.max_gpus_per_container`.
    pub rule: &'static str,
    /// The rule's line in the policy file.
    pub line: usize,
    /// The rule's value as the file writes it: `2`, `"64g"`, `true`.
    pub limit: String,
    /// What the container asks for, in words.
    pub message: String,
}

impl PolicyRequest {
    /// What `body` asks for. `host_gpu_count` is how many GPUs a request for all of them
    /// gets on this host (`None`: unknown); `user` is who asks.
    pub fn from_body(body: &CreateBody, host_gpu_count: Option<u32>, user: &str) -> PolicyRequest {
        let host = &body.host_config;
        let mut ports = Vec::new();
        for (container_port, bindings) in &host.port_bindings {
            for binding in bindings {
                ports.push(PublishedPort {
                    container_port: container_port.clone(),
                    host_ip: binding.host_ip.clone(),
                });
            }
        }
        PolicyRequest {
            image: body.image.clone(),
            gpus: gpu_count(body, host_gpu_count),
            // Docker reads 0 as "no limit".
            memory: host
                .memory
                .and_then(|bytes| u64::try_from(bytes).ok())
                .filter(|bytes| *bytes > 0),
            cpus: host
                .nano_cpus
                .filter(|nanos| *nanos > 0)
                .map(|nanos| nanos as f64 / 1e9),
            ports,
            user: user.to_string(),
            // `ops::policy::enforce` fills it from the engine's GPU holders when the policy
            // has a per-user limit.
            user_gpus_held: None,
            environment_gpus: environment_gpus(body),
        }
    }
}

/// Whether `body` asks for every GPU of the host (`--gpus all`, CDI's
/// `nvidia.com/gpu=all`, or `NVIDIA_VISIBLE_DEVICES=all` in its environment).
pub fn asks_for_all_gpus(body: &CreateBody) -> bool {
    let all = format!("{NVIDIA_CDI_KIND}=all");
    let environment_all = environment_gpus(body).iter().any(|pair| {
        pair.split_once('=')
            .is_some_and(|(_, value)| named_in_value(value).is_none())
    });
    environment_all
        || body
            .host_config
            .device_requests
            .iter()
            .any(|request| match &request.device_ids {
                Some(ids) if !ids.is_empty() => ids.contains(&all),
                _ => request.driver != CDI_DRIVER && request.count < 0,
            })
}

/// The GPUs the body's device requests add up to: each named device once, a count as it
/// is, "all" as many as the host has (`None` when that is unknown).
fn gpu_count(body: &CreateBody, host_gpu_count: Option<u32>) -> Option<u32> {
    if asks_for_all_gpus(body) {
        return host_gpu_count;
    }
    let mut total: u32 = 0;
    for request in &body.host_config.device_requests {
        let count = match &request.device_ids {
            Some(ids) if !ids.is_empty() => u32::try_from(ids.len()).unwrap_or(u32::MAX),
            // A count no u32 holds is never "none": it saturates, as a list does.
            _ => u32::try_from(request.count).unwrap_or(u32::MAX),
        };
        total = total.saturating_add(count);
    }
    // GPUs named in the environment reach the container beside (or without) a request:
    // the larger of the two is what it can use.
    for pair in environment_gpus(body) {
        if let Some((_, value)) = pair.split_once('=') {
            total = total.max(named_in_value(value)?);
        }
    }
    Some(total)
}

/// The verdict of `users.unproven` on a client: a violation when the policy refuses
/// clients whose transport proves no one and `identity` is such a client's.
pub fn check_client(
    policy: &Policy,
    identity: Option<&crate::facts::user::Identity>,
) -> Option<Violation> {
    let rule = policy.unproven.as_ref()?;
    match (rule.value, identity?) {
        (super::Unproven::Refuse, crate::facts::user::Identity::Unproven { why, claimed }) => {
            Some(Violation {
                rule: super::UNPROVEN,
                line: rule.line,
                limit: format!("\"{}\"", rule.value.word()),
                message: format!(
                    "{why}: this client claims to be `{claimed}`, which the daemon cannot check; reach it over ssh or TLS with a client certificate"
                ),
            })
        }
        _ => None,
    }
}

/// The line of `users.unproven = "refuse"` when `policy` refuses `identity`'s client.
pub fn check_client_refuses(
    policy: Option<&Policy>,
    identity: &crate::facts::user::Identity,
) -> Option<usize> {
    let policy = policy?;
    check_client(policy, Some(identity)).map(|violation| violation.line)
}

/// Every rule of `policy` that `request` breaks, in the order of their lines (one
/// violation per offending port); empty when the container may be made.
pub fn check(policy: &Policy, request: &PolicyRequest) -> Vec<Violation> {
    // Each rule is judged on its own; the order here is the order of ties on one line.
    let mut violations: Vec<Violation> = [
        policy
            .max_gpus_per_container
            .as_ref()
            .and_then(|rule| gpus_per_container(rule, request)),
        policy
            .max_gpus_per_user
            .as_ref()
            .and_then(|rule| gpus_per_user(rule, request)),
        policy
            .max_memory
            .as_ref()
            .and_then(|rule| memory_ceiling(rule, request)),
        policy
            .max_cpus
            .as_ref()
            .and_then(|rule| cpu_ceiling(rule, request)),
        policy
            .require_memory_limit
            .as_ref()
            .and_then(|rule| memory_requirement(rule, request)),
        policy
            .registries
            .as_ref()
            .and_then(|rule| registry(rule, request)),
    ]
    .into_iter()
    .flatten()
    .collect();
    if let Some(rule) = &policy.loopback_only {
        violations.extend(loopback_ports(rule, request));
    }
    violations.sort_by_key(|violation| violation.line);
    violations
}

impl Violation {
    /// A breach of the rule named `rule`, set on `line` to `limit` (as the file writes it).
    fn of(rule: &'static str, line: usize, limit: String, message: String) -> Violation {
        Violation {
            rule,
            line,
            limit,
            message,
        }
    }
}

/// `limits.max_gpus_per_container`: the container's GPUs, counted as its request adds
/// them up; "all" on a host whose count is unknown is refused, as it cannot be bounded.
fn gpus_per_container(rule: &Rule<u32>, request: &PolicyRequest) -> Option<Violation> {
    let message = match request.gpus {
        None => "the container asks for all GPUs, and how many this host has is unknown (NVML did not say)".to_string(),
        Some(gpus) if gpus > rule.value => {
            format!("the container asks for {}", gpus_in_words(gpus))
        }
        Some(_) => return None,
    };
    Some(Violation::of(
        MAX_GPUS_PER_CONTAINER,
        rule.line,
        rule.value.to_string(),
        message,
    ))
}

/// `limits.max_gpus_per_user`: what the user holds already plus what this container asks
/// for. GPUs asked for through the environment are refused outright, since the per-user
/// count follows containers' GPU requests only.
fn gpus_per_user(rule: &Rule<u32>, request: &PolicyRequest) -> Option<Violation> {
    let refuse = |message: String| {
        Some(Violation::of(
            MAX_GPUS_PER_USER,
            rule.line,
            rule.value.to_string(),
            message,
        ))
    };
    if !request.environment_gpus.is_empty() {
        return refuse(format!(
            "the container's environment asks for GPUs ({}), which the per-user count cannot follow; ask for them with `gpus` in the profile (or `--gpus`) instead",
            request.environment_gpus.join(", ")
        ));
    }
    // `None`: nobody asked the engine (pure callers); `up` always asks when this rule
    // is set, so only this container is counted then.
    let held = match &request.user_gpus_held {
        None => 0,
        Some(Ok(held)) => *held,
        Some(Err(why)) => {
            return refuse(format!(
                "what user `{}` holds already cannot be counted: {why}",
                request.user
            ));
        }
    };
    match request.gpus {
        None => refuse(format!(
            "the container asks for all GPUs, and how many this host has is unknown (NVML did not say), so what `{}` would hold cannot be counted",
            request.user
        )),
        Some(gpus) if gpus > 0 && held.saturating_add(gpus) > rule.value => refuse(if held == 0 {
            format!(
                "user `{}` would hold {} with this container",
                request.user,
                gpus_in_words(gpus)
            )
        } else {
            format!(
                "user `{}` holds {} already and the container asks for {} more",
                request.user,
                gpus_in_words(held),
                gpus
            )
        }),
        Some(_) => None,
    }
}

/// `limits.max_memory`: a container without a memory limit breaks it too, since it may
/// use all of the host's.
fn memory_ceiling(rule: &Rule<ByteSize>, request: &PolicyRequest) -> Option<Violation> {
    let message = match request.memory {
        None => "the container sets no memory limit (`memory` in the profile), so it may use all of the host's".to_string(),
        Some(bytes) if bytes > rule.value.bytes() => {
            format!("the container asks for memory = \"{}\"", ByteSize(bytes))
        }
        Some(_) => return None,
    };
    Some(Violation::of(
        MAX_MEMORY,
        rule.line,
        format!("\"{}\"", rule.value),
        message,
    ))
}

/// `limits.max_cpus`: a container without a CPU limit breaks it too.
fn cpu_ceiling(rule: &Rule<f64>, request: &PolicyRequest) -> Option<Violation> {
    let message = match request.cpus {
        None => "the container sets no CPU limit (`cpus` in the profile), so it may use all of the host's".to_string(),
        // Compared as Docker stores them, in billionths, so 0.1 + 0.2 is 0.3.
        Some(cpus) if nanos(cpus) > nanos(rule.value) => {
            format!("the container asks for cpus = {cpus}")
        }
        Some(_) => return None,
    };
    Some(Violation::of(
        MAX_CPUS,
        rule.line,
        rule.value.to_string(),
        message,
    ))
}

/// `limits.require_memory_limit = true`: the container must set a memory limit.
fn memory_requirement(rule: &Rule<bool>, request: &PolicyRequest) -> Option<Violation> {
    (rule.value && request.memory.is_none()).then(|| {
        Violation::of(
            REQUIRE_MEMORY_LIMIT,
            rule.line,
            "true".into(),
            "the container sets no memory limit: set `memory` in the profile".into(),
        )
    })
}

/// `images.registries`: the image's registry, in its canonical name, must be listed; an
/// image reference that does not parse is refused, as its registry cannot be known.
fn registry(rule: &Rule<Vec<String>>, request: &PolicyRequest) -> Option<Violation> {
    let message = match request.image.parse::<ImageReference>() {
        Err(message) => format!(
            "image `{}` is not a valid reference: {message}",
            request.image
        ),
        Ok(reference) => {
            let registry = reference.canonical().registry.to_ascii_lowercase();
            if rule.value.contains(&registry) {
                return None;
            }
            format!("image `{}` comes from registry `{registry}`", request.image)
        }
    };
    Some(Violation::of(
        REGISTRIES,
        rule.line,
        serde_json::Value::from(rule.value.clone()).to_string(),
        message,
    ))
}

/// `ports.loopback_only = true`: one violation for each port published beyond the
/// host's loopback.
fn loopback_ports(rule: &Rule<bool>, request: &PolicyRequest) -> Vec<Violation> {
    if !rule.value {
        return Vec::new();
    }
    request
        .ports
        .iter()
        .filter(|port| !is_loopback(&port.host_ip))
        .map(|port| {
            let address = if port.host_ip.is_empty() {
                "every address of the host".to_string()
            } else {
                format!("`{}`", port.host_ip)
            };
            Violation::of(
                LOOPBACK_ONLY,
                rule.line,
                "true".into(),
                format!(
                    "the container publishes port {} on {address}",
                    port.container_port
                ),
            )
        })
        .collect()
}

/// Whether a published port's host address is this host's loopback only: `127.0.0.0/8`,
/// `::1` or `localhost`. Empty means every address, which is not.
fn is_loopback(host_ip: &str) -> bool {
    if host_ip.eq_ignore_ascii_case("localhost") {
        return true;
    }
    let bare = host_ip
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
        .unwrap_or(host_ip);
    bare.parse::<IpAddr>()
        .is_ok_and(|address| address.is_loopback())
}

fn nanos(cpus: f64) -> i64 {
    (cpus * 1e9).round() as i64
}

fn gpus_in_words(count: u32) -> String {
    if count == 1 {
        "1 GPU".into()
    } else {
        format!("{count} GPUs")
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Rule, parse};
    use super::*;

    fn request() -> PolicyRequest {
        PolicyRequest {
            image: "pytorch/pytorch:2.8.0".into(),
            gpus: Some(1),
            memory: Some(16 << 30),
            cpus: Some(8.0),
            ports: vec![PublishedPort {
                container_port: "8888/tcp".into(),
                host_ip: "127.0.0.1".into(),
            }],
            user: "ada".into(),
            user_gpus_held: None,
            environment_gpus: Vec::new(),
        }
    }

    fn policy(text: &str) -> Policy {
        parse("policy.toml", text).unwrap()
    }

    fn refused(policy: &Policy, request: &PolicyRequest) -> Vec<(&'static str, usize, String)> {
        check(policy, request)
            .into_iter()
            .map(|violation| (violation.rule, violation.line, violation.message))
            .collect()
    }

    /// A rule set to `value` on line 3.
    fn at<T>(value: T) -> Rule<T> {
        Rule { value, line: 3 }
    }

    #[test]
    fn each_gpu_rule_is_judged_by_its_own_step() {
        let within = request();
        assert_eq!(super::gpus_per_container(&at(1), &within), None);
        assert_eq!(
            super::gpus_per_container(&at(0), &within).map(|violation| violation.message),
            Some("the container asks for 1 GPU".to_string())
        );
        assert_eq!(super::gpus_per_user(&at(1), &within), None);
        let holding = PolicyRequest {
            user_gpus_held: Some(Ok(1)),
            ..request()
        };
        assert_eq!(
            super::gpus_per_user(&at(1), &holding).map(|violation| violation.message),
            Some("user `ada` holds 1 GPU already and the container asks for 1 more".to_string())
        );
    }

    #[test]
    fn each_limit_rule_is_judged_by_its_own_step() {
        let within = request();
        assert_eq!(
            super::memory_requirement(
                &at(false),
                &PolicyRequest {
                    memory: None,
                    ..request()
                }
            ),
            None
        );
        assert_eq!(
            super::memory_requirement(
                &at(true),
                &PolicyRequest {
                    memory: None,
                    ..request()
                }
            )
            .map(|violation| violation.limit),
            Some("true".to_string())
        );
        assert_eq!(
            super::cpu_ceiling(
                &Rule {
                    value: 8.0,
                    line: 1
                },
                &within
            ),
            None
        );
        assert_eq!(
            super::registry(&at(vec!["docker.io".to_string()]), &within),
            None
        );
    }

    #[test]
    fn loopback_only_is_judged_port_by_port() {
        let everywhere = PolicyRequest {
            ports: vec![
                PublishedPort {
                    container_port: "8888/tcp".into(),
                    host_ip: String::new(),
                },
                PublishedPort {
                    container_port: "6006/tcp".into(),
                    host_ip: "::1".into(),
                },
                PublishedPort {
                    container_port: "22/tcp".into(),
                    host_ip: "0.0.0.0".into(),
                },
            ],
            ..request()
        };
        assert_eq!(super::loopback_ports(&at(false), &everywhere), Vec::new());
        let ports: Vec<String> = super::loopback_ports(&at(true), &everywhere)
            .into_iter()
            .map(|violation| violation.message)
            .collect();
        assert_eq!(
            ports,
            [
                "the container publishes port 8888/tcp on every address of the host",
                "the container publishes port 22/tcp on `0.0.0.0`",
            ]
        );
    }

    #[test]
    fn no_rule_refuses_nothing() {
        let empty = policy("");
        let request = PolicyRequest {
            gpus: None,
            memory: None,
            cpus: None,
            ..request()
        };
        assert!(check(&empty, &request).is_empty());
    }

    #[test]
    fn gpus_per_container() {
        let policy = policy("[limits]\nmax_gpus_per_container = 2\n");
        assert!(
            check(
                &policy,
                &PolicyRequest {
                    gpus: Some(2),
                    ..request()
                }
            )
            .is_empty()
        );
        assert_eq!(
            refused(
                &policy,
                &PolicyRequest {
                    gpus: Some(3),
                    ..request()
                }
            ),
            [(
                MAX_GPUS_PER_CONTAINER,
                2,
                "the container asks for 3 GPUs".into()
            )]
        );
        // "all" on a host whose GPUs nobody counted is refused, never waved through.
        let unknown = refused(
            &policy,
            &PolicyRequest {
                gpus: None,
                ..request()
            },
        );
        assert!(unknown[0].2.contains("unknown"), "{unknown:?}");
        let none = super::super::parse("p", "[limits]\nmax_gpus_per_container = 0\n").unwrap();
        assert!(
            check(
                &none,
                &PolicyRequest {
                    gpus: Some(0),
                    ..request()
                }
            )
            .is_empty()
        );
        assert_eq!(check(&none, &request()).len(), 1);
    }

    #[test]
    fn gpus_per_user_count_what_the_user_holds() {
        let policy = policy("[limits]\nmax_gpus_per_user = 4\n");
        assert!(
            check(
                &policy,
                &PolicyRequest {
                    gpus: Some(4),
                    ..request()
                }
            )
            .is_empty()
        );
        assert_eq!(
            refused(
                &policy,
                &PolicyRequest {
                    gpus: Some(5),
                    ..request()
                }
            ),
            [(
                MAX_GPUS_PER_USER,
                2,
                "user `ada` would hold 5 GPUs with this container".into()
            )]
        );
        let holding = PolicyRequest {
            gpus: Some(2),
            user_gpus_held: Some(Ok(3)),
            ..request()
        };
        assert_eq!(
            refused(&policy, &holding),
            [(
                MAX_GPUS_PER_USER,
                2,
                "user `ada` holds 3 GPUs already and the container asks for 2 more".into()
            )]
        );
        // A container without GPUs is never refused by a GPU rule.
        let over = PolicyRequest {
            gpus: Some(0),
            user_gpus_held: Some(Ok(9)),
            ..request()
        };
        assert!(check(&policy, &over).is_empty());
        assert_eq!(
            check(
                &policy,
                &PolicyRequest {
                    gpus: None,
                    ..request()
                }
            )
            .len(),
            1
        );
    }

    #[test]
    fn memory_ceiling_and_requirement() {
        let policy = policy("[limits]\nmax_memory = \"64g\"\nrequire_memory_limit = true\n");
        assert!(
            check(
                &policy,
                &PolicyRequest {
                    memory: Some(64 << 30),
                    ..request()
                }
            )
            .is_empty()
        );
        assert_eq!(
            refused(
                &policy,
                &PolicyRequest {
                    memory: Some(65 << 30),
                    ..request()
                }
            ),
            [(
                MAX_MEMORY,
                2,
                "the container asks for memory = \"65g\"".into()
            )]
        );
        let unlimited = refused(
            &policy,
            &PolicyRequest {
                memory: None,
                ..request()
            },
        );
        assert_eq!(
            unlimited
                .iter()
                .map(|found| (found.0, found.1))
                .collect::<Vec<_>>(),
            [(MAX_MEMORY, 2), (REQUIRE_MEMORY_LIMIT, 3)]
        );
        let not_required =
            super::super::parse("p", "[limits]\nrequire_memory_limit = false\n").unwrap();
        assert!(
            check(
                &not_required,
                &PolicyRequest {
                    memory: None,
                    ..request()
                }
            )
            .is_empty()
        );
    }

    #[test]
    fn cpu_ceiling() {
        let policy = policy("[limits]\nmax_cpus = 0.3\n");
        // 0.1 + 0.2 is not above 0.3, as Docker counts.
        assert!(
            check(
                &policy,
                &PolicyRequest {
                    cpus: Some(0.1 + 0.2),
                    ..request()
                }
            )
            .is_empty()
        );
        assert_eq!(
            refused(
                &policy,
                &PolicyRequest {
                    cpus: Some(0.5),
                    ..request()
                }
            ),
            [(MAX_CPUS, 2, "the container asks for cpus = 0.5".into())]
        );
        assert_eq!(
            check(
                &policy,
                &PolicyRequest {
                    cpus: None,
                    ..request()
                }
            )
            .len(),
            1
        );
    }

    #[test]
    fn registries_compare_canonical_names() {
        let policy =
            policy("[images]\nregistries = [\"registry.example.com\", \"index.docker.io\"]\n");
        for allowed in [
            "busybox",
            "docker.io/library/busybox:1.36",
            "registry-1.docker.io/pytorch/pytorch",
            "REGISTRY.example.com/team/torch:1@sha256:0000000000000000000000000000000000000000000000000000000000000000",
        ] {
            let request = PolicyRequest {
                image: allowed.to_lowercase(),
                ..request()
            };
            assert!(check(&policy, &request).is_empty(), "{allowed}");
        }
        assert_eq!(
            refused(
                &policy,
                &PolicyRequest {
                    image: "nvcr.io/nvidia/pytorch:25.01-py3".into(),
                    ..request()
                }
            ),
            [(
                REGISTRIES,
                2,
                "image `nvcr.io/nvidia/pytorch:25.01-py3` comes from registry `nvcr.io`".into()
            )]
        );
        let only_private =
            super::super::parse("p", "[images]\nregistries = [\"localhost:5000\"]\n").unwrap();
        assert_eq!(check(&only_private, &request()).len(), 1);
        let mut text_rule = only_private.clone();
        text_rule.registries = Some(Rule {
            value: vec!["docker.io".into()],
            line: 7,
        });
        assert!(check(&text_rule, &request()).is_empty());
    }

    #[test]
    fn ports_on_loopback_only() {
        let policy = policy("[ports]\nloopback_only = true\n");
        let published = |host_ip: &str| PolicyRequest {
            ports: vec![PublishedPort {
                container_port: "8888/tcp".into(),
                host_ip: host_ip.into(),
            }],
            ..request()
        };
        for loopback in ["127.0.0.1", "127.0.1.1", "::1", "[::1]", "localhost"] {
            assert!(
                check(&policy, &published(loopback)).is_empty(),
                "{loopback}"
            );
        }
        assert_eq!(
            refused(&policy, &published("")),
            [(
                LOOPBACK_ONLY,
                2,
                "the container publishes port 8888/tcp on every address of the host".into()
            )]
        );
        assert_eq!(
            refused(&policy, &published("0.0.0.0"))[0].2,
            "the container publishes port 8888/tcp on `0.0.0.0`"
        );
        assert_eq!(check(&policy, &published("10.1.2.3")).len(), 1);
        let off = super::super::parse("p", "[ports]\nloopback_only = false\n").unwrap();
        assert!(check(&off, &published("0.0.0.0")).is_empty());
    }

    #[test]
    fn the_request_is_read_from_the_create_body() {
        let mut body: CreateBody = serde_json::from_value(serde_json::json!({
            "Image": "busybox:1.36",
            "Cmd": ["sleep", "infinity"],
            "Env": [],
            "Labels": {},
            "ExposedPorts": {},
            "HostConfig": {
                "Memory": 17179869184_i64,
                "NanoCpus": 1500000000_i64,
                "PortBindings": {"8888/tcp": [{"HostIp": "", "HostPort": "8888"}]},
                "Mounts": [],
                "Ulimits": [],
                "RestartPolicy": {"Name": "no", "MaximumRetryCount": 0},
                "DeviceRequests": [{"Driver": "", "Count": 2, "DeviceIDs": null, "Capabilities": [["gpu"]], "Options": {}}]
            }
        }))
        .unwrap();
        let request = PolicyRequest::from_body(&body, Some(8), "ada");
        assert_eq!(request.image, "busybox:1.36");
        assert_eq!(request.gpus, Some(2));
        assert_eq!(request.memory, Some(16 << 30));
        assert_eq!(request.cpus, Some(1.5));
        assert_eq!(
            request.ports,
            [PublishedPort {
                container_port: "8888/tcp".into(),
                host_ip: String::new()
            }]
        );
        body.host_config.device_requests[0].count = -1;
        assert!(asks_for_all_gpus(&body));
        assert_eq!(
            PolicyRequest::from_body(&body, Some(8), "ada").gpus,
            Some(8)
        );
        assert_eq!(PolicyRequest::from_body(&body, None, "ada").gpus, None);
        body.host_config.device_requests[0].device_ids = Some(vec!["0".into(), "3".into()]);
        body.host_config.device_requests[0].count = 0;
        assert_eq!(PolicyRequest::from_body(&body, None, "ada").gpus, Some(2));
        // The CDI form of the same requests.
        body.host_config.device_requests = vec![crate::container_plan::gpus::cdi_request(vec![
            "nvidia.com/gpu=all".into(),
        ])];
        assert_eq!(
            PolicyRequest::from_body(&body, Some(4), "ada").gpus,
            Some(4)
        );
        body.host_config.device_requests = vec![crate::container_plan::gpus::cdi_request(vec![
            "nvidia.com/gpu=0".into(),
            "nvidia.com/gpu=1".into(),
        ])];
        assert_eq!(PolicyRequest::from_body(&body, None, "ada").gpus, Some(2));
        body.host_config.device_requests.clear();
        body.host_config.memory = None;
        body.host_config.nano_cpus = None;
        let plain = PolicyRequest::from_body(&body, None, "ada");
        assert_eq!(
            (plain.gpus, plain.memory, plain.cpus),
            (Some(0), None, None)
        );
        // GPUs hidden in the environment count as the GPUs they name.
        for (pair, host, gpus) in [
            ("NVIDIA_VISIBLE_DEVICES=all", Some(8), Some(8)),
            ("NVIDIA_VISIBLE_DEVICES=all", None, None),
            ("NVIDIA_VISIBLE_DEVICES=0,1,2", None, Some(3)),
            ("CUDA_VISIBLE_DEVICES=GPU-a,GPU-b", None, Some(2)),
            ("NVIDIA_VISIBLE_DEVICES=none", None, Some(0)),
            ("NVIDIA_VISIBLE_DEVICES=", None, Some(0)),
        ] {
            body.env = vec![pair.into()];
            let request = PolicyRequest::from_body(&body, host, "ada");
            assert_eq!(request.gpus, gpus, "{pair}");
            assert_eq!(
                request.environment_gpus.is_empty(),
                gpus == Some(0),
                "{pair}"
            );
        }
    }

    #[test]
    fn gpus_in_the_environment_are_refused_by_the_per_user_rule() {
        let policy = policy("[limits]\nmax_gpus_per_user = 2\nmax_gpus_per_container = 4\n");
        let hidden = PolicyRequest {
            gpus: Some(8),
            environment_gpus: vec!["NVIDIA_VISIBLE_DEVICES=all".into()],
            user_gpus_held: Some(Ok(0)),
            ..request()
        };
        let refusals = refused(&policy, &hidden);
        // In the order of the policy's lines: the per-user rule (line 2), then the
        // per-container one (line 3).
        assert_eq!(refusals.len(), 2, "{refusals:?}");
        assert!(
            refusals[0].2.contains("NVIDIA_VISIBLE_DEVICES=all"),
            "{refusals:?}"
        );
        assert!(refusals[1].2.contains("asks for 8 GPUs"), "{refusals:?}");
    }

    #[test]
    fn unproven_clients_are_refused_only_where_the_policy_says_so() {
        use crate::facts::user::Identity;
        let unproven = Identity::Unproven {
            claimed: "uid:1000@laptop".into(),
            why: "plain tcp to tcp://gpu2:2375 proves no one".into(),
        };
        let ssh = Identity::Ssh {
            user: "alice".into(),
            server: "gpu2".into(),
        };
        let refusing = super::super::parse("p.toml", "[users]\nunproven = \"refuse\"\n").unwrap();
        let violation = check_client(&refusing, Some(&unproven)).unwrap();
        assert_eq!(
            (violation.rule, violation.line, violation.limit.as_str()),
            ("users.unproven", 2, "\"refuse\"")
        );
        assert!(violation.message.starts_with(
            "plain tcp to tcp://gpu2:2375 proves no one: this client claims to be `uid:1000@laptop`"
        ));
        assert_eq!(check_client(&refusing, Some(&ssh)), None);
        let allowing = super::super::parse("p.toml", "[users]\nunproven = \"allow\"\n").unwrap();
        assert_eq!(check_client(&allowing, Some(&unproven)), None);
        assert_eq!(check_client(&Policy::default(), Some(&unproven)), None);
    }
}
