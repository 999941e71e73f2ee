//! The container's command and environment: the body's `Cmd` as `args` (Docker's `Cmd`
//! replaces the image's `CMD` and keeps its `ENTRYPOINT`, which is what `args` does) and
//! `Env` as `env`, with `$(` written `$$(`, since the kubelet expands `$(VAR)` in both.
//!
//! A secret variable (`crate::secret`) is never written: its `env` entry is a
//! `secretKeyRef` to the key of the same name in the Secret `<container>-env`, which the
//! user creates from their shell (`kubectl create secret generic … --from-literal=KEY="$KEY"`,
//! the exact command in the file's header). The export writes no Secret object: one with a
//! placeholder would, on `kubectl apply`, overwrite the real one.

use k8s_openapi::api::core::v1::{EnvVar, EnvVarSource, SecretKeySelector};

use super::Notices;
use super::labels::Identity;
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
                    value_from: Some(EnvVarSource {
                        secret_key_ref: Some(SecretKeySelector {
                            name: secret.clone(),
                            key: key.clone(),
                            optional: None,
                        }),
                        ..EnvVarSource::default()
                    }),
                    ..EnvVar::default()
                }
            } else {
                EnvVar {
                    name: key.clone(),
                    value: Some(escape_references(value)),
                    ..EnvVar::default()
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

/// The kubelet expands `$(VAR)` in args and env values; `$$(` keeps it literal.
pub(super) fn escape_references(text: &str) -> String {
    text.replace("$(", "$$(")
}
