//! A small block-style YAML writer for the compose file and the Kubernetes manifests.
//!
//! Why not `serde_norway::to_string`: it writes `yes`, `on`, `off`, `n`, `12:30`, `1_000`
//! and `2024-01-01` as plain scalars, which YAML 1.2 reads as strings but YAML 1.1 parsers
//! do not — and both consumers are YAML 1.1: docker-compose v1 (PyYAML) reads `on` as
//! `true` and rejects it as an environment value, and `kubectl apply` (go-yaml v2 into
//! untyped maps) turns an env value `on` into a boolean the API server refuses. Here a
//! string is written plain only when no YAML version can read it as anything else: it
//! starts with a letter or `/`, holds only `[A-Za-z0-9_./@=+:-]`, does not end with `:`,
//! and is not one of the YAML 1.1 booleans or nulls. Everything else is double-quoted with
//! JSON-style escapes, which every YAML parser reads back unchanged.
//!
//! Keys are written in sorted order, whatever `serde_json`'s map order is, so the output
//! is the same on every run (and matches the order `docker-compose config` and
//! `kubectl get -o yaml` print).

use std::fmt::Write as _;

use serde_json::Value;

/// `value` as a YAML document (no `---`), ending with a newline.
pub fn to_yaml(value: &Value) -> String {
    let mut out = String::new();
    match value {
        Value::Object(map) if !map.is_empty() => write_mapping(&mut out, map, 0, false),
        Value::Array(items) if !items.is_empty() => write_sequence(&mut out, items, 0),
        scalar => {
            out.push_str(&scalar_text(scalar));
            out.push('\n');
        }
    }
    out
}

/// A scalar, an empty mapping (`{}`) or an empty sequence (`[]`) on one line.
fn scalar_text(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(flag) => flag.to_string(),
        Value::Number(number) => number_text(number),
        Value::String(text) => string_text(text),
        Value::Array(_) => "[]".into(),
        Value::Object(_) => "{}".into(),
    }
}

fn is_inline(value: &Value) -> bool {
    match value {
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => map.is_empty(),
        _ => true,
    }
}

/// `on_item_line`: the mapping is a sequence item, and its first key goes on the `- `
/// line already written.
fn write_mapping(
    out: &mut String,
    map: &serde_json::Map<String, Value>,
    indent: usize,
    on_item_line: bool,
) {
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    for (index, key) in keys.into_iter().enumerate() {
        if index > 0 || !on_item_line {
            push_indent(out, indent);
        }
        let Some(value) = map.get(key) else { continue };
        out.push_str(&string_text(key));
        out.push(':');
        write_value_after_key(out, value, indent);
    }
}

fn write_value_after_key(out: &mut String, value: &Value, indent: usize) {
    if is_inline(value) {
        out.push(' ');
        out.push_str(&scalar_text(value));
        out.push('\n');
        return;
    }
    out.push('\n');
    match value {
        Value::Object(map) => write_mapping(out, map, indent + 2, false),
        Value::Array(items) => write_sequence(out, items, indent + 2),
        _ => {}
    }
}

fn write_sequence(out: &mut String, items: &[Value], indent: usize) {
    for item in items {
        push_indent(out, indent);
        out.push_str("- ");
        match item {
            Value::Object(map) if !map.is_empty() => write_mapping(out, map, indent + 2, true),
            Value::Array(inner) if !inner.is_empty() => {
                // A sequence inside a sequence: start it on the next line.
                out.truncate(out.trim_end_matches(' ').len());
                out.push('\n');
                write_sequence(out, inner, indent + 2);
            }
            scalar => {
                out.push_str(&scalar_text(scalar));
                out.push('\n');
            }
        }
    }
}

fn push_indent(out: &mut String, indent: usize) {
    out.extend(std::iter::repeat_n(' ', indent));
}

/// Integers as they are; floats with a `.` (PyYAML reads `1e-09` as a string, and Rust's
/// `Display` for `f64` never writes an exponent).
fn number_text(number: &serde_json::Number) -> String {
    if number.is_i64() || number.is_u64() {
        return number.to_string();
    }
    match number.as_f64() {
        Some(float) if float.is_finite() => {
            let text = float.to_string();
            if text.contains('.') {
                text
            } else {
                format!("{text}.0")
            }
        }
        _ => "null".into(),
    }
}

/// The YAML 1.1 words that are not strings (booleans and nulls), in every case YAML 1.1
/// resolves.
const RESERVED_WORDS: [&str; 10] = [
    "y", "n", "yes", "no", "true", "false", "on", "off", "null", "~",
];

/// `text` plain when no YAML version reads it as anything but this string, else
/// double-quoted.
fn string_text(text: &str) -> String {
    if is_plain_safe(text) {
        text.to_string()
    } else {
        double_quoted(text)
    }
}

fn is_plain_safe(text: &str) -> bool {
    let Some(first) = text.chars().next() else {
        return false;
    };
    let allowed = |c: char| c.is_ascii_alphanumeric() || "_./@=+:-".contains(c);
    (first.is_ascii_alphabetic() || first == '/')
        && text.chars().all(allowed)
        && !text.ends_with(':')
        && !RESERVED_WORDS.contains(&text.to_ascii_lowercase().as_str())
}

fn double_quoted(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for c in text.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            '\n' => quoted.push_str("\\n"),
            '\t' => quoted.push_str("\\t"),
            '\r' => quoted.push_str("\\r"),
            // Line breaks of YAML 1.1, a byte-order mark, and whatever YAML may not carry
            // raw (outside its printable set): escaped, so every parser reads them back.
            '\u{85}' | '\u{2028}' | '\u{2029}' | '\u{feff}' => escape(&mut quoted, c),
            c if !is_yaml_printable(c) => escape(&mut quoted, c),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

fn escape(quoted: &mut String, c: char) {
    let code = u32::from(c);
    let _ = if code <= 0xffff {
        write!(quoted, "\\u{code:04x}")
    } else {
        write!(quoted, "\\U{code:08x}")
    };
}

/// YAML's `c-printable` set.
fn is_yaml_printable(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{7e}' | '\u{85}' | '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}')
        || c >= '\u{10000}'
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn ambiguous_strings_are_quoted() {
        for text in [
            "yes",
            "No",
            "ON",
            "off",
            "y",
            "~",
            "null",
            "12:30",
            "1_000",
            "2024-01-01",
            "1",
            "0x10",
            ".inf",
            "",
            "a: b",
            "x y",
            "#c",
            "-a",
            "~/data",
            "./data",
            "$HOME",
            "ends:",
        ] {
            assert!(
                string_text(text).starts_with('"'),
                "{text:?} must be quoted"
            );
        }
        for text in [
            "PCI_BUS_ID",
            "envctl.profile",
            "nvidia.com/gpu",
            "/dev/shm",
            "pytorch/pytorch:2.8.0-cuda12.8-cudnn9-runtime",
            "image@sha256:abc",
            "sleep",
        ] {
            assert_eq!(string_text(text), text);
        }
    }

    #[test]
    fn nested_shapes() {
        let value = json!({
            "b": [1, {"x": "on", "z": []}, [2, 3]],
            "a": {"k": {}},
            "c": 1.5,
            "d": 8.0,
        });
        assert_eq!(
            to_yaml(&value),
            "a:\n  k: {}\nb:\n  - 1\n  - x: \"on\"\n    z: []\n  -\n    - 2\n    - 3\nc: 1.5\nd: 8.0\n"
        );
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|number| json!(number)),
            "\\PC{0,12}".prop_map(Value::String),
            prop::collection::vec(any::<char>(), 0..8)
                .prop_map(|characters| Value::String(characters.into_iter().collect())),
            "[a-z0-9:._ -]{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("\\PC{0,6}", inner, 0..4)
                    .prop_map(|map| Value::Object(map.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn round_trips_through_a_yaml_parser(value in json_value()) {
            let text = to_yaml(&value);
            let parsed: Value = serde_norway::from_str(&text)
                .map_err(|error| TestCaseError::fail(format!("{error}\n{text}")))?;
            prop_assert_eq!(parsed, value, "{}", text);
        }
    }
}
