//! Bind mount sources as the daemon needs them: absolute host paths. `./x` and `../x`
//! resolve against the working directory, `~` and `~/x` against the home folder; the result
//! is cleaned lexically (no symlink is followed, nothing is read from disk).

use std::path::{Component, Path, PathBuf};

use super::error::SpecError;

/// The absolute host path a bind source written as `written` stands for.
pub fn resolve_bind_source(
    written: &str,
    working_directory: &Path,
    home: Option<&Path>,
) -> Result<PathBuf, SpecError> {
    let joined = if written == "~" || written.starts_with("~/") {
        let home = home.ok_or_else(|| SpecError::HomeUnknown {
            written: written.to_string(),
        })?;
        home.join(written.trim_start_matches('~').trim_start_matches('/'))
    } else if written.starts_with('~') {
        return Err(SpecError::OtherUsersHome {
            written: written.to_string(),
        });
    } else {
        // `join` keeps an absolute `written` as it is.
        working_directory.join(written)
    };
    let cleaned = clean(&joined);
    if !cleaned.is_absolute() {
        return Err(SpecError::NotAbsolute {
            written: written.to_string(),
            path: cleaned,
        });
    }
    Ok(cleaned)
}

/// Drops `.` and empty components and folds `..` into its parent, like Go's
/// `filepath.Clean`, without touching the disk, so the daemon and `docker inspect` show one
/// spelling per folder. The exports (`export`) clean the paths they write with it too.
pub fn clean(path: &Path) -> PathBuf {
    let mut cleaned = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            // `/..` is `/`; a relative path's leading `..` has no parent to fold into.
            Component::ParentDir => {
                if !cleaned.pop() && !cleaned.has_root() {
                    cleaned.push("..");
                }
            }
            other => cleaned.push(other),
        }
    }
    cleaned
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(written: &str) -> Result<PathBuf, SpecError> {
        resolve_bind_source(
            written,
            Path::new("/work/project"),
            Some(Path::new("/home/ada")),
        )
    }

    #[test]
    fn relative_home_and_absolute_sources() {
        let cases = [
            ("./data", "/work/project/data"),
            ("./data/", "/work/project/data"),
            (".", "/work/project"),
            ("../shared/./models", "/work/shared/models"),
            ("~", "/home/ada"),
            ("~/datasets/imagenet", "/home/ada/datasets/imagenet"),
            ("/srv/cache", "/srv/cache"),
            ("/srv//cache/../data", "/srv/data"),
            ("/../..", "/"),
        ];
        for (written, expected) in cases {
            assert_eq!(
                resolve(written).unwrap(),
                PathBuf::from(expected),
                "{written}"
            );
        }
    }

    #[test]
    fn home_forms_envctl_cannot_expand() {
        assert!(matches!(
            resolve_bind_source("~/x", Path::new("/w"), None),
            Err(SpecError::HomeUnknown { .. })
        ));
        assert!(matches!(
            resolve("~bob/x"),
            Err(SpecError::OtherUsersHome { .. })
        ));
        assert!(matches!(
            resolve_bind_source("./x", Path::new("relative"), None),
            Err(SpecError::NotAbsolute { .. })
        ));
    }
}
