//! The profiles shipped inside the binary (`profiles/*.toml`, embedded by `build.rs`).

include!(concat!(env!("OUT_DIR"), "/bundled_profiles.rs"));

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
