//! `envctl up -e K=V -p SPEC -v SPEC`: one-off changes on top of a profile, parsed with the
//! profile's own port and mount grammar so a flag means what the same key would in TOML.
//!
//! Environment variables replace by key; a port replaces the profile's mappings of the
//! same container port and protocol (`-p 18932:80` moves port 80 to host port 18932), or is
//! appended; a mount replaces the profile's mount with the same target, or is appended;
//! `--gpus` replaces `gpus`; `--ulimit NAME=SOFT[:HARD]` replaces that one entry of
//! `[ulimits]` (docker's syntax), so a bundled `memlock = -1` a daemon without
//! CAP_SYS_RESOURCE cannot raise is escaped without editing the file.

use std::collections::BTreeSet;

use crate::profile::model::{GpuRequest, Mount, PortBinding, Profile, ULIMIT_NAMES, Ulimit};
use crate::profile::mounts::parse_mount_spec;
use crate::profile::ports::parse_port_spec;

use super::error::SpecError;

/// The overrides of one `up`, in the order given.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    pub env: Vec<(String, String)>,
    pub ports: Vec<PortBinding>,
    pub mounts: Vec<Mount>,
    /// `--gpus`: replaces the profile's `gpus`.
    pub gpus: Option<GpuRequest>,
    /// `--ulimit NAME=SOFT[:HARD]`: replaces `[ulimits] NAME`, the last flag of a name winning.
    pub ulimits: Vec<(String, Ulimit)>,
    /// The keys of `-e KEY` (no `=`), whose value came from the shell: secret whatever
    /// their name, so no output shows them.
    pub from_shell: BTreeSet<String>,
}

impl Overrides {
    /// Parses the flags' values. `-e KEY` without `=` takes KEY's value from
    /// `host_environment` (as `docker run -e KEY` does) and is an error when it is unset
    /// there, rather than docker's silent drop.
    pub fn parse(
        env_specs: &[String],
        port_specs: &[String],
        mount_specs: &[String],
        host_environment: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Overrides, SpecError> {
        let invalid =
            |flag: &'static str, spec: &str, message: String| SpecError::InvalidOverride {
                flag,
                spec: spec.to_string(),
                message,
            };
        let mut overrides = Overrides::default();
        for spec in env_specs {
            let (key, value, from_shell) = match spec.split_once('=') {
                Some((key, value)) => (key, value.to_string(), false),
                None => {
                    let value = host_environment(spec).ok_or_else(|| {
                        invalid(
                            "-e",
                            spec,
                            format!("`{spec}` is not set in your environment"),
                        )
                    })?;
                    (spec.as_str(), value, true)
                }
            };
            if key.is_empty() || key.contains(char::is_whitespace) || spec.contains('\0') {
                // The value may be a secret: the error names the key only.
                let shown = match spec.split_once('=') {
                    Some((key, _)) => format!("{key}=…"),
                    None => spec.clone(),
                };
                return Err(invalid(
                    "-e",
                    &shown,
                    "the variable name must be non-empty, without spaces".into(),
                ));
            }
            // The last `-e` of a key wins, and with it where its value came from.
            if from_shell {
                overrides.from_shell.insert(key.to_string());
            } else {
                overrides.from_shell.remove(key);
            }
            overrides.env.push((key.to_string(), value));
        }
        for spec in port_specs {
            overrides
                .ports
                .push(parse_port_spec(spec).map_err(|message| invalid("-p", spec, message))?);
        }
        for spec in mount_specs {
            overrides
                .mounts
                .push(parse_mount_spec(spec).map_err(|message| invalid("-v", spec, message))?);
        }
        Ok(overrides)
    }

    pub fn is_empty(&self) -> bool {
        self.env.is_empty()
            && self.ports.is_empty()
            && self.mounts.is_empty()
            && self.gpus.is_none()
            && self.ulimits.is_empty()
    }

    /// `--ulimit NAME=SOFT[:HARD]`, in `docker run --ulimit`'s words: one of docker's
    /// names, each limit an integer of 0 or more or -1 for unlimited, soft at most hard.
    pub fn parse_ulimit(spec: &str) -> Result<(String, Ulimit), SpecError> {
        let invalid = |message: String| SpecError::InvalidOverride {
            flag: "--ulimit",
            spec: spec.to_string(),
            message,
        };
        let Some((name, limits)) = spec.split_once('=') else {
            return Err(invalid("write NAME=SOFT or NAME=SOFT:HARD".into()));
        };
        let name = name.trim();
        if !ULIMIT_NAMES.contains(&name) {
            let known = ULIMIT_NAMES.join(", ");
            return Err(invalid(
                match crate::suggest::did_you_mean(name, &ULIMIT_NAMES) {
                    Some(near) => format!("`{name}` is not a ulimit: did you mean `{near}`?"),
                    None => format!("`{name}` is not a ulimit (docker's are {known})"),
                },
            ));
        }
        let limit = |text: &str| -> Result<i64, SpecError> {
            match text.trim().parse::<i64>() {
                Ok(value) if value >= -1 => Ok(value),
                _ => Err(invalid(format!(
                    "`{text}` is not a limit: an integer of 0 or more, or -1 for unlimited"
                ))),
            }
        };
        let (soft, hard) = match limits.split_once(':') {
            Some((soft, hard)) => (limit(soft)?, limit(hard)?),
            None => {
                let value = limit(limits)?;
                (value, value)
            }
        };
        // -1 (unlimited) is above every number.
        let above = |value: i64| if value == -1 { i64::MAX } else { value };
        if above(soft) > above(hard) {
            return Err(invalid(format!(
                "the soft limit {soft} is above the hard limit {hard}"
            )));
        }
        Ok((name.to_string(), Ulimit { soft, hard }))
    }

    /// `--gpus SPEC`, in `docker run --gpus`'s words: `all`, `none`, a count, or devices
    /// (`device=0,1`, `"device=0,1"`, `0,1`, `GPU-…`).
    pub fn parse_gpus(spec: &str) -> Result<GpuRequest, SpecError> {
        let invalid = |message: String| SpecError::InvalidOverride {
            flag: "--gpus",
            spec: spec.to_string(),
            message,
        };
        let trimmed = spec.trim().trim_matches('"').trim_matches('\'');
        match trimmed {
            "all" => return Ok(GpuRequest::All),
            "none" => return Ok(GpuRequest::None),
            "" => return Err(invalid("write all, none, a count, or device=0,1".into())),
            _ => {}
        }
        if let Ok(count) = trimmed.parse::<u32>() {
            return match count {
                0 => Err(invalid("a count of 0 GPUs: write `--gpus none`".into())),
                count => Ok(GpuRequest::Count(count)),
            };
        }
        let devices = trimmed.strip_prefix("device=").unwrap_or(trimmed);
        let devices: Vec<String> = devices
            .split(',')
            .map(|device| device.trim().to_string())
            .collect();
        if let Some(bad) = devices.iter().find(|device| {
            device.is_empty()
                || !device.chars().all(|character| {
                    character.is_ascii_alphanumeric() || "-_/:".contains(character)
                })
        }) {
            return Err(invalid(format!(
                "`{bad}` is not a GPU index or UUID; write all, none, a count, or device=0,1"
            )));
        }
        Ok(GpuRequest::Devices(devices))
    }

    /// The profile with these overrides on top.
    pub fn apply(&self, profile: &Profile) -> Profile {
        let mut result = profile.clone();
        for (key, value) in &self.env {
            result.env.insert(key.clone(), value.clone());
        }
        if let Some(gpus) = &self.gpus {
            result.gpus = gpus.clone();
        }
        for (name, limit) in &self.ulimits {
            result.ulimits.insert(name.clone(), *limit);
        }
        for port in &self.ports {
            let same = |existing: &PortBinding| {
                existing.container == port.container && existing.protocol == port.protocol
            };
            match result.ports.iter().position(same) {
                // The first mapping of that port is replaced in place, the others dropped.
                Some(at) => {
                    result.ports.retain(|existing| !same(existing));
                    result
                        .ports
                        .insert(at.min(result.ports.len()), port.clone());
                }
                None => result.ports.push(port.clone()),
            }
        }
        for mount in &self.mounts {
            match result
                .mounts
                .iter_mut()
                .find(|existing| existing.target == mount.target)
            {
                Some(existing) => *existing = mount.clone(),
                None => result.mounts.push(mount.clone()),
            }
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::resolve::resolve_text;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|item| item.to_string()).collect()
    }

    fn no_environment(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn gpus_read_as_docker_run_gpus_reads_them() {
        assert_eq!(Overrides::parse_gpus("all").unwrap(), GpuRequest::All);
        assert_eq!(Overrides::parse_gpus("none").unwrap(), GpuRequest::None);
        assert_eq!(Overrides::parse_gpus("2").unwrap(), GpuRequest::Count(2));
        for spec in ["device=0,3", "\"device=0,3\"", "0,3"] {
            assert_eq!(
                Overrides::parse_gpus(spec).unwrap(),
                GpuRequest::Devices(strings(&["0", "3"])),
                "{spec}"
            );
        }
        assert_eq!(
            Overrides::parse_gpus("GPU-5d5b4f7a-0000").unwrap(),
            GpuRequest::Devices(strings(&["GPU-5d5b4f7a-0000"]))
        );
        for bad in ["0", "", "device=", "0,,1", "two gpus"] {
            let error = Overrides::parse_gpus(bad).unwrap_err().to_string();
            assert!(error.contains("--gpus"), "{bad}: {error}");
        }
    }

    #[test]
    fn env_replaces_ports_append_mounts_replace_by_target() {
        let resolved = resolve_text(
            "base.toml",
            r#"
image = "busybox:1"
env = { A = "1", B = "2" }
ports = ["8888:8888"]
mounts = ["./data:/data", "cache:/cache"]
"#,
        )
        .unwrap();
        let host = |key: &str| (key == "TOKEN").then(|| "secret".to_string());
        let overrides = Overrides::parse(
            &strings(&["B=3", "C=", "TOKEN"]),
            &strings(&["6006:6006"]),
            &strings(&["/srv/data:/data:ro", "models:/models"]),
            &host,
        )
        .unwrap();
        let profile = overrides.apply(&resolved.profile);
        let env: Vec<String> = profile
            .env
            .iter()
            .map(|(key, value)| format!("{key}={value}"))
            .collect();
        assert_eq!(env, ["A=1", "B=3", "C=", "TOKEN=secret"]);
        assert_eq!(overrides.from_shell, BTreeSet::from(["TOKEN".to_string()]));
        let ports: Vec<String> = profile.ports.iter().map(ToString::to_string).collect();
        assert_eq!(
            ports,
            ["127.0.0.1:8888:8888/tcp", "127.0.0.1:6006:6006/tcp"]
        );
        // The same container port again: the profile's mapping is replaced, so a port
        // conflict's `-p OTHER:PORT` hint really moves it.
        let moved = Overrides::parse(&[], &strings(&["18932:8888"]), &[], &host).unwrap();
        let ports: Vec<String> = moved
            .apply(&resolved.profile)
            .ports
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(ports, ["127.0.0.1:18932:8888/tcp"]);
        let mounts: Vec<String> = profile.mounts.iter().map(ToString::to_string).collect();
        assert_eq!(
            mounts,
            ["/srv/data:/data:ro", "cache:/cache", "models:/models"]
        );
    }

    #[test]
    fn ulimits_read_as_docker_run_ulimit_reads_them_and_replace_one_entry() {
        let resolved = resolve_text(
            "base.toml",
            "image = \"busybox:1\"\n[ulimits]\nmemlock = -1\nstack = 67108864\n",
        )
        .unwrap();
        let mut overrides = Overrides::default();
        for spec in ["memlock=65536", "nofile=1024:4096"] {
            overrides
                .ulimits
                .push(Overrides::parse_ulimit(spec).unwrap());
        }
        assert!(!overrides.is_empty());
        let profile = overrides.apply(&resolved.profile);
        let limits: Vec<String> = profile
            .ulimits
            .iter()
            .map(|(name, limit)| format!("{name}={}:{}", limit.soft, limit.hard))
            .collect();
        assert_eq!(
            limits,
            [
                "memlock=65536:65536",
                "nofile=1024:4096",
                "stack=67108864:67108864"
            ]
        );
        assert_eq!(
            Overrides::parse_ulimit("memlock=-1").unwrap().1,
            Ulimit { soft: -1, hard: -1 }
        );
        for (bad, said) in [
            ("memlok=1", "did you mean `memlock`"),
            ("memlock", "NAME=SOFT"),
            ("memlock=x", "`x` is not a limit"),
            ("memlock=-2", "`-2` is not a limit"),
            ("nofile=10:5", "above the hard limit"),
            ("nofile=-1:5", "above the hard limit"),
        ] {
            let error = Overrides::parse_ulimit(bad).unwrap_err();
            assert!(error.to_string().contains("--ulimit"), "{bad}: {error}");
            assert!(error.to_string().contains(said), "{bad}: {error}");
            assert!(error.hint().unwrap().contains("--ulimit memlock="), "{bad}");
        }
    }

    #[test]
    fn the_last_flag_of_a_key_says_whether_its_value_came_from_the_shell() {
        let host = |key: &str| Some(format!("{key} from the shell"));
        let given = Overrides::parse(&strings(&["A", "A=1", "B=2", "B"]), &[], &[], &host).unwrap();
        assert_eq!(given.from_shell, BTreeSet::from(["B".to_string()]));
    }

    #[test]
    fn bad_flags_name_the_flag() {
        let error = Overrides::parse(&strings(&["UNSET"]), &[], &[], &no_environment).unwrap_err();
        assert_eq!(
            error.to_string(),
            "`-e UNSET`: `UNSET` is not set in your environment"
        );
        assert!(error.hint().unwrap().contains("-e KEY=value"));
        let error = Overrides::parse(&strings(&["MY TOKEN=hunter2"]), &[], &[], &no_environment)
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "`-e MY TOKEN=…`: the variable name must be non-empty, without spaces"
        );
        for (env, ports, mounts, flag) in [
            (vec!["=x"], vec![], vec![], "-e"),
            (vec![], vec!["99999"], vec![], "-p"),
            (vec![], vec![], vec!["/a:relative"], "-v"),
        ] {
            let error = Overrides::parse(
                &strings(&env),
                &strings(&ports),
                &strings(&mounts),
                &no_environment,
            )
            .unwrap_err();
            assert!(
                matches!(&error, SpecError::InvalidOverride { flag: found, .. } if *found == flag),
                "{error:?}"
            );
        }
        assert!(
            Overrides::parse(&[], &[], &[], &no_environment)
                .unwrap()
                .is_empty()
        );
    }
}
