//! The profiles shipped inside the binary (`profiles/*.toml`, embedded by `build.rs`).

include!(concat!(env!("OUT_DIR"), "/bundled_profiles.rs"));

/// The bundled profiles whose image tag exists by construction only: their header says
/// it could not be confirmed from a primary source (profiles/README.md). A hint that
/// suggests an image to someone who has none working never names one of these.
pub const TAG_UNCONFIRMED: &[&str] = &[
    "pytorch-2.12",
    "pytorch-2.13",
    "pytorch-2.14",
    "pytorch-2.15",
];

/// The text of a bundled profile.
pub fn find(name: &str) -> Option<&'static str> {
    BUNDLED
        .iter()
        .find(|(bundled_name, _)| *bundled_name == name)
        .map(|(_, text)| *text)
}

/// The bundled PyTorch profiles, newest first: what a failing GPU's hint can point to.
pub fn pytorch_candidates() -> Vec<(
    String,
    crate::profile::model::TorchVersion,
    crate::profile::model::CudaVersion,
)> {
    let search =
        crate::profile::SearchPath::new(std::path::PathBuf::from("/nonexistent"), Vec::new(), None);
    let mut candidates: Vec<_> = BUNDLED
        .iter()
        .filter_map(|(name, _)| {
            search
                .resolve_file(crate::profile::ProfileFile::Bundled {
                    name: name.to_string(),
                })
                .ok()
        })
        .filter_map(|resolved| {
            let stack = resolved.profile.stack;
            Some((resolved.profile.name, stack.torch?, stack.cuda?))
        })
        .filter(|(_, torch, _)| torch.version.pre.is_empty())
        .collect();
    candidates.sort_by(|first, second| {
        second
            .1
            .version
            .cmp(&first.1.version)
            .then(first.0.len().cmp(&second.0.len()))
    });
    candidates
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The list says what the files say: a profile is listed exactly when its header
    /// says its tag could not be confirmed.
    #[test]
    fn the_unconfirmed_list_is_the_files_own_word() {
        for (name, text) in BUNDLED {
            let header: String = text
                .lines()
                .take_while(|line| line.starts_with('#'))
                .collect::<Vec<_>>()
                .join(" ");
            assert_eq!(
                header.contains("could NOT be confirmed"),
                TAG_UNCONFIRMED.contains(name),
                "{name}"
            );
        }
        for name in TAG_UNCONFIRMED {
            assert!(find(name).is_some(), "{name} is no bundled profile");
        }
    }
}
