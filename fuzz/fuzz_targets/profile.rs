//! Arbitrary bytes as a profile file: decoding, parsing and validation never panic, and
//! every problem has a place.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = envctl::profile::file::decode_profile_bytes(data.to_vec(), "fuzz.toml") else {
        return;
    };
    let (_, diagnostics) = envctl::profile::validate::validate("fuzz.toml", &text);
    for diagnostic in diagnostics {
        assert!(diagnostic.line >= 1 && diagnostic.column >= 1);
    }
    let _ = envctl::profile::resolve::resolve_text("fuzz.toml", &text);
});
