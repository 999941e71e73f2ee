//! The container's command and environment: the body's `Cmd` as `args` (Docker's `Cmd`
//! replaces the image's `CMD` and keeps its `ENTRYPOINT`, which is what `args` does) and
//! `Env` as `env`, each `$` before `$` or `(` doubled, since the kubelet expands `$(VAR)` and `$$` in both.
//!
//! A secret variable (`crate::secret`) is never written: its `env` entry is a
//! `secretKeyRef` to the key of the same name in the Secret `<container>-env`, which the
//! user creates from their shell (`kubectl create secret generic … --from-literal=KEY="$KEY"`,
//! the exact command in the file's header). The export writes no Secret object: one with a
//! placeholder would, on `kubectl apply`, overwrite the real one.

use super::Notices;
use super::labels::Identity;
use super::objects::{EnvVar, EnvVarSource, SecretKeySelector};
use crate::export::dns_label;
use crate::export::view::BodyView;

/// The container's `args`.
pub(super) fn arguments(view: &BodyView<'_>) -> Vec<String> {
    view.command
        .iter()
        .map(|word| escape_references(word))
        .collect()
}

/// The container's `env`, or `None` for none.
pub(super) fn variables(view: &BodyView<'_>, identity: &Identity) -> Option<Vec<EnvVar>> {
    let secret = secret_name(identity);
    let variables: Vec<EnvVar> = view
        .environment
        .iter()
        .map(|(key, value)| {
            if view.is_secret(key) {
                EnvVar {
                    name: key.clone(),
                    value: None,
                    value_from: Some(EnvVarSource {
                        secret_key_ref: SecretKeySelector {
                            name: secret.clone(),
                            key: key.clone(),
                        },
                    }),
                }
            } else {
                EnvVar {
                    name: key.clone(),
                    value: Some(escape_references(value)),
                    value_from: None,
                }
            }
        })
        .collect();
    (!variables.is_empty()).then_some(variables)
}

/// The Secret the secret variables are read from: `<container>-env` as a DNS label.
pub(super) fn secret_name(identity: &Identity) -> String {
    dns_label(&format!("{}-env", identity.container))
}

/// The `kubectl` command that creates the Secret from the user's shell, so no value is in
/// the file or the command's history; `None` without secrets.
pub(super) fn create_secret_command(view: &BodyView<'_>, identity: &Identity) -> Option<String> {
    if view.secrets.is_empty() {
        return None;
    }
    let literals: Vec<String> = view
        .secrets
        .iter()
        .map(|key| format!("--from-literal={key}=\"${key}\""))
        .collect();
    Some(format!(
        "kubectl create secret generic {} {}",
        secret_name(identity),
        literals.join(" ")
    ))
}

/// The notice naming the secret variables and the command that creates their Secret.
pub(super) fn secrets_notice(view: &BodyView<'_>, identity: &Identity, notices: &mut Notices) {
    if let Some(command) = create_secret_command(view, identity) {
        notices.add(
            "env",
            format!(
                "secret values are not written: {} {} read from the Secret `{}` (`secretKeyRef`); create it first, in the workload's namespace: `{command}`",
                crate::secret::list(&view.secrets),
                if view.secrets.len() == 1 { "is" } else { "are" },
                secret_name(identity),
            ),
        );
    }
}

/// The kubelet expands `command`, `args` and env values: `$(VAR)` is a reference and `$$`
/// is one `$`, any other `$` stays. So each `$` that a `$` or a `(` follows is doubled —
/// `$(` would be a reference, and `$$` (`sh -c 'echo $$'`) would arrive as `$` — and
/// every string arrives byte for byte (proven against the expansion rules in the tests).
pub(super) fn escape_references(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    let mut characters = text.chars().peekable();
    while let Some(character) = characters.next() {
        escaped.push(character);
        if character == '$' && matches!(characters.peek(), Some('$' | '(')) {
            escaped.push('$');
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::escape_references;

    /// Kubernetes' expansion of `$(VAR)` references (its `third_party/forked/golang/expansion`
    /// package), written from its rules: at each `$` that has a character after it, `$$`
    /// is a `$`, `$(NAME)` is the variable's value (or stays as written when unknown or
    /// unclosed), and `$` before anything else stays with that character.
    fn kubernetes_expand(input: &str, variable: impl Fn(&str) -> Option<String>) -> String {
        let bytes = input.as_bytes();
        let mut out = Vec::new();
        let mut cursor = 0;
        while cursor < bytes.len() {
            if bytes[cursor] == b'$' && cursor + 1 < bytes.len() {
                match bytes[cursor + 1] {
                    b'$' => {
                        out.push(b'$');
                        cursor += 2;
                    }
                    b'(' => match input[cursor + 2..].find(')') {
                        Some(length) => {
                            let name = &input[cursor + 2..cursor + 2 + length];
                            match variable(name) {
                                Some(value) => out.extend_from_slice(value.as_bytes()),
                                None => out.extend_from_slice(format!("$({name})").as_bytes()),
                            }
                            cursor += 3 + length;
                        }
                        None => {
                            out.extend_from_slice(b"$(");
                            cursor += 2;
                        }
                    },
                    other => {
                        out.push(b'$');
                        out.push(other);
                        cursor += 2;
                    }
                }
            } else {
                out.push(bytes[cursor]);
                cursor += 1;
            }
        }
        String::from_utf8(out).unwrap()
    }

    /// Every variable is defined: the harshest case for a `$(` left unescaped.
    fn defined(name: &str) -> Option<String> {
        Some(format!("<{name}>"))
    }

    #[test]
    fn the_examples_arrive_byte_for_byte() {
        for text in [
            "sh -c 'echo pid=$$'",
            "$$d",
            "$(HOME) $HOME ${HOME}",
            "$",
            "$$$",
            "$$(",
            "a$(b",
            "price: 5$",
            "$((1+2))",
        ] {
            let escaped = escape_references(text);
            assert_eq!(
                kubernetes_expand(&escaped, defined),
                text,
                "{text} → {escaped}"
            );
        }
        assert_eq!(
            escape_references("$HOME"),
            "$HOME",
            "a lone `$` stays readable"
        );
        // Before: `$$` was left alone and arrived as `$`.
        assert_eq!(kubernetes_expand("echo pid=$$", defined), "echo pid=$");
    }

    proptest::proptest! {
        #[test]
        fn any_text_arrives_byte_for_byte(text in "[$()a-z ]{0,24}|\\PC{0,16}") {
            let escaped = escape_references(&text);
            proptest::prop_assert_eq!(kubernetes_expand(&escaped, defined), text);
        }
    }
}
