//! Port specs: parsing never panics, and a parsed binding round-trips through its text.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    if let Ok(binding) = envctl::profile::ports::parse_port_spec(text) {
        let again = envctl::profile::ports::parse_port_spec(&binding.to_string())
            .expect("a printed binding parses");
        assert_eq!(again, binding);
    }
});
