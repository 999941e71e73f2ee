//! Image references: parsing never panics, and what parses prints back to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    if let Ok(reference) = text.parse::<envctl::profile::image::ImageReference>() {
        let again: envctl::profile::image::ImageReference = reference
            .to_string()
            .parse()
            .expect("a printed reference parses");
        assert_eq!(again, reference);
    }
});
