//! A wheel's `*.dist-info/METADATA`: the `Requires-Dist` pins of the CUDA runtime the
//! wheel installs with it. From 2.11 torch pins the `cuda-toolkit` metapackage, whose
//! version names a toolkit release (`cuda-toolkit[cublas,cudart,…]==13.2.2`: CUDA 13.2
//! Update 2); the 12.x wheels pin component versions (`nvidia-cuda-runtime-cu12==12.8.90`),
//! kept as written. cuDNN's pin is read too, for the profiles' comments.

/// The pins of one wheel, as its METADATA writes them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pins {
    /// The METADATA member it was read from: `torch-2.15.0.dist-info/METADATA`.
    pub member: String,
    /// The whole `cuda-toolkit[…]==X.Y.Z` requirement, without its marker.
    pub cuda_toolkit: Option<String>,
    /// `X.Y.Z` of it.
    pub cuda_toolkit_version: Option<String>,
    /// `nvidia-cuda-runtime-cu12==12.8.90` and the like: a component's own version.
    pub runtime_component: Option<String>,
    /// `nvidia-cudnn-cu13==9.26.0.51`.
    pub cudnn: Option<String>,
}

/// Whether a zip member is a wheel's top-level METADATA (`NAME-VERSION.dist-info/METADATA`).
pub fn is_metadata_member(name: &str) -> bool {
    name.strip_suffix("/METADATA")
        .is_some_and(|folder| folder.ends_with(".dist-info") && !folder.contains('/'))
}

/// The requirement's name (`cuda-toolkit`, without extras) and its `==` version.
fn name_and_pin(requirement: &str) -> Option<(&str, &str)> {
    let name_end = requirement
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'))
        .unwrap_or(requirement.len());
    let name = &requirement[..name_end];
    let (_, version) = requirement.split_once("==")?;
    let version = version.trim();
    (!name.is_empty() && !version.is_empty() && !version.contains([',', ' ', '*']))
        .then_some((name, version))
}

/// The pins of the `Requires-Dist` lines of `text` (the METADATA read from `member`).
pub fn pins(member: &str, text: &str) -> Pins {
    let mut found = Pins {
        member: member.to_string(),
        ..Pins::default()
    };
    for line in text.lines() {
        // Headers end at the first empty line; the description follows.
        if line.is_empty() {
            break;
        }
        let Some(requirement) = line.strip_prefix("Requires-Dist:") else {
            continue;
        };
        let requirement = requirement
            .split_once(';')
            .map_or(requirement, |(requirement, _)| requirement)
            .trim();
        let Some((name, version)) = name_and_pin(requirement) else {
            continue;
        };
        let name = name.to_ascii_lowercase().replace('_', "-");
        if name == "cuda-toolkit" {
            found.cuda_toolkit = Some(requirement.to_string());
            found.cuda_toolkit_version = Some(version.to_string());
        } else if name == "nvidia-cuda-runtime" || name.starts_with("nvidia-cuda-runtime-cu") {
            found.runtime_component = Some(requirement.to_string());
        } else if name.starts_with("nvidia-cudnn-cu") {
            found.cudnn = Some(requirement.to_string());
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Requires-Dist lines of PyPI's torch-2.15.0 (x86_64) and 2.8.0 wheels, as
    /// their METADATA has them.
    #[test]
    fn reads_the_runtime_pins_of_both_forms() {
        let text = "Metadata-Version: 2.4\nName: torch\nVersion: 2.15.0\n\
            Requires-Dist: filelock\n\
            Requires-Dist: cuda-toolkit[cublas,cudart,cufft,cufile,cupti,cusolver,cusparse,nvjitlink,nvrtc,nvtx]==13.2.2; platform_system == \"Linux\"\n\
            Requires-Dist: cuda-bindings<14,>=13.0.3; platform_system == \"Linux\" and python_version < \"3.15\"\n\
            Requires-Dist: nvidia-cudnn-cu13==9.26.0.51; platform_system == \"Linux\"\n\
            \nRequires-Dist: not-a-header==1.0\n";
        let found = pins("torch-2.15.0.dist-info/METADATA", text);
        assert_eq!(found.cuda_toolkit_version.as_deref(), Some("13.2.2"));
        assert_eq!(
            found.cuda_toolkit.as_deref(),
            Some(
                "cuda-toolkit[cublas,cudart,cufft,cufile,cupti,cusolver,cusparse,nvjitlink,nvrtc,nvtx]==13.2.2"
            )
        );
        assert_eq!(found.cudnn.as_deref(), Some("nvidia-cudnn-cu13==9.26.0.51"));
        assert_eq!(found.runtime_component, None);

        let old = pins(
            "torch-2.8.0.dist-info/METADATA",
            "Name: torch\nRequires-Dist: nvidia-cuda-runtime-cu12==12.8.90; platform_system == \"Linux\" and platform_machine == \"x86_64\"\n",
        );
        assert_eq!(old.cuda_toolkit, None);
        assert_eq!(
            old.runtime_component.as_deref(),
            Some("nvidia-cuda-runtime-cu12==12.8.90")
        );
        // A range is no pin.
        assert_eq!(
            pins("m", "Requires-Dist: cuda-toolkit>=13.0,<14\n").cuda_toolkit,
            None
        );
    }

    #[test]
    fn only_the_top_level_metadata_is_the_wheels() {
        assert!(is_metadata_member("torch-2.15.0.dist-info/METADATA"));
        assert!(!is_metadata_member("torch/vendored-1.0.dist-info/METADATA"));
        assert!(!is_metadata_member("torch-2.15.0.dist-info/RECORD"));
    }
}
