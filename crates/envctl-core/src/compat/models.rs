//! GPU model names → compute capability, for `compat --gpu NAME` and for NVML's names.
//!
//! Names are compared in a normal form: upper case, words split at anything that is not a
//! letter or digit, and the brand words NVIDIA, GeForce, Tesla and Quadro dropped — so
//! "NVIDIA GeForce RTX 4090", "rtx-4090" and "RTX 4090" are all `RTX 4090`, and
//! "Tesla V100-SXM2-32GB" is `V100 SXM2 32GB`. A row's `match` key matches a name when the
//! key's words appear in the name's words, in order and adjacent.

use super::matrix::Matrix;
use super::version::ComputeCapability;

/// Words that name the vendor or a product line, not a model.
const BRAND_WORDS: [&str; 4] = ["NVIDIA", "GEFORCE", "TESLA", "QUADRO"];

fn words(name: &str) -> Vec<String> {
    name.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_ascii_uppercase)
        .collect()
}

fn model_words(name: &str) -> Vec<String> {
    words(name)
        .into_iter()
        .filter(|word| !BRAND_WORDS.contains(&word.as_str()))
        .collect()
}

/// The normal form of a GPU name: `NVIDIA GeForce RTX 4090` → `RTX 4090`.
pub fn normalise_name(name: &str) -> String {
    model_words(name).join(" ")
}

fn contains_run(haystack: &[String], needle: &[String]) -> bool {
    !needle.is_empty()
        && haystack.len() >= needle.len()
        && haystack
            .windows(needle.len())
            .any(|window| window == needle)
}

/// The GPU models a name may mean, with their compute capabilities: one entry for an NVML
/// name or an unambiguous typed name, several when a typed name fits models of different
/// capabilities ("RTX 6000": Quadro RTX 6000 is 7.5, RTX 6000 Ada is 8.9), none when
/// nothing fits. Ordered by capability, then name.
///
/// A name that carries a brand word (as NVML's names do) matches rows whose key appears in
/// it; a key that is part of another matching key gives way to it ("RTX 4070 TI" over
/// "RTX 4070"). A name without one (typed) also matches rows whose key contains it
/// ("4090" → RTX 4090); those are added only when their capability differs.
pub fn model_capability(matrix: &Matrix, name: &str) -> Vec<(String, ComputeCapability)> {
    let all_words = words(name);
    let name_words = model_words(name);
    if name_words.is_empty() {
        return Vec::new();
    }
    let branded = all_words.len() != name_words.len();
    let keyed: Vec<(Vec<String>, &super::matrix::GpuRow)> = matrix
        .gpus()
        .flat_map(|row| row.match_keys.iter().map(move |key| (words(key), row)))
        .collect();

    let within: Vec<&(Vec<String>, &super::matrix::GpuRow)> = keyed
        .iter()
        .filter(|(key, _)| contains_run(&name_words, key))
        .collect();
    let longest: Vec<&super::matrix::GpuRow> = within
        .iter()
        .filter(|(key, _)| {
            !within
                .iter()
                .any(|(other, _)| other.len() > key.len() && contains_run(other, key))
        })
        .map(|(_, row)| *row)
        .collect();

    let mut found: Vec<(String, ComputeCapability)> = longest
        .iter()
        .map(|row| (row.name.clone(), row.capability))
        .collect();
    if !branded {
        let wider = keyed
            .iter()
            .filter(|(key, _)| key.len() > name_words.len() && contains_run(key, &name_words))
            .map(|(_, row)| (row.name.clone(), row.capability));
        let wider: Vec<(String, ComputeCapability)> = wider.collect();
        let differs = wider
            .iter()
            .any(|(_, capability)| found.iter().all(|(_, known)| known != capability));
        if found.is_empty() || differs {
            found.extend(wider);
        }
    }
    found.sort_by(|left, right| (left.1, &left.0).cmp(&(right.1, &right.0)));
    found.dedup();
    found
}

/// Words that name another vendor's accelerator, with the vendor; a word also matches
/// with a generation number after it (`GAUDI3`, `TRAINIUM2`).
const OTHER_VENDOR_WORDS: [(&str, &str); 12] = [
    ("AMD", "AMD"),
    ("RADEON", "AMD"),
    ("INSTINCT", "AMD"),
    ("FIREPRO", "AMD"),
    ("INTEL", "Intel"),
    ("ARC", "Intel"),
    ("IRIS", "Intel"),
    ("GAUDI", "Intel"),
    ("HABANA", "Intel"),
    ("TPU", "Google"),
    ("TRAINIUM", "AWS"),
    ("INFERENTIA", "AWS"),
];

/// The vendor of a name that is not an NVIDIA GPU (`MI300X`, `Radeon RX 7900`, `Arc A770`,
/// `Gaudi 3`, `TPU v5e`), so an unknown name can be told apart from a missing NVIDIA model.
/// AMD's Instinct models are also recognised by their `MI` + digits names.
pub fn other_vendor(name: &str) -> Option<&'static str> {
    words(name).iter().find_map(|word| {
        let instinct = word
            .strip_prefix("MI")
            .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()));
        if instinct {
            return Some("AMD");
        }
        OTHER_VENDOR_WORDS
            .iter()
            .find(|(vendor_word, _)| {
                word.strip_prefix(vendor_word)
                    .is_some_and(|rest| rest.chars().all(|c| c.is_ascii_digit()))
            })
            .map(|(_, vendor)| *vendor)
    })
}

/// The bundled models whose name is closest to `name` (a typo, or a neighbour of a model
/// the matrix lacks: `Quadro P1000` → Tesla P100), at most `limit`, closest first, with their
/// compute capabilities. Compared in the normal form, against each row's `match` keys.
pub fn nearest_models(
    matrix: &Matrix,
    name: &str,
    limit: usize,
) -> Vec<(String, ComputeCapability)> {
    let typed = normalise_name(name).to_ascii_lowercase();
    let keyed: Vec<(String, &super::matrix::GpuRow)> = matrix
        .gpus()
        .flat_map(|row| {
            row.match_keys
                .iter()
                .map(move |key| (normalise_name(key).to_ascii_lowercase(), row))
        })
        .collect();
    let keys: Vec<&str> = keyed.iter().map(|(key, _)| key.as_str()).collect();
    let mut found: Vec<(String, ComputeCapability)> = Vec::new();
    for key in crate::suggest::nearest(&typed, &keys, usize::MAX) {
        let row = keyed
            .iter()
            .find(|(candidate, _)| candidate == key)
            .map(|(_, row)| *row);
        if let Some(row) = row
            && !found.iter().any(|(known, _)| *known == row.name)
        {
            found.push((row.name.clone(), row.capability));
        }
    }
    found.truncate(limit);
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(name: &str) -> Vec<(String, String)> {
        model_capability(Matrix::bundled(), name)
            .into_iter()
            .map(|(model, capability)| (model, capability.to_string()))
            .collect()
    }

    fn only(name: &str) -> (String, String) {
        let found = resolve(name);
        assert_eq!(found.len(), 1, "{name}: {found:?}");
        found.into_iter().next().unwrap()
    }

    #[test]
    fn names_normalise() {
        assert_eq!(normalise_name("NVIDIA GeForce RTX 4090"), "RTX 4090");
        assert_eq!(normalise_name("Tesla V100-SXM2-32GB"), "V100 SXM2 32GB");
        assert_eq!(normalise_name("  rtx_4090 "), "RTX 4090");
        assert_eq!(normalise_name("NVIDIA"), "");
    }

    /// NVML's own strings resolve to one model.
    #[test]
    fn nvml_names_resolve() {
        let cases = [
            ("NVIDIA GeForce RTX 4090", "GeForce RTX 4090", "8.9"),
            ("Tesla V100-SXM2-32GB", "NVIDIA V100", "7.0"),
            ("Tesla V100-PCIE-16GB", "NVIDIA V100", "7.0"),
            ("NVIDIA H100 80GB HBM3", "NVIDIA H100", "9.0"),
            ("NVIDIA H100 PCIe", "NVIDIA H100", "9.0"),
            ("NVIDIA A100-SXM4-80GB", "NVIDIA A100", "8.0"),
            ("NVIDIA A100 80GB PCIe", "NVIDIA A100", "8.0"),
            ("Tesla T4", "NVIDIA T4", "7.5"),
            ("NVIDIA L4", "NVIDIA L4", "8.9"),
            ("NVIDIA L40S", "NVIDIA L40S", "8.9"),
            ("NVIDIA H800", "NVIDIA H800", "9.0"),
            ("NVIDIA H800 PCIe", "NVIDIA H800", "9.0"),
            ("NVIDIA H20", "NVIDIA H20", "9.0"),
            ("NVIDIA H200", "NVIDIA H200", "9.0"),
            ("NVIDIA L20", "NVIDIA L20", "8.9"),
            ("NVIDIA A10G", "NVIDIA A10G", "8.6"),
            ("NVIDIA A10", "NVIDIA A10", "8.6"),
            ("NVIDIA GeForce RTX 5090", "GeForce RTX 5090", "12.0"),
            ("NVIDIA GeForce GTX 1080 Ti", "GeForce GTX 1080 Ti", "6.1"),
            ("NVIDIA GeForce RTX 4070 Ti", "GeForce RTX 4070 Ti", "8.9"),
            ("NVIDIA GeForce RTX 3080", "GeForce RTX 3080", "8.6"),
            ("Quadro RTX 6000", "Quadro RTX 6000", "7.5"),
            ("NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada", "8.9"),
            (
                "NVIDIA RTX 4000 SFF Ada Generation",
                "RTX 4000 SFF Ada",
                "8.9",
            ),
            ("NVIDIA RTX A6000", "RTX A6000", "8.6"),
            (
                "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
                "RTX PRO 6000 Blackwell Workstation Edition",
                "12.0",
            ),
            (
                "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",
                "RTX PRO 6000 Blackwell Max-Q Workstation Edition",
                "12.0",
            ),
            ("NVIDIA GH200 480GB", "NVIDIA GH200", "9.0"),
            ("NVIDIA B200", "NVIDIA B200", "10.0"),
            ("NVIDIA GB10", "NVIDIA GB10 (DGX Spark)", "12.1"),
            ("Tesla K80", "Tesla K80", "3.7"),
            ("Tesla P100-PCIE-16GB", "Tesla P100", "6.0"),
            ("NVIDIA TITAN V", "NVIDIA TITAN V", "7.0"),
        ];
        for (nvml, model, capability) in cases {
            assert_eq!(
                only(nvml),
                (model.to_string(), capability.to_string()),
                "{nvml}"
            );
        }
    }

    #[test]
    fn typed_names_resolve() {
        assert_eq!(only("RTX 4090"), ("GeForce RTX 4090".into(), "8.9".into()));
        assert_eq!(only("rtx 4090"), ("GeForce RTX 4090".into(), "8.9".into()));
        assert_eq!(only("4090"), ("GeForce RTX 4090".into(), "8.9".into()));
        assert_eq!(only("H100"), ("NVIDIA H100".into(), "9.0".into()));
        assert_eq!(only("v100"), ("NVIDIA V100".into(), "7.0".into()));
        assert_eq!(only("A100"), ("NVIDIA A100".into(), "8.0".into()));
        assert_eq!(
            only("GTX 1080 Ti"),
            ("GeForce GTX 1080 Ti".into(), "6.1".into())
        );
        assert_eq!(
            only("DGX Spark"),
            ("NVIDIA GB10 (DGX Spark)".into(), "12.1".into())
        );
        // Same capability either way: the exact model is enough.
        assert_eq!(only("GTX 1080"), ("GeForce GTX 1080".into(), "6.1".into()));
    }

    #[test]
    fn ambiguous_names_return_every_candidate() {
        let found = resolve("RTX 6000");
        let capabilities: Vec<&str> = found
            .iter()
            .map(|(_, capability)| capability.as_str())
            .collect();
        assert_eq!(capabilities, ["7.5", "8.9"], "{found:?}");
        let found = resolve("RTX PRO 6000");
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(found.iter().all(|(_, capability)| capability == "12.0"));
        let found = resolve("Orin");
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(found.iter().all(|(_, capability)| capability == "8.7"));
    }

    #[test]
    fn unknown_names_resolve_to_nothing() {
        assert!(resolve("Radeon RX 7900").is_empty());
        assert!(resolve("NVIDIA").is_empty());
        assert!(resolve("").is_empty());
        assert!(resolve("NVIDIA A100X").is_empty());
    }

    /// Every bundled model resolves from its own name and from NVML's spelling of it.
    #[test]
    fn every_model_resolves_from_its_name() {
        for row in Matrix::bundled().gpus() {
            for name in [row.name.clone(), format!("NVIDIA {}", row.name)] {
                let found = model_capability(Matrix::bundled(), &name);
                assert!(
                    found.contains(&(row.name.clone(), row.capability)),
                    "{name}: {found:?}"
                );
                assert!(
                    found
                        .iter()
                        .all(|(_, capability)| *capability == row.capability),
                    "{name}: {found:?}"
                );
            }
        }
    }

    #[test]
    fn other_vendors_are_named() {
        for (name, vendor) in [
            ("MI300X", "AMD"),
            ("AMD Instinct MI250X", "AMD"),
            ("Radeon RX 7900 XTX", "AMD"),
            ("Arc A770", "Intel"),
            ("Intel Data Center GPU Max 1550", "Intel"),
            ("Gaudi 3", "Intel"),
            ("gaudi2", "Intel"),
            ("TPU v5e", "Google"),
            ("Trainium2", "AWS"),
        ] {
            assert_eq!(other_vendor(name), Some(vendor), "{name}");
        }
        for name in [
            "Quadro P1000",
            "H100",
            "RTX 4090",
            "Jetson AGX Orin",
            "MIG 1g.10gb",
        ] {
            assert_eq!(other_vendor(name), None, "{name}");
        }
    }

    #[test]
    fn nearest_models_carry_their_own_capability() {
        // Quadro P3000 (a mobile Pascal part) is not in the matrix; its neighbours are.
        let nearest = nearest_models(Matrix::bundled(), "Quadro P3000", 3);
        assert!(!nearest.is_empty());
        assert!(nearest[0].0.starts_with("Quadro P"), "{nearest:?}");
        for (model, capability) in &nearest {
            let row = Matrix::bundled()
                .gpus()
                .find(|row| row.name == *model)
                .unwrap();
            assert_eq!(row.capability, *capability, "{model}");
        }
        assert!(nearest_models(Matrix::bundled(), "Voodoo 5", 3).is_empty());
    }
}
