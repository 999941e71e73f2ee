//! Which files a profile may bring in through `extends`: only files inside the profile
//! search folders and the project of the profile named, judged on real paths (symbolic
//! links resolved), so that a cloned repository's profile cannot make envctl read, and
//! quote in its diagnostics, a file of the host such as `/etc/shadow` or `~/.ssh/…`.
//!
//! The project of a chain is the folder that holds the profile named (as spelled, its
//! folders' links resolved), or the folder above it when that folder is an `envctl/`
//! profile folder (`PROJECT/envctl/NAME.toml`). The bundled profiles are not on disk and
//! extend bundled profiles only.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::file::opened_path;

/// The folders a chain's files must lie in, as real paths.
#[derive(Debug, Clone)]
pub struct Confinement {
    roots: Vec<PathBuf>,
}

impl Confinement {
    /// The search folders that exist, and the project of the file `named` (when on disk).
    pub fn new<'a>(folders: impl IntoIterator<Item = &'a Path>, named: Option<&Path>) -> Self {
        let mut roots: Vec<PathBuf> = folders
            .into_iter()
            .filter_map(|folder| std::fs::canonicalize(folder).ok())
            .collect();
        roots.extend(named.and_then(project_of));
        roots.sort();
        roots.dedup();
        Confinement { roots }
    }

    /// The real path of `path` when it lies inside a root; else the real path it escapes
    /// to (`Err`). A path that cannot be resolved (missing, a dangling link) is `Ok(None)`:
    /// there is nothing to read, the reader says so, and [`Self::admit_opened`] judges
    /// whatever appears there meanwhile.
    pub fn admit(&self, path: &Path) -> Result<Option<PathBuf>, PathBuf> {
        let Ok(real) = std::fs::canonicalize(path) else {
            return Ok(None);
        };
        if self.contains(&real) {
            Ok(Some(real))
        } else {
            Err(real)
        }
    }

    /// Whether an opened file lies inside a root, by the path the kernel gives for it
    /// (so a folder swapped for a link after [`Self::admit`] is still caught); where the
    /// kernel gives none, `checked` (the real path admitted before the open, else the path
    /// as given) stands.
    pub fn admit_opened(&self, file: &File, checked: &Path) -> Result<(), PathBuf> {
        match opened_path(file) {
            Some(real) if !self.contains(&real) => Err(real),
            Some(_) => Ok(()),
            None if self.contains(checked) => Ok(()),
            None => Err(checked.to_path_buf()),
        }
    }

    fn contains(&self, real: &Path) -> bool {
        // Component-wise: `/srv/envctl-other` is not inside `/srv/envctl`.
        self.roots.iter().any(|root| real.starts_with(root))
    }

    /// The folders, for a hint.
    pub fn describe(&self) -> String {
        if self.roots.is_empty() {
            return "no profile folder exists".into();
        }
        self.roots
            .iter()
            .map(|root| format!("`{}`", root.display()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The project of a profile file: its folder, or the folder above an `envctl/` folder.
fn project_of(file: &Path) -> Option<PathBuf> {
    let folder = match file.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let folder = std::fs::canonicalize(folder).ok()?;
    if folder.file_name().is_some_and(|name| name == "envctl") {
        folder.parent().map(Path::to_path_buf)
    } else {
        Some(folder)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder() -> tempfile::TempDir {
        tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"))
    }

    #[test]
    fn files_inside_the_folders_and_the_project_are_admitted_and_escapes_are_not() {
        let sandbox = folder();
        let root = std::fs::canonicalize(sandbox.path()).unwrap_or_else(|error| panic!("{error}"));
        let project = root.join("repo");
        let profiles = project.join("envctl");
        let user = root.join("user");
        for path in [&profiles, &user, &root.join("elsewhere")] {
            std::fs::create_dir_all(path).unwrap_or_else(|error| panic!("{error}"));
        }
        for path in [
            profiles.join("a.toml"),
            project.join("shared.toml"),
            user.join("u.toml"),
            root.join("elsewhere/x.toml"),
            root.join("repo-other.toml"),
        ] {
            std::fs::write(&path, "").unwrap_or_else(|error| panic!("{error}"));
        }
        std::os::unix::fs::symlink(root.join("elsewhere/x.toml"), profiles.join("link.toml"))
            .unwrap_or_else(|error| panic!("{error}"));
        let confinement = Confinement::new(
            [profiles.as_path(), user.as_path()],
            Some(&profiles.join("a.toml")),
        );
        for inside in [
            profiles.join("a.toml"),
            profiles.join("../shared.toml"),
            user.join("u.toml"),
        ] {
            assert!(
                matches!(confinement.admit(&inside), Ok(Some(_))),
                "{}",
                inside.display()
            );
        }
        for (outside, real) in [
            (
                profiles.join("../../elsewhere/x.toml"),
                root.join("elsewhere/x.toml"),
            ),
            (profiles.join("link.toml"), root.join("elsewhere/x.toml")),
            (
                profiles.join("../../repo-other.toml"),
                root.join("repo-other.toml"),
            ),
        ] {
            assert_eq!(
                confinement.admit(&outside),
                Err(real),
                "{}",
                outside.display()
            );
        }
        assert_eq!(confinement.admit(&profiles.join("missing.toml")), Ok(None));
    }
}
