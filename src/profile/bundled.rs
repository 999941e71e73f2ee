//! The profiles shipped inside the binary (`profiles/*.toml`, embedded by `build.rs`).

include!(concat!(env!("OUT_DIR"), "/bundled_profiles.rs"));

/// The text of a bundled profile.
pub fn find(name: &str) -> Option<&'static str> {
    BUNDLED
        .iter()
        .find(|(bundled_name, _)| *bundled_name == name)
        .map(|(_, text)| *text)
}
