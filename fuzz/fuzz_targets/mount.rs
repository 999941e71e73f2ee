//! Mount specs: parsing never panics, and a parsed mount round-trips through its text.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    if let Ok(mount) = envctl::profile::mounts::parse_mount_spec(text) {
        let again = envctl::profile::mounts::parse_mount_spec(&mount.to_string())
            .expect("a printed mount parses");
        assert_eq!(again, mount);
    }
});
