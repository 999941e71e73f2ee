//! What an image holds — CUDA and PyTorch — from its config env when the image is present,
//! else from the profile's `[stack]`; and where the two disagree.
//!
//! Finding id: `profile.stack`.

use std::collections::BTreeMap;

use serde::Serialize;

use super::Finding;
use crate::profile::model::{CudaVersion, Stack, TorchVersion};

/// Where the effective stack came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StackSource {
    /// The image is present locally and its config names CUDA and/or PyTorch.
    Image,
    /// The image is not present (or says nothing): the profile's `[stack]`.
    Profile,
    /// Neither says anything.
    None,
}

/// The CUDA and PyTorch the verdicts use, and where each came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EffectiveStack {
    pub source: StackSource,
    pub cuda: Option<CudaVersion>,
    pub torch: Option<TorchVersion>,
}

/// `CUDA_VERSION=12.8.1` → 12.8; else the first `cuda>=X.Y` of `NVIDIA_REQUIRE_CUDA`.
pub fn image_cuda(env: &BTreeMap<String, String>) -> Option<CudaVersion> {
    if let Some(version) = env.get("CUDA_VERSION") {
        let mut parts = version.split('.');
        if let (Some(major), Some(minor)) = (parts.next(), parts.next())
            && let Ok(cuda) = format!("{major}.{minor}").parse()
        {
            return Some(cuda);
        }
    }
    let requirement = env.get("NVIDIA_REQUIRE_CUDA")?;
    requirement
        .split([' ', ','])
        .find_map(|constraint| constraint.strip_prefix("cuda>="))
        .and_then(|version| {
            let mut parts = version.split('.');
            format!("{}.{}", parts.next()?, parts.next().unwrap_or("0"))
                .parse()
                .ok()
        })
}

/// `PYTORCH_VERSION=2.8.0` (set by the official images).
pub fn image_torch(env: &BTreeMap<String, String>) -> Option<TorchVersion> {
    env.get("PYTORCH_VERSION")
        .and_then(|version| version.trim_start_matches('v').parse().ok())
}

/// Chooses the stack: the image's config where it speaks, the profile's `[stack]` where it
/// does not; a disagreement is a warning (the image is what will run).
pub fn effective(
    stack: &Stack,
    image_env: Option<&BTreeMap<String, String>>,
) -> (EffectiveStack, Vec<Finding>) {
    let mut findings = Vec::new();
    let Some(env) = image_env else {
        let source = if stack.is_empty() {
            StackSource::None
        } else {
            StackSource::Profile
        };
        let finding = if stack.is_empty() {
            Finding::info("profile.stack", "no `[stack]` and the image is not pulled: envctl cannot check CUDA or PyTorch against this host")
                .with_hint("add [stack] cuda = \"12.8\", torch = \"2.8.0\" to the profile, or pull the image")
        } else {
            Finding::info(
                "profile.stack",
                "the image is not pulled: its CUDA and PyTorch are taken from the profile's [stack]",
            )
        };
        findings.push(finding);
        return (
            EffectiveStack {
                source,
                cuda: stack.cuda,
                torch: stack.torch.clone(),
            },
            findings,
        );
    };
    let cuda_in_image = image_cuda(env);
    let torch_in_image = image_torch(env);
    if let (Some(image), Some(profile)) = (cuda_in_image, stack.cuda)
        && image != profile
    {
        findings.push(
            Finding::warn("profile.stack", format!("the image holds CUDA {image} but [stack] says {profile}: checking with the image's"))
                .with_hint(format!("set [stack] cuda = \"{image}\""))
                .with_fact("image_cuda", image)
                .with_fact("profile_cuda", profile),
        );
    }
    if let (Some(image), Some(profile)) = (&torch_in_image, &stack.torch)
        && image.version != profile.version
    {
        findings.push(
            Finding::warn("profile.stack", format!("the image holds torch {image} but [stack] says {profile}: checking with the image's"))
                .with_hint(format!("set [stack] torch = \"{image}\""))
                .with_fact("image_torch", image)
                .with_fact("profile_torch", profile),
        );
    }
    let source = if cuda_in_image.is_some() || torch_in_image.is_some() {
        StackSource::Image
    } else if stack.is_empty() {
        StackSource::None
    } else {
        StackSource::Profile
    };
    // The image's torch keeps the profile's wheel variant when it has none of its own
    // (`PYTORCH_VERSION=2.8.0` in a cu128 image).
    let torch = match (torch_in_image, &stack.torch) {
        (Some(image), Some(profile))
            if image.variant.is_none() && image.version == profile.version =>
        {
            Some(profile.clone())
        }
        (Some(image), _) => Some(image),
        (None, profile) => profile.clone(),
    };
    (
        EffectiveStack {
            source,
            cuda: cuda_in_image.or(stack.cuda),
            torch,
        },
        findings,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect()
    }

    fn stack(cuda: Option<&str>, torch: Option<&str>) -> Stack {
        Stack {
            cuda: cuda.map(|c| c.parse().unwrap()),
            torch: torch.map(|t| t.parse().unwrap()),
            cudnn: None,
        }
    }

    #[test]
    fn reads_cuda_from_either_variable() {
        assert_eq!(
            image_cuda(&env(&[("CUDA_VERSION", "12.8.1")])),
            Some("12.8".parse().unwrap())
        );
        assert_eq!(
            image_cuda(&env(&[(
                "NVIDIA_REQUIRE_CUDA",
                "cuda>=13.1 brand=tesla,driver>=535,driver<536"
            )])),
            Some("13.1".parse().unwrap())
        );
        assert_eq!(image_cuda(&env(&[])), None);
    }

    #[test]
    fn absent_image_uses_the_profile() {
        let (effective_stack, findings) =
            effective(&stack(Some("12.8"), Some("2.8.0+cu128")), None);
        assert_eq!(effective_stack.source, StackSource::Profile);
        assert_eq!(effective_stack.torch.unwrap().to_string(), "2.8.0+cu128");
        assert_eq!(findings.len(), 1);
        let (nothing, _) = effective(&Stack::default(), None);
        assert_eq!(nothing.source, StackSource::None);
    }

    #[test]
    fn the_image_wins_and_a_disagreement_is_a_warning() {
        let image = env(&[("CUDA_VERSION", "12.6.3"), ("PYTORCH_VERSION", "2.8.0")]);
        let (effective_stack, findings) =
            effective(&stack(Some("12.8"), Some("2.8.0+cu128")), Some(&image));
        assert_eq!(effective_stack.source, StackSource::Image);
        assert_eq!(effective_stack.cuda.unwrap().to_string(), "12.6");
        assert_eq!(
            effective_stack.torch.unwrap().to_string(),
            "2.8.0+cu128",
            "the profile's variant is kept for the same release"
        );
        assert_eq!(findings.len(), 1);
        assert!(findings[0].message.contains("CUDA 12.6"));
        let (agreeing, none) = effective(&stack(Some("12.6"), None), Some(&image));
        assert!(none.is_empty());
        assert_eq!(agreeing.torch.unwrap().to_string(), "2.8.0");
    }
}
