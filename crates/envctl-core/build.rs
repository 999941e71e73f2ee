//! Embeds `profiles/*.toml` into the binary: writes `bundled_profiles.rs`, a sorted list of
//! (name, contents) pairs, so adding a profile needs no code change.

use std::fmt::Write as _;
use std::path::Path;
use std::{env, fs};

// A build script is its own program: cargo hands it OUT_DIR through the environment.
#[allow(clippy::disallowed_methods)]
fn main() {
    let directory = Path::new("../../profiles");
    println!("cargo::rerun-if-changed=../../profiles");
    let mut names = Vec::new();
    if let Ok(entries) = fs::read_dir(directory) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path
                .extension()
                .is_some_and(|extension| extension == "toml")
                && let Some(stem) = path.file_stem().and_then(|stem| stem.to_str())
            {
                println!("cargo::rerun-if-changed={}", path.display());
                names.push(stem.to_string());
            }
        }
    }
    names.sort();
    let mut code = String::from(
        "/// Bundled profiles: (name, TOML text), sorted by name.\npub static BUNDLED: &[(&str, &str)] = &[\n",
    );
    for name in &names {
        let _ = writeln!(
            code,
            "    ({name:?}, include_str!(concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/../../profiles/{name}.toml\"))),"
        );
    }
    code.push_str("];\n");
    let Some(out_dir) = env::var_os("OUT_DIR") else {
        panic!("cargo sets OUT_DIR for build scripts");
    };
    if let Err(error) = fs::write(Path::new(&out_dir).join("bundled_profiles.rs"), code) {
        panic!("cannot write bundled_profiles.rs: {error}");
    }
}
