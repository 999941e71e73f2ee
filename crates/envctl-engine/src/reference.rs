//! Names and ids that go into Engine API paths, checked in one place.
//!
//! bollard builds a path by pasting the name in (`/containers/{name}/json`) and lets
//! `url::Url::join` resolve it, so a name is never escaped: `""` and `.` reach
//! `/containers/json`, and `x/../../v1.41/images/…` another endpoint altogether.
//! Escaping would not help either, since the daemon's router decodes and cleans the path
//! before it matches. So every name or id envctl puts in a path passes one of these checks
//! first, and anything else is refused before a byte is sent.

use super::EngineError;

/// Whether `value` can name a container, an exec or a volume in a path: Docker's own
/// name rule (`[a-zA-Z0-9][a-zA-Z0-9_.-]*`, with an optional leading `/`), which every
/// hexadecimal id also meets. Nothing it accepts contains `/`, `?`, `#` or `%`, and none
/// is `.` or `..`.
pub fn is_plain_name(value: &str) -> bool {
    let name = value.strip_prefix('/').unwrap_or(value);
    let mut characters = name.chars();
    characters
        .next()
        .is_some_and(|first| first.is_ascii_alphanumeric())
        && characters.all(|character| {
            character.is_ascii_alphanumeric() || matches!(character, '_' | '.' | '-')
        })
}

/// `value` when it can name a container (name or id) in a path.
/// The daemon's own lists write names with a leading `/` (`/envctl-pytorch`), which is
/// accepted and dropped: pasted as is it would make `/containers//envctl-pytorch/json`, a
/// path the daemon does not route to the container (a TARGET typed `/name` did this).
pub fn container(value: &str) -> Result<&str, EngineError> {
    checked(value, "container name or id", is_plain_name)
        .map(|name| name.strip_prefix('/').unwrap_or(name))
}

/// `value` when it can name an exec instance (the daemon's id for it) in a path.
pub fn exec(value: &str) -> Result<&str, EngineError> {
    checked(value, "exec id", is_plain_name)
}

/// `value` when it can name a volume in a path.
pub fn volume(value: &str) -> Result<&str, EngineError> {
    checked(value, "volume name", is_plain_name)
}

/// `value` when it can name an image in a path (`/images/{name}/json` takes slashes):
/// `[host[:port]/]path[:tag][@digest]` or an image id. Each `/`-separated part is
/// non-empty and not `.` or `..`, and only the characters a reference may hold occur.
pub fn image(value: &str) -> Result<&str, EngineError> {
    checked(value, "image reference", |value| {
        !value.is_empty()
            && value.split('/').all(|part| {
                !part.is_empty()
                    && part != "."
                    && part != ".."
                    && part.chars().all(|character| {
                        character.is_ascii_alphanumeric()
                            || matches!(character, '_' | '.' | '-' | ':' | '@' | '[' | ']')
                    })
            })
    })
}

fn checked<'a>(
    value: &'a str,
    what: &'static str,
    rule: impl Fn(&str) -> bool,
) -> Result<&'a str, EngineError> {
    if rule(value) {
        Ok(value)
    } else {
        Err(EngineError::InvalidReference {
            what,
            value: value.to_string(),
        })
    }
}

/// Whether `value` is a full container id or a prefix long enough to trust: at least 12
/// hexadecimal digits, as `docker ps` shows them. A shorter prefix could as well be a
/// profile's or a container's name (`1548e`), so envctl never resolves one as an id.
pub fn is_id_prefix(value: &str) -> bool {
    (12..=64).contains(&value.len()) && value.chars().all(|digit| digit.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_would_change_the_path_are_refused() {
        for bad in [
            "",
            ".",
            "..",
            "/",
            "x/../../v1.41/images/busybox/json",
            "x?all=1",
            "x#y",
            "x%2F..",
            "-x",
            "x y",
            "x\0",
            "é",
        ] {
            assert!(container(bad).is_err(), "{bad:?}");
            assert!(exec(bad).is_err(), "{bad:?}");
            assert!(volume(bad).is_err(), "{bad:?}");
        }
        assert_eq!(container("/envctl-pytorch").unwrap(), "envctl-pytorch");
        for good in [
            "envctl-pytorch",
            "/envctl-pytorch",
            "a",
            "a.b_c-d",
            "0123abcdef",
        ] {
            assert_eq!(container(good).ok(), good.strip_prefix('/').or(Some(good)));
        }
        let error = container("x/../y").unwrap_err();
        assert_eq!(
            error.to_string(),
            "`x/../y` is not a valid container name or id for the Docker Engine API"
        );
    }

    #[test]
    fn image_references_keep_their_slashes_but_not_dot_segments() {
        for good in [
            "busybox",
            "envctl-test/busybox:1",
            "127.0.0.1:5000/x/y:tag",
            "nvcr.io/nvidia/pytorch@sha256:0123abcd",
            "sha256:0123abcd",
            "[::1]:5000/x",
        ] {
            assert_eq!(image(good).ok(), Some(good), "{good}");
        }
        for bad in [
            "",
            ".",
            "x/../../containers/json",
            "/x",
            "x/",
            "x//y",
            "x?y",
            "x#y",
            "x%2e",
            "x y",
        ] {
            assert!(image(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn only_twelve_hex_digits_or_more_count_as_an_id() {
        assert!(!is_id_prefix("1548e"));
        assert!(!is_id_prefix("1548e0123ab"));
        assert!(is_id_prefix("1548e0123abc"));
        assert!(is_id_prefix(&"a".repeat(64)));
        assert!(!is_id_prefix(&"a".repeat(65)));
        assert!(!is_id_prefix("1548e0123abg"));
    }
}
