//! The container's command and environment: the body's `Cmd` as `args` (Docker's `Cmd`
//! replaces the image's `CMD` and keeps its `ENTRYPOINT`, which is what `args` does) and
//! `Env` as `env`, with `$(` written `$$(`, since the kubelet expands `$(VAR)` in both.

use k8s_openapi::api::core::v1::EnvVar;

use crate::export::view::BodyView;

/// The container's `args`.
pub(super) fn arguments(view: &BodyView<'_>) -> Vec<String> {
    view.command
        .iter()
        .map(|word| escape_references(word))
        .collect()
}

/// The container's `env`, or `None` for none.
pub(super) fn variables(view: &BodyView<'_>) -> Option<Vec<EnvVar>> {
    let variables: Vec<EnvVar> = view
        .environment
        .iter()
        .map(|(key, value)| EnvVar {
            name: key.clone(),
            value: Some(escape_references(value)),
            ..EnvVar::default()
        })
        .collect();
    (!variables.is_empty()).then_some(variables)
}

/// The kubelet expands `$(VAR)` in args and env values; `$$(` keeps it literal.
pub(super) fn escape_references(text: &str) -> String {
    text.replace("$(", "$$(")
}
