//! Test images for the nvidia-check and CUDA-library tests, built one way: the busybox test
//! image ([`docker::test_image`]) and what a test puts into it — the stand-in `python3` and
//! `nvidia-smi` of `tests/fixtures/nvidia-check/stand-in` ([`ImageBuild::stand_in`]), the
//! recorded scenarios under `/envctl-test/` ([`ImageBuild::scenarios`]), a site-packages
//! folder holding a package's real CUDA libraries with its wheel's RECORD, which is how the
//! scan names the package ([`ImageBuild::package`]), or a Dockerfile step of its own
//! ([`ImageBuild::step`]) — built by the classic builder (it uses the local base image as
//! it is; BuildKit may try a registry), labelled `envctl.test=1` and removed on drop.
//! [`import_package_image`] makes an image of one package and nothing else (what a scan
//! must find exactly).

// Test support: a failed step is the test's failure, with the step's own error.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::docker::{self, ImageGuard, TEST_LABEL};

/// How long one build may take (the base image is local: seconds, unless the daemon is
/// very busy).
const BUILD_LIMIT: Duration = Duration::from_secs(300);

/// The recordings of nvidia-check's tests: `stand-in/` and one folder per scenario.
pub fn nvidia_check_fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nvidia-check")
}

/// An image being put together: its build context (a temporary folder) and the
/// Dockerfile's steps after `FROM`.
pub struct ImageBuild {
    context: tempfile::TempDir,
    steps: String,
}

impl Default for ImageBuild {
    fn default() -> Self {
        Self::new()
    }
}

impl ImageBuild {
    /// The busybox test image, nothing added yet.
    pub fn new() -> ImageBuild {
        ImageBuild {
            context: tempfile::Builder::new()
                .prefix("envctl-test-image-")
                .tempdir()
                .unwrap(),
            steps: String::new(),
        }
    }

    /// The stand-in `python3` and `nvidia-smi`, first on PATH (`/usr/local/bin`).
    pub fn stand_in(mut self) -> ImageBuild {
        let stand_in = self.context.path().join("stand-in");
        std::fs::create_dir_all(&stand_in).unwrap();
        for program in ["python3", "nvidia-smi"] {
            let target = stand_in.join(program);
            std::fs::copy(
                nvidia_check_fixtures().join("stand-in").join(program),
                &target,
            )
            .unwrap();
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        self.steps.push_str("COPY stand-in/ /usr/local/bin/\n");
        self
    }

    /// The recorded `scenarios` (`python.json`, `nvidia-smi.txt`), under
    /// `/envctl-test/<scenario>/`, where the stand-ins read `ENVCTL_TEST_SCENARIO`'s.
    pub fn scenarios(mut self, scenarios: &[&str]) -> ImageBuild {
        for scenario in scenarios {
            let target = self.context.path().join("scenarios").join(scenario);
            std::fs::create_dir_all(&target).unwrap();
            for file in ["python.json", "nvidia-smi.txt"] {
                std::fs::copy(
                    nvidia_check_fixtures().join(scenario).join(file),
                    target.join(file),
                )
                .unwrap();
            }
        }
        self.steps.push_str("COPY scenarios/ /envctl-test/\n");
        self
    }

    /// `libraries` of `folder` installed as package `name` `version` in the site-packages
    /// folder `site` (a path without the leading `/`): under `<site>/<name>/`, with
    /// `<site>/<name>-<version>.dist-info/RECORD` listing them, as pip leaves a wheel.
    pub fn package(
        mut self,
        site: &str,
        (name, version): (&str, &str),
        folder: &Path,
        libraries: &[&str],
    ) -> ImageBuild {
        install_package(
            &self.context.path().join("site"),
            (name, version),
            folder,
            libraries,
        );
        self.steps.push_str(&format!("COPY site/ /{site}/\n"));
        self
    }

    /// A Dockerfile step of the test's own (`RUN …`).
    pub fn step(mut self, step: &str) -> ImageBuild {
        self.steps.push_str(step);
        self.steps.push('\n');
        self
    }

    /// Builds the image as `reference` and gives the guard that removes it (taken before
    /// the build, so a build that fails half-way leaves nothing either). Panics with the
    /// builder's stderr when it fails.
    pub fn build(self, reference: &str) -> ImageGuard {
        std::fs::write(
            self.context.path().join("Dockerfile"),
            format!(
                "FROM {}\n{}LABEL {TEST_LABEL}\n",
                docker::test_image(),
                self.steps
            ),
        )
        .unwrap();
        let guard = ImageGuard::new(reference);
        let mut build = Command::new("docker");
        build
            .env("DOCKER_BUILDKIT", "0")
            .args(["build", "--quiet", "--tag", reference])
            .arg(self.context.path());
        let output = docker::run_with_timeout(&mut build, BUILD_LIMIT).unwrap();
        assert!(
            output.status.success(),
            "docker build of {reference} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        guard
    }
}

/// `libraries` of `folder` installed as package `name` `version` in the site-packages
/// folder `site` of this machine: under `site/<name>/`, with
/// `site/<name>-<version>.dist-info/RECORD` listing them, as pip leaves a wheel.
pub fn install_package(
    site: &Path,
    (name, version): (&str, &str),
    folder: &Path,
    libraries: &[&str],
) {
    std::fs::create_dir_all(site.join(name)).unwrap();
    let mut record = String::new();
    for library in libraries {
        std::fs::copy(folder.join(library), site.join(name).join(library))
            .unwrap_or_else(|error| panic!("{}: {error}", folder.join(library).display()));
        record.push_str(&format!("{name}/{library},sha256=unchecked,0\n"));
    }
    let dist_info = site.join(format!("{name}-{version}.dist-info"));
    std::fs::create_dir_all(&dist_info).unwrap();
    std::fs::write(dist_info.join("RECORD"), record).unwrap();
}

/// An image of exactly one package and nothing else (no shell, no base image): a root
/// filesystem holding [`install_package`]'s folder at `site`, imported (`docker import`,
/// labelled `envctl.test=1`) as a one-layer image. Gives its work folder, its reference and
/// the guard that removes it.
pub fn import_package_image(
    site: &str,
    package: (&str, &str),
    folder: &Path,
    libraries: &[&str],
) -> (tempfile::TempDir, String, ImageGuard) {
    let work = tempfile::tempdir().unwrap();
    let root = work.path().join("root");
    install_package(&root.join(site), package, folder, libraries);
    let rootfs = work.path().join("rootfs.tar");
    let status = Command::new("tar")
        .arg("-C")
        .arg(&root)
        .arg("-cf")
        .arg(&rootfs)
        .arg(".")
        .status()
        .unwrap();
    assert!(status.success(), "tar: {status}");
    let reference = format!("{}:1", docker::unique_name("envctl-test-fatbin"));
    let guard = ImageGuard::new(reference.clone());
    docker::docker_stdout([
        "import",
        "--change",
        &format!("LABEL {TEST_LABEL}"),
        rootfs.to_str().unwrap(),
        reference.as_str(),
    ]);
    (work, reference, guard)
}
