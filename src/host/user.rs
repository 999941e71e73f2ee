//! Who runs envctl: the login name of the process's real uid, for the host policy's
//! per-user limits and the `envctl.user` label.
//!
//! The uid is the real one of `/proc/self/status` (`Uid:` lists real, effective, saved and
//! filesystem uids), so a set-uid wrapper does not change who asks. Its name comes from
//! `/etc/passwd`, then from `getent passwd UID` (users of LDAP or other NSS sources are in
//! no file), then from `USER`; envctl has no `unsafe` to call `getpwuid_r` with.

use std::path::Path;

/// The login name of the real uid, or `fallback` (`USER`) when no database names it, or
/// `uid N` when nothing does.
pub fn login_name(root: &Path, fallback: Option<String>) -> String {
    login_name_with(root, fallback, getent)
}

/// [`login_name`] with `lookup` in place of `getent`.
fn login_name_with(
    root: &Path,
    fallback: Option<String>,
    lookup: impl FnOnce(u32) -> Option<String>,
) -> String {
    let uid = std::fs::read_to_string(root.join("proc/self/status"))
        .ok()
        .and_then(|status| real_uid(&status));
    let Some(uid) = uid else {
        return fallback.unwrap_or_else(|| "unknown user".into());
    };
    std::fs::read_to_string(root.join("etc/passwd"))
        .ok()
        .and_then(|passwd| name_of(&passwd, uid))
        .or_else(|| lookup(uid))
        .or(fallback)
        .unwrap_or_else(|| format!("uid {uid}"))
}

/// The real uid: the first number of the `Uid:` line.
fn real_uid(status: &str) -> Option<u32> {
    status
        .lines()
        .find_map(|line| line.strip_prefix("Uid:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The name of the first `passwd` entry (`name:x:uid:gid:…`) with `uid`.
fn name_of(passwd: &str, uid: u32) -> Option<String> {
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        let _password = fields.next()?;
        let entry_uid: u32 = fields.next()?.parse().ok()?;
        (entry_uid == uid && !name.is_empty() && !name.starts_with('#')).then(|| name.to_string())
    })
}

/// `getent passwd UID`, when the tool is there and knows the uid.
fn getent(uid: u32) -> Option<String> {
    let output = std::process::Command::new("getent")
        .args(["passwd", &uid.to_string()])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    name_of(&String::from_utf8_lossy(&output.stdout), uid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_real_uid_is_the_first_of_the_line() {
        let status =
            "Name:\tenvctl\nUmask:\t0022\nUid:\t1000\t0\t0\t0\nGid:\t1000\t1000\t1000\t1000\n";
        assert_eq!(real_uid(status), Some(1000));
        assert_eq!(real_uid("Name:\tx\n"), None);
    }

    #[test]
    fn names_come_from_the_matching_entry() {
        let passwd =
            "root:x:0:0:root:/root:/bin/bash\n# comment\nada:x:1000:1000:Ada:/home/ada:/bin/sh\n";
        assert_eq!(name_of(passwd, 1000).as_deref(), Some("ada"));
        assert_eq!(name_of(passwd, 0).as_deref(), Some("root"));
        assert_eq!(name_of(passwd, 4242), None);
    }

    #[test]
    fn a_fake_machine_is_read_under_its_root() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("proc/self")).unwrap();
        std::fs::create_dir_all(root.path().join("etc")).unwrap();
        std::fs::write(
            root.path().join("proc/self/status"),
            "Uid:\t4242\t4242\t4242\t4242\n",
        )
        .unwrap();
        std::fs::write(
            root.path().join("etc/passwd"),
            "grace:x:4242:4242::/home/grace:/bin/sh\n",
        )
        .unwrap();
        let nobody = |_| None;
        assert_eq!(
            login_name_with(root.path(), Some("mallory".into()), nobody),
            "grace"
        );
        std::fs::write(root.path().join("etc/passwd"), "").unwrap();
        // Not in the file: the directory service, then `USER`, then the number.
        let directory = |uid| (uid == 4242).then(|| "ldap-grace".to_string());
        assert_eq!(
            login_name_with(root.path(), Some("mallory".into()), directory),
            "ldap-grace"
        );
        assert_eq!(
            login_name_with(root.path(), Some("mallory".into()), nobody),
            "mallory"
        );
        assert_eq!(login_name_with(root.path(), None, nobody), "uid 4242");
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(login_name_with(empty.path(), None, nobody), "unknown user");
    }
}
