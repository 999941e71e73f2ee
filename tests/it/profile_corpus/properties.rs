//! Property tests: the validator, the read path and the syntax parsers (ports, mounts, sizes,
//! images) never panic, and their diagnostics point inside the text.

use super::*;

/// Pieces of TOML syntax, valid and broken, to glue together at random.
const SYNTAX: &[&str] = &[
    "\n",
    "\n",
    "\n",
    " ",
    "\t",
    "\r\n",
    "\r",
    "=",
    " = ",
    "\"",
    "'",
    "\"\"\"",
    "'''",
    "[",
    "]",
    "[[",
    "]]",
    "{",
    "}",
    ",",
    ".",
    "#",
    "# comment\n",
    "\\",
    "\\u00e9",
    "\\x",
    "\0",
    "é",
    "日本",
    "🚀",
    "\u{feff}",
    "[stack]\n",
    "[ulimits]\n",
    "[commands]\n",
    "[env]\n",
    "[gpus]\n",
    "[[ports]]\n",
    "[[mounts]]\n",
];

/// The keys envctl knows, at every level, and a few it does not.
const KEYS: &[&str] = &[
    "name",
    "description",
    "extends",
    "image",
    "command",
    "workdir",
    "user",
    "gpus",
    "memory",
    "memroy",
    "cpus",
    "shm_size",
    "ipc",
    "ports",
    "mounts",
    "env",
    "ulimits",
    "stack",
    "commands",
    "cuda",
    "torch",
    "cudnn",
    "count",
    "devices",
    "host_ip",
    "host",
    "container",
    "protocol",
    "source",
    "target",
    "read_only",
    "soft",
    "hard",
    "nofile",
    "memlock",
    "nvidia-check",
    "train",
    "\"A=B\"",
    "\"\"",
    "-x",
    "stack.cuda",
    "gpus.count",
    "env.A",
];

/// Values, valid and not, of every type.
const VALUES: &[&str] = &[
    "\"pytorch/pytorch:2.8.0\"",
    "\"PyTorch:x\"",
    "\"a@sha256:00\"",
    "\"\"",
    "\"16g\"",
    "\"0\"",
    "\"-1\"",
    "\"6m\"",
    "\"1.5t\"",
    "\"x\"",
    "\"all\"",
    "\"alll\"",
    "\"none\"",
    "\"optional\"",
    "\"GPU-5f8c1d0e-9c4b-4a3e-8f2a-123456789abc\"",
    "\"MIG-x\"",
    "\"8888:8888\"",
    "\"[::1]:1:1/udp\"",
    "\"0.0.0.0::80\"",
    "\"8000-8010:1-11\"",
    "\"65536\"",
    "\"./d:/d:ro\"",
    "\":/x\"",
    "\"a:b\"",
    "\"12.8\"",
    "\"2.8.0+cu128\"",
    "\"2.8\"",
    "\"host\"",
    "\"1000:1000\"",
    "\"A=1\"",
    "\"A\"",
    "\"nul\\u0000\"",
    "\"pytorch-2.8\"",
    "\"./self.toml\"",
    "0",
    "1",
    "-1",
    "-2",
    "2",
    "4096",
    "4097",
    "65535",
    "65536",
    "0x10",
    "0o17",
    "0b11",
    "1_000",
    "9223372036854775807",
    "99999999999999999999",
    "0.5",
    "-0.0",
    "1e309",
    "inf",
    "nan",
    "true",
    "false",
    "1979-05-27T07:32:00Z",
    "[]",
    "{}",
    "[\"a\"]",
    "[\"0\", \"0\"]",
    "[1, true]",
    "{ count = 2 }",
    "{ count = 1, devices = [] }",
    "{ soft = 1, hard = 0 }",
    "{ soft = -1 }",
    "{ host = 1, container = 1 }",
    "{ host = 0, container = 70000 }",
    "{ source = \"./a\", target = \"/a\" }",
    "{ source = 1, read_only = \"no\" }",
    "[\"1:1\", \"1:2\"]",
    "[\"./a:/a\", \"./b:/a/\"]",
];

fn fragments() -> impl Strategy<Value = String> {
    let fragment = prop_oneof![
        prop::sample::select(SYNTAX),
        prop::sample::select(KEYS),
        prop::sample::select(VALUES),
    ];
    prop::collection::vec(fragment, 0..60).prop_map(|parts| parts.concat())
}

/// Lines `key = value` over the real keys: mostly valid TOML, so validation itself runs.
fn profile_lines() -> impl Strategy<Value = String> {
    let line = (prop::sample::select(KEYS), prop::sample::select(VALUES));
    prop::collection::vec(line, 0..12).prop_map(|lines| {
        lines
            .into_iter()
            .map(|(key, value)| format!("{key} = {value}\n"))
            .collect()
    })
}

fn assert_sane_diagnostics(text: &str, shown: &str, diagnostics: &[Diagnostic]) {
    let lines = text.split('\n').count();
    for diagnostic in diagnostics {
        assert_eq!(diagnostic.path, shown);
        assert!(
            diagnostic.line >= 1 && diagnostic.line <= lines,
            "{diagnostic:?}"
        );
        assert!(diagnostic.column >= 1, "{diagnostic:?}");
        assert!(!diagnostic.message.is_empty(), "{diagnostic:?}");
    }
}

fn validate_bytes(bytes: Vec<u8>) {
    let shown = "fuzz/profile.toml";
    let text = match decode_profile_bytes(bytes, shown) {
        Ok(text) => text,
        Err(diagnostic) => {
            assert_eq!(diagnostic.path, shown);
            assert!(diagnostic.line >= 1 && diagnostic.column >= 1);
            return;
        }
    };
    let (_, diagnostics) = validate(shown, &text);
    assert_sane_diagnostics(&text, shown, &diagnostics);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn validating_arbitrary_bytes_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        validate_bytes(bytes);
    }

    #[test]
    fn validating_arbitrary_text_never_panics(text in any::<String>()) {
        validate_bytes(text.into_bytes());
    }

    #[test]
    fn validating_toml_fragments_never_panics(text in fragments()) {
        validate_bytes(text.into_bytes());
    }

    #[test]
    fn validating_profile_lines_never_panics(text in profile_lines(), tail in fragments()) {
        validate_bytes(text.clone().into_bytes());
        validate_bytes(format!("{text}{tail}").into_bytes());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The whole read path on a real file: size check, decoding, validation.
    #[test]
    fn reading_arbitrary_files_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..256), text in fragments()) {
        let folder = tempfile::tempdir().unwrap();
        for (name, content) in [("bytes.toml", bytes), ("text.toml", text.into_bytes())] {
            let path = folder.path().join(name);
            std::fs::write(&path, &content).unwrap();
            let shown = path.display().to_string();
            match read_profile_text(&path, &shown) {
                Ok(text) => {
                    prop_assert_eq!(text.as_bytes(), &content[..]);
                    let (_, diagnostics) = validate(&shown, &text);
                    assert_sane_diagnostics(&text, &shown, &diagnostics);
                }
                Err(diagnostic) => prop_assert!(std::str::from_utf8(&content).is_err(), "{:?}", diagnostic),
            }
        }
    }
}

const PORT_ALPHABET: &str = "[0-9:./\\[\\]a-fA-F-]{0,24}(/(tcp|udp|sctp|TCP|x))?";

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn port_specs_never_panic(spec in any::<String>()) {
        let _ = parse_port_spec(&spec);
    }

    #[test]
    fn parsed_port_specs_round_trip(spec in PORT_ALPHABET) {
        if let Ok(binding) = parse_port_spec(&spec) {
            let displayed = binding.to_string();
            prop_assert_eq!(parse_port_spec(&displayed), Ok(binding), "{} displayed as {}", spec, displayed);
        }
    }

    #[test]
    fn structured_port_specs_round_trip(
        ip in prop::option::of(prop::sample::select(&["127.0.0.1", "0.0.0.0", "10.1.2.3", "[::1]", "[::]", "[2001:db8::7]", "[::ffff:1.2.3.4]"][..])),
        host in prop::option::of((1u16..=65535, 0u16..20)),
        container in (1u16..=65535, 0u16..20),
        protocol in prop::sample::select(&["", "/tcp", "/udp", "/sctp", "/UDP"][..]),
    ) {
        let range = |(start, extra): (u16, u16)| {
            let end = start.saturating_add(extra);
            if end == start { start.to_string() } else { format!("{start}-{end}") }
        };
        let ports = match host {
            Some(host) => format!("{}:{}", range(host), range(container)),
            None if ip.is_some() => format!(":{}", range(container)),
            None => range(container),
        };
        let spec = match ip {
            Some(ip) => format!("{ip}:{ports}{protocol}"),
            None => format!("{ports}{protocol}"),
        };
        if let Ok(binding) = parse_port_spec(&spec) {
            let displayed = binding.to_string();
            prop_assert_eq!(parse_port_spec(&displayed), Ok(binding), "{} displayed as {}", spec, displayed);
        }
    }

    #[test]
    fn mount_specs_never_panic(spec in any::<String>(), shaped in "[./~a-z:,_-]{0,20}(:(ro|rw|ro,rw|x))?") {
        let _ = parse_mount_spec(&spec);
        let _ = parse_mount_spec(&shaped);
    }

    #[test]
    fn image_references_never_panic(text in any::<String>(), shaped in "[a-zA-Z0-9./:@_\\[\\]-]{0,40}") {
        let _ = text.parse::<ImageReference>();
        if let Ok(reference) = shaped.parse::<ImageReference>() {
            let displayed = reference.to_string();
            prop_assert_eq!(displayed.parse::<ImageReference>(), Ok(reference), "{} displayed as {}", shaped, displayed);
        }
    }

    #[test]
    fn sizes_never_panic(text in any::<String>(), shaped in "[0-9. ]{0,24}[bkmgtiBKMGTI ]{0,4}") {
        let _ = text.parse::<ByteSize>();
        if let Ok(size) = shaped.parse::<ByteSize>() {
            let displayed = size.to_string();
            prop_assert_eq!(displayed.parse::<ByteSize>(), Ok(size), "{} displayed as {}", shaped, displayed);
        }
    }
}
