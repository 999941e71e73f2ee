//! Who runs envctl: the real uid, and its login name, for the ownership of containers
//! (`envctl.uid`, `envctl.user`) and the host policy's per-user limits.
//!
//! The uid is the real one of `/proc/self/status` (`Uid:` lists real, effective, saved and
//! filesystem uids), so a set-uid wrapper does not change who asks. Its name comes from
//! `/etc/passwd`, then from the absolute `/usr/bin/getent passwd UID` (users of LDAP or
//! SSSD are in no file). Never from `PATH` (a script in `~/.local/bin` could answer any
//! name) and never from `USER` (whoever runs envctl sets it): a uid that no database names
//! is its number. envctl has no `unsafe` to call `getpwuid_r` with.

use std::path::Path;

/// The system's own `getent`, by its absolute path.
const GETENT: &str = "/usr/bin/getent";

pub use envctl_facts::user::User;

/// The real uid and its login name, read under `root` (`/` on a real host).
pub fn current(root: &Path) -> User {
    current_with(root, |uid| {
        getent(&root.join(GETENT.trim_start_matches('/')), uid)
    })
}

/// [`current`] with `lookup` in place of `getent`.
fn current_with(root: &Path, lookup: impl FnOnce(u32) -> Option<String>) -> User {
    match real_uid_of(root, "self") {
        Some(uid) => User {
            uid: Some(uid),
            name: name_of_uid(root, uid, lookup),
            identity: None,
        },
        None => User {
            uid: None,
            name: "unknown user".into(),
            identity: None,
        },
    }
}

/// Who runs process `pid`: the login name of its real uid from `etc/passwd` under `root`,
/// else the uid's number; `None` when `/proc` does not say (the process ended, or it is
/// not this host's). No directory service is asked per process.
pub fn process_user(root: &Path, pid: u32) -> Option<String> {
    let uid = real_uid_of(root, &pid.to_string())?;
    Some(name_of_uid(root, uid, |_| None))
}

/// The login name of `uid` on this host (`/etc/passwd`), else its number.
pub fn name_of_uid_here(uid: u32) -> String {
    name_of_uid(Path::new("/"), uid, |_| None)
}

/// The real uid of `proc/PROCESS/status` under `root` (`self` or a PID).
fn real_uid_of(root: &Path, process: &str) -> Option<u32> {
    std::fs::read_to_string(root.join("proc").join(process).join("status"))
        .ok()
        .and_then(|status| real_uid(&status))
}

/// The login name of `uid`: `etc/passwd` under `root`, then `lookup` (a directory
/// service), else the number.
fn name_of_uid(root: &Path, uid: u32, lookup: impl FnOnce(u32) -> Option<String>) -> String {
    std::fs::read_to_string(root.join("etc/passwd"))
        .ok()
        .and_then(|passwd| name_of(&passwd, uid))
        .or_else(|| lookup(uid))
        .unwrap_or_else(|| uid.to_string())
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

/// `getent passwd UID` by its absolute path, when the tool is there and knows the uid.
fn getent(program: &Path, uid: u32) -> Option<String> {
    if !program.is_file() {
        return None;
    }
    let output = std::process::Command::new(program)
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
        let user = current_with(root.path(), nobody);
        assert_eq!((user.uid, user.name.as_str()), (Some(4242), "grace"));
        std::fs::write(root.path().join("etc/passwd"), "").unwrap();
        // Not in the file: the directory service, then the number (never `USER`).
        let directory = |uid| (uid == 4242).then(|| "ldap-grace".to_string());
        assert_eq!(current_with(root.path(), directory).name, "ldap-grace");
        assert_eq!(current_with(root.path(), nobody).name, "4242");
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(
            current_with(empty.path(), nobody),
            User {
                uid: None,
                name: "unknown user".into(),
                identity: None,
            }
        );
    }

    #[test]
    fn getent_is_asked_only_by_its_absolute_path() {
        // A `getent` on PATH is never run: the lookup goes to the file under the root
        // only, and a root without one gives the number.
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("proc/self")).unwrap();
        std::fs::write(root.path().join("proc/self/status"), "Uid:\t777\t0\t0\t0\n").unwrap();
        assert_eq!(current(root.path()).name, "777");
    }
}
