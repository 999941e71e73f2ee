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
            // Fails under ENVCTL_REQUIRE_DOCKER=1 (as every other missing prerequisite).
            super::docker::skip_or_panic(
                "cannot mount a tmpfs",
                &super::docker::current_test_name(),
                "`mount -t tmpfs` was refused: a full disk is simulated with a tiny tmpfs, \
                 which needs root.\nFix: run the tests as root, as CI does.",
            );
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
