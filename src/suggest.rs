//! Nearest-name suggestions, the "did you mean `memory`?" of every unknown key, table,
//! value or profile name: one rule for how close a typo must be to get a suggestion.
//!
//! The threshold: a known name is suggested when its Damerau–Levenshtein distance to the
//! unknown word (lowercased; a swap of two neighbours counts as one edit, so `memroy` finds
//! `memory`) is at most `max(len / 3, 1) + 1`, where `len` is the known name's length in
//! bytes — two edits for names up to 5 characters, three up to 8, and so on. Short names
//! thus still catch a double typo, while long ones do not pull in unrelated words. Among
//! several within reach the closest wins, the first listed on a tie.

/// The known name closest to `unknown`, when it is close enough to be a typo (the
/// threshold in the module doc).
pub fn did_you_mean<'a>(unknown: &str, known: &[&'a str]) -> Option<&'a str> {
    let lower = unknown.to_ascii_lowercase();
    known
        .iter()
        .map(|candidate| (strsim::damerau_levenshtein(&lower, candidate), *candidate))
        .filter(|(distance, candidate)| *distance <= close_enough(candidate))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

/// Like [`did_you_mean`], but a word in `aliases` (`("volumes", "mounts")`: what people
/// write, from compose or docker, and the name envctl uses) is answered with its name
/// first, whatever the distance, when that name is among `known`.
pub fn did_you_mean_with_aliases<'a>(
    unknown: &str,
    known: &[&'a str],
    aliases: &[(&str, &str)],
) -> Option<&'a str> {
    let lower = unknown.to_ascii_lowercase();
    if let Some((_, name)) = aliases.iter().find(|(alias, _)| *alias == lower)
        && let Some(found) = known.iter().find(|candidate| *candidate == name)
    {
        return Some(found);
    }
    did_you_mean(unknown, known)
}

/// Every known name close enough to `unknown` to be a typo (the threshold in the module
/// doc), closest first (the first listed on a tie), at most `limit` of them: for "nearest
/// known models" lists, where one best guess would hide the others.
pub fn nearest<'a>(unknown: &str, known: &[&'a str], limit: usize) -> Vec<&'a str> {
    let lower = unknown.to_ascii_lowercase();
    let mut close: Vec<(usize, usize, &'a str)> = known
        .iter()
        .enumerate()
        .map(|(index, candidate)| {
            let distance = strsim::damerau_levenshtein(&lower, candidate);
            (distance, index, *candidate)
        })
        .filter(|(distance, _, candidate)| *distance <= close_enough(candidate))
        .collect();
    close.sort();
    let mut names: Vec<&'a str> = Vec::new();
    for (_, _, candidate) in close {
        if !names.contains(&candidate) {
            names.push(candidate);
        }
    }
    names.truncate(limit);
    names
}

/// The largest edit distance at which `candidate` is still suggested.
fn close_enough(candidate: &str) -> usize {
    (candidate.len() / 3).max(1) + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEYS: [&str; 5] = ["memory", "mounts", "shm_size", "torch", "gpus"];

    #[test]
    fn typos_within_the_threshold_are_suggested() {
        assert_eq!(did_you_mean("memroy", &KEYS), Some("memory"));
        assert_eq!(did_you_mean("shm-size", &KEYS), Some("shm_size"));
        assert_eq!(did_you_mean("MEMORY", &KEYS), Some("memory"));
        assert_eq!(did_you_mean("gpu", &KEYS), Some("gpus"));
        assert_eq!(did_you_mean("zzzzzz", &KEYS), None);
        assert_eq!(did_you_mean("anything", &[]), None);
    }

    #[test]
    fn the_threshold_grows_with_the_name() {
        assert_eq!(close_enough("gpu"), 2);
        assert_eq!(close_enough("torch"), 2);
        assert_eq!(close_enough("shm_size"), 3);
        assert_eq!(close_enough("cuda_targets"), 5);
        // Two edits reach a five-letter name, three do not.
        assert_eq!(did_you_mean("pytorch", &["torch"]), Some("torch"));
        assert_eq!(did_you_mean("xytorch", &["torch"]), Some("torch"));
        assert_eq!(did_you_mean("tor", &["torch"]), Some("torch"));
        assert_eq!(did_you_mean("to", &["torch"]), None);
    }

    #[test]
    fn the_closest_wins_and_the_first_on_a_tie() {
        assert_eq!(
            did_you_mean("mount", &["amounts", "mounts"]),
            Some("mounts")
        );
        assert_eq!(did_you_mean("ab", &["ac", "ad"]), Some("ac"));
    }

    #[test]
    fn aliases_come_first_when_their_name_is_known() {
        let aliases = [
            ("volumes", "mounts"),
            ("mem", "memory"),
            ("env", "environment"),
        ];
        assert_eq!(
            did_you_mean_with_aliases("volumes", &KEYS, &aliases),
            Some("mounts")
        );
        assert_eq!(
            did_you_mean_with_aliases("MEM", &KEYS, &aliases),
            Some("memory")
        );
        // The alias's name is not known: the edit distance decides.
        assert_eq!(did_you_mean_with_aliases("env", &KEYS, &aliases), None);
        assert_eq!(
            did_you_mean_with_aliases("memroy", &KEYS, &aliases),
            Some("memory")
        );
    }

    #[test]
    fn nearest_lists_every_close_name_closest_first() {
        let models = ["p100", "a100", "v100", "p40", "h100", "p100"];
        assert_eq!(nearest("P1000", &models, 3), ["p100", "a100", "v100"]);
        assert_eq!(nearest("P1000", &models, 1), ["p100"]);
        assert!(nearest("voodoo", &models, 3).is_empty());
        assert!(nearest("p100", &[], 3).is_empty());
    }
}
