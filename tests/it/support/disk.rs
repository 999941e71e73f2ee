//! A full disk for tests: a tiny tmpfs mounted over a temporary folder and filled up.

use std::path::Path;

/// A tiny tmpfs, filled up: a disk with no room left. Needs root (CI runs as root); when the
/// mount is refused the test fails if CI asked for the daemon tests, and says so otherwise.
pub struct FullDisk {
    mount: tempfile::TempDir,
}

impl FullDisk {
    pub fn new() -> Option<FullDisk> {
        let mount = tempfile::tempdir()
            .unwrap_or_else(|error| panic!("cannot make a temporary folder: {error}"));
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
            .arg(mount.path())
            .status()
            .is_ok_and(|status| status.success());
        if !mounted {
            let message = "cannot mount a tmpfs (needs root) to simulate a full disk";
            if std::env::var_os("ENVCTL_REQUIRE_DOCKER").is_some() {
                panic!("{message}");
            }
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "*** SKIPPED: {message}");
            return None;
        }
        Some(FullDisk { mount })
    }

    pub fn path(&self) -> &Path {
        self.mount.path()
    }

    /// Takes every free byte.
    pub fn fill(&self) {
        let _ = std::fs::write(self.path().join("filler"), vec![0u8; 1 << 20]);
    }
}

impl Drop for FullDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(self.mount.path())
            .status();
    }
}
