//! Mounts in Docker's short syntax (`source:target[:ro|rw]`), shared by the long form.

use super::model::{Mount, MountKind};

/// Parses `./data:/data:ro`, `/srv/cache:/cache`, `models:/models` (a named volume).
pub fn parse_mount_spec(spec: &str) -> Result<Mount, String> {
    let parts: Vec<&str> = spec.split(':').collect();
    let (source, target, options) = match parts.as_slice() {
        [source, target] => (*source, *target, None),
        [source, target, options] => (*source, *target, Some(*options)),
        _ => {
            return Err(format!(
                "mount `{spec}` is not `SOURCE:TARGET` or `SOURCE:TARGET:ro`"
            ));
        }
    };
    let mut read_only = false;
    if let Some(options) = options {
        let mut seen_mode = false;
        for option in options.split(',') {
            match option {
                "ro" | "rw" if seen_mode => {
                    return Err(format!("mount `{spec}` sets ro/rw twice"));
                }
                "ro" | "rw" => {
                    seen_mode = true;
                    read_only = option == "ro";
                }
                _ => return Err(format!("mount option `{option}` is not `ro` or `rw`")),
            }
        }
    }
    make_mount(source, target, read_only)
}

/// Builds a mount from its parts (short and long forms meet here).
pub fn make_mount(source: &str, target: &str, read_only: bool) -> Result<Mount, String> {
    if source.is_empty() {
        return Err("mount source is empty".into());
    }
    if source.contains('\0') || target.contains('\0') {
        return Err("mount paths cannot contain NUL".into());
    }
    if !target.starts_with('/') {
        return Err(format!(
            "mount target `{target}` must be an absolute path in the container"
        ));
    }
    let kind = mount_kind(source)?;
    let target = normalize_target(target);
    if target == "/" {
        return Err(
            "mount target `/` would hide the container's whole filesystem; Docker refuses it"
                .into(),
        );
    }
    Ok(Mount {
        kind,
        source: source.to_string(),
        target,
        read_only,
    })
}

/// Host paths start with `/`, `.` or `~`; anything else is a named volume, as in docker.
fn mount_kind(source: &str) -> Result<MountKind, String> {
    if source.starts_with(['/', '.', '~']) {
        return Ok(MountKind::Bind);
    }
    let mut chars = source.chars();
    let valid_volume = chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if valid_volume {
        Ok(MountKind::Volume)
    } else {
        Err(format!(
            "mount source `{source}` is neither a path (start it with `/`, `./` or `~/`) nor a volume name"
        ))
    }
}

/// Cleans a container path as Docker does before comparing mount points: `//data`,
/// `/data/` and `/x/../data` are all `/data`.
pub fn normalize_target(target: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    format!("/{}", parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_forms() {
        let mount = parse_mount_spec("./data:/data:ro").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((mount.kind, mount.read_only), (MountKind::Bind, true));
        let mount = parse_mount_spec("models:/models/").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (mount.kind, mount.target.as_str()),
            (MountKind::Volume, "/models")
        );
        assert!(
            !parse_mount_spec("/a:/b:rw")
                .unwrap_or_else(|e| panic!("{e}"))
                .read_only
        );
    }

    #[test]
    fn rejects_bad_specs() {
        for bad in [
            "",
            "/a",
            ":/b",
            "/a:b",
            "/a:/b:rx",
            "/a:/b:ro,rw",
            "a:b:c:d",
            "-x:/y",
            "a b:/c",
        ] {
            assert!(parse_mount_spec(bad).is_err(), "{bad:?} should be rejected");
        }
    }
}
