//! Tag families for `outdated`: `2.8.0-cuda12.8-cudnn9-runtime` belongs to the family
//! `*-cuda12.8-cudnn9-runtime`; a newer member has the same suffix and a higher version.

/// Splits a tag into its leading version and the rest: `2.8.0-cuda12.8-runtime` →
/// (2.8.0, `-cuda12.8-runtime`). Tags that do not start with a version have no family.
pub fn split(tag: &str) -> Option<(semver::Version, &str)> {
    let end = tag
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(tag.len());
    let (version, suffix) = tag.split_at(end);
    let version = version.trim_end_matches('.');
    let parts: Vec<&str> = version.split('.').collect();
    if parts.is_empty() || parts.len() > 3 || parts.iter().any(|part| part.is_empty()) {
        return None;
    }
    let number = |index: usize| {
        parts
            .get(index)
            .map_or(Some(0), |part| part.parse::<u64>().ok())
    };
    Some((
        semver::Version::new(number(0)?, number(1)?, number(2)?),
        suffix,
    ))
}

/// Tags of `tags` in the same family as `current` with a higher version, newest first.
pub fn newer_tags<'a>(current: &str, tags: &'a [String]) -> Vec<&'a str> {
    let Some((version, suffix)) = split(current) else {
        return Vec::new();
    };
    let mut newer: Vec<(semver::Version, &str)> = tags
        .iter()
        .filter_map(|tag| {
            let (candidate, candidate_suffix) = split(tag)?;
            (candidate_suffix == suffix && candidate > version).then_some((candidate, tag.as_str()))
        })
        .collect();
    newer.sort_by(|first, second| second.0.cmp(&first.0));
    newer.into_iter().map(|(_, tag)| tag).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_suffix_higher_version_only() {
        let tags: Vec<String> = [
            "2.7.1-cuda12.8-cudnn9-runtime",
            "2.8.0-cuda12.8-cudnn9-runtime",
            "2.9.1-cuda12.8-cudnn9-runtime",
            "2.9.1-cuda12.8-cudnn9-devel",
            "2.10.0-cuda12.8-cudnn9-runtime",
            "2.10.0-cuda13.0-cudnn9-runtime",
            "latest",
        ]
        .iter()
        .map(|tag| tag.to_string())
        .collect();
        assert_eq!(
            newer_tags("2.8.0-cuda12.8-cudnn9-runtime", &tags),
            [
                "2.10.0-cuda12.8-cudnn9-runtime",
                "2.9.1-cuda12.8-cudnn9-runtime"
            ]
        );
        assert!(newer_tags("latest", &tags).is_empty());
        assert_eq!(
            newer_tags(
                "25.01-py3",
                &["25.12-py3".to_string(), "24.12-py3".to_string()]
            ),
            ["25.12-py3"]
        );
    }
}
