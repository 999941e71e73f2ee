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

/// What a command line most likely meant, when it says something else or nothing envctl
/// knows (`envctl stop`, `up -v ./data:/x`): the message and a hint that is a whole command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meant {
    pub message: String,
    pub hint: String,
}

/// envctl's global flags that take a value: skipped with it when looking for the subcommand.
const GLOBAL_WITH_VALUE: [&str; 1] = ["--color"];

/// Where the subcommand stands in `arguments` (the program name first): the first word
/// after the global flags.
fn subcommand_index(arguments: &[String]) -> Option<usize> {
    let mut index = 1;
    while let Some(word) = arguments.get(index) {
        if GLOBAL_WITH_VALUE.contains(&word.as_str()) {
            index += 2;
        } else if word.starts_with('-') {
            index += 1;
        } else {
            return Some(index);
        }
    }
    None
}

/// `arguments` as one shell line, `envctl` first.
fn line(arguments: &[String]) -> String {
    let mut words = vec!["envctl".to_string()];
    words.extend(
        arguments
            .iter()
            .skip(1)
            .map(|word| crate::text::shell_quote(word)),
    );
    words.join(" ")
}

/// A command line that parses but means what the user did not: `envctl up -v SRC:DST P`
/// (in envctl `-v` is `--verbose`; docker's `-v` mount is `--volume`). Checked before the
/// command line is parsed, since `up -v ./data:/x` alone would parse with the mount as the
/// profile.
pub fn misread_command_line(arguments: &[String]) -> Option<Meant> {
    let index = subcommand_index(arguments)?;
    if arguments[index] != "up" {
        return None;
    }
    let at = arguments
        .iter()
        .enumerate()
        .skip(index + 1)
        .position(|(at, word)| {
            (word == "-v" || word == "--verbose")
                && arguments
                    .get(at + 1)
                    .is_some_and(|next| next.contains(':') && !next.starts_with('-'))
        })?
        + index
        + 1;
    let mount = &arguments[at + 1];
    let mut fixed = arguments.to_vec();
    fixed[at] = "--volume".into();
    Some(Meant {
        message: format!(
            "`-v {mount}`: in envctl `-v` is --verbose; a mount is `--volume SRC:DST`"
        ),
        hint: format!("did you mean `--volume {mount}`? `{}`", line(&fixed)),
    })
}

/// `docker run`'s flags that are keys of a profile in envctl: the flag, the key, and an
/// example of the key's line (`up --cpus 2` is no `--gpus 2`, which clap would suggest).
const DOCKER_PROFILE_FLAGS: [(&str, &str, &str); 13] = [
    ("--memory", "memory", "memory = \"16g\""),
    ("-m", "memory", "memory = \"16g\""),
    ("--cpus", "cpus", "cpus = 8"),
    ("--shm-size", "shm_size", "shm_size = \"8g\""),
    ("--ulimit", "ulimits", "[ulimits] memlock = -1"),
    ("--cap-add", "cap_add", "cap_add = [\"IPC_LOCK\"]"),
    ("--device", "devices", "devices = [\"/dev/infiniband\"]"),
    ("--network", "network", "network = \"host\""),
    ("--net", "network", "network = \"host\""),
    ("--ipc", "ipc", "ipc = \"host\""),
    ("--hostname", "hostname", "hostname = \"node0\""),
    ("--label", "labels", "[labels] team = \"vision\""),
    ("--workdir", "workdir", "workdir = \"/workspace\""),
];

/// docker's `run` flags that mean something else in envctl: `up` always starts detached
/// and keeps its container; a terminal is `envctl shell` once it is up.
const DOCKER_RUN_HABITS: [&str; 8] = [
    "-d",
    "--detach",
    "--rm",
    "-i",
    "-t",
    "--interactive",
    "--tty",
    "-it",
];

/// An unknown flag of `up`/`run` that is a `docker run` habit: a profile key's flag is
/// answered with the key (where the profile's file is: `envctl profiles show`); `-d`,
/// `--rm`, `-it` with what envctl does instead and the command without them.
fn docker_run_flag(arguments: &[String], subcommand: &str, flag: &str) -> Option<Meant> {
    let name = flag.split_once('=').map_or(flag, |(name, _)| name);
    let without = without_flag(arguments, subcommand, flag, name)?;
    // The profile: the first word after the subcommand that is no flag.
    let profile = subcommand_index(&without)
        .and_then(|index| without.get(index + 1..))
        .and_then(|rest| rest.iter().find(|word| !word.starts_with('-')))
        .map_or_else(
            || "PROFILE".to_string(),
            |word| crate::text::shell_quote(word),
        );
    if let Some((_, key, example)) = DOCKER_PROFILE_FLAGS
        .iter()
        .find(|(docker, _, _)| *docker == name)
    {
        return Some(Meant {
            message: format!(
                "`{name}` is docker's flag; in envctl it is the profile key `{key}` (`{example}`)"
            ),
            hint: format!(
                "set `{key}` in the profile's file, which `envctl profiles show {profile}` names"
            ),
        });
    }
    let interactive = ["-i", "-t", "--interactive", "--tty", "-it"].contains(&name)
        || (name.starts_with('-')
            && !name.starts_with("--")
            && name[1..]
                .chars()
                .all(|letter| letter == 'i' || letter == 't'));
    if !DOCKER_RUN_HABITS.contains(&name) && !interactive {
        return None;
    }
    let hint = if subcommand == "up" && interactive {
        format!("`{}`, then `envctl shell {profile}`", line(&without))
    } else {
        format!("leave out `{name}`: `{}`", line(&without))
    };
    Some(Meant {
        message: habit_instead(subcommand, name),
        hint,
    })
}

/// Whether `word` is a cluster of docker's letters (`-it`, `-dit`) holding the letter of
/// flag `name`, which clap named: the whole cluster is docker's habit.
fn in_cluster(name: &str, word: &str) -> bool {
    name.len() == 2
        && word.len() > 2
        && word.strip_prefix('-').is_some_and(|letters| {
            !letters.starts_with('-')
                && letters.contains(&name[1..])
                && letters.chars().all(|letter| "dit".contains(letter))
        })
}

/// The command line without the docker flag `flag` (named `name`) and its value; in a
/// cluster only docker's letters go (`run -it` keeps `-i`, which `run` takes). `None`
/// when the flag is not on the line.
fn without_flag(
    arguments: &[String],
    subcommand: &str,
    flag: &str,
    name: &str,
) -> Option<Vec<String>> {
    let at = arguments.iter().position(|word| {
        word == flag
            || in_cluster(name, word)
            || word.split_once('=').is_some_and(|(left, _)| left == name)
    })?;
    let takes_value = DOCKER_PROFILE_FLAGS
        .iter()
        .any(|(docker, _, _)| *docker == name)
        && !arguments[at].contains('=');
    let mut without = arguments.to_vec();
    let kept: String = if in_cluster(name, &arguments[at]) {
        let docker_letters = if subcommand == "run" { "dt" } else { "dit" };
        arguments[at][1..]
            .chars()
            .filter(|letter| !docker_letters.contains(*letter))
            .collect()
    } else {
        String::new()
    };
    if kept.is_empty() {
        without.drain(at..(at + if takes_value { 2 } else { 1 }).min(arguments.len()));
    } else {
        without[at] = format!("-{kept}");
    }
    Some(without)
}

/// What `subcommand` does instead of docker's habit `name` (`-d`, `--rm`, `-it`).
fn habit_instead(subcommand: &str, name: &str) -> String {
    match (subcommand, name) {
        ("up", "-d" | "--detach") => "`up` always starts the container detached".to_string(),
        ("up", "--rm") => {
            "`up` keeps its container until `envctl down --rm` removes it".to_string()
        }
        ("up", _) => {
            "`up` starts the container detached: a terminal in it is `envctl shell`".to_string()
        }
        (_, "-d" | "--detach") => {
            "`run` follows its command to the end; a detached container is `envctl up`".to_string()
        }
        (_, "--rm") => "`run` always removes its container when the command ends".to_string(),
        _ => format!(
            "`{name}` is docker's; `run` passes its output through, and piped input reaches the command"
        ),
    }
}

/// The commands people bring from docker, and what envctl does instead.
const DOCKER_WORDS: [(&str, &str); 4] = [
    ("start", "up"),
    ("stop", "down"),
    ("rm", "down"),
    ("stat", "stats"),
];

/// An unknown subcommand `word` (at `arguments[index]`): docker's `stop` is `down`, `rm`
/// is `down --rm`; a typo gets the nearest of `known` (the subcommands). (`run` is
/// envctl's own command, as docker's.)
pub fn unknown_subcommand(arguments: &[String], known: &[&str]) -> Option<Meant> {
    unknown_subcommand_of(arguments, subcommand_index(arguments)?, &[], known)
}

/// An unknown word at `arguments[index]` where a subcommand of `envctl PARENT…` goes
/// (`envctl profiles lst`): the nearest of that level's subcommands, `known`, so the hint
/// never names the level the user already typed. docker's words apply at the top only.
pub fn unknown_subcommand_of(
    arguments: &[String],
    index: usize,
    parent: &[&str],
    known: &[&str],
) -> Option<Meant> {
    let word = arguments.get(index)?.as_str();
    let rest = &arguments[index + 1..];
    let top = parent.is_empty();
    let mut command = vec!["envctl"];
    command.extend_from_slice(parent);
    let message = if top {
        format!("envctl has no command `{word}`")
    } else {
        format!("`{}` has no command `{word}`", command.join(" "))
    };
    let meant = DOCKER_WORDS
        .iter()
        .filter(|_| top)
        .find(|(docker, _)| *docker == word)
        .map(|(_, envctl)| *envctl)
        .filter(|envctl| known.contains(envctl))
        .or_else(|| did_you_mean(word, known))
        .filter(|meant| *meant != word)?;
    let mut fixed = arguments.to_vec();
    fixed[index] = meant.to_string();
    if top && word == "rm" && !rest.iter().any(|flag| flag == "--rm") {
        fixed.push("--rm".into());
    }
    Some(Meant {
        message,
        hint: format!("did you mean `{meant}`? `{}`", line(&fixed)),
    })
}

/// clap's tip for an unknown flag ("to pass '-x' as a value, use '-- -x'") leads nowhere
/// in envctl: the hint is the command with clap's suggested flag, else where the flags are
/// listed. `flag`: the word clap refused; `suggested`: the flag clap found near it.
pub fn unknown_flag(arguments: &[String], flag: &str, suggested: Option<&str>) -> Meant {
    let subcommand = subcommand_index(arguments).map(|index| arguments[index].as_str());
    if let Some(subcommand @ ("up" | "run")) = subcommand
        && let Some(meant) = docker_run_flag(arguments, subcommand, flag)
    {
        return meant;
    }
    let help = match subcommand {
        Some(subcommand) => format!("`envctl {subcommand} --help` lists its flags"),
        None => "`envctl --help` lists the commands and flags".to_string(),
    };
    let message = format!("unexpected argument `{flag}`");
    let position = arguments.iter().skip(1).position(|word| word == flag);
    match (suggested, position) {
        (Some(suggested), Some(position)) => {
            let mut fixed = arguments.to_vec();
            fixed[position + 1] = suggested.to_string();
            Meant {
                message,
                hint: format!("did you mean `{suggested}`? `{}`", line(&fixed)),
            }
        }
        _ => Meant {
            message,
            hint: if flag.starts_with('-') {
                help
            } else {
                format!("{help} and what it takes")
            },
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEYS: [&str; 5] = ["memory", "mounts", "shm_size", "torch", "gpus"];

    #[test]
    fn a_docker_flag_leaves_the_line_with_its_value() {
        assert_eq!(
            without_flag(
                &words("envctl up team --memory 8g"),
                "up",
                "--memory",
                "--memory"
            ),
            Some(words("envctl up team"))
        );
        assert_eq!(
            without_flag(
                &words("envctl up team --memory=8g"),
                "up",
                "--memory=8g",
                "--memory"
            ),
            Some(words("envctl up team"))
        );
        // `run` takes `-i`: only docker's `-t` leaves the cluster.
        assert_eq!(
            without_flag(&words("envctl run -it team"), "run", "-i", "-i"),
            Some(words("envctl run -i team"))
        );
        assert_eq!(
            without_flag(&words("envctl up team"), "up", "-d", "-d"),
            None
        );
        assert!(in_cluster("-i", "-dit"));
        assert!(!in_cluster("-i", "--it"));
        assert!(!in_cluster("--rm", "-it"));
        assert_eq!(
            habit_instead("run", "--rm"),
            "`run` always removes its container when the command ends"
        );
    }

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

    fn words(line: &str) -> Vec<String> {
        line.split(' ').map(str::to_string).collect()
    }

    const COMMANDS: [&str; 6] = ["doctor", "up", "exec", "down", "stats", "outdated"];

    /// Issue 31: docker's habits get the envctl command that does it.
    #[test]
    fn docker_words_get_envctls_command() {
        let meant = |line: &str| unknown_subcommand(&words(line), &COMMANDS).unwrap().hint;
        assert_eq!(meant("envctl stat"), "did you mean `stats`? `envctl stats`");
        assert_eq!(
            meant("envctl -q stop pytorch-2.8"),
            "did you mean `down`? `envctl -q down pytorch-2.8`"
        );
        assert_eq!(
            meant("envctl rm x"),
            "did you mean `down`? `envctl down x --rm`"
        );
        assert_eq!(unknown_subcommand(&words("envctl zzzzzz"), &COMMANDS), None);
        // Issue 40: docker's flags that are profile keys name the key, not `--gpus`.
        let cpus = unknown_flag(&words("envctl up --cpus 2 train"), "--cpus", Some("--gpus"));
        assert!(
            cpus.message.contains("the profile key `cpus`"),
            "{}",
            cpus.message
        );
        assert_eq!(
            cpus.hint,
            "set `cpus` in the profile's file, which `envctl profiles show train` names"
        );
        let memory = unknown_flag(&words("envctl up train --memory=4g"), "--memory", None);
        assert!(
            memory.hint.ends_with("`envctl profiles show train` names"),
            "{}",
            memory.hint
        );
        let detached = unknown_flag(&words("envctl up -d train"), "-d", None);
        assert_eq!(detached.hint, "leave out `-d`: `envctl up train`");
        let terminal = unknown_flag(&words("envctl up -it train"), "-i", None);
        assert_eq!(
            terminal.hint,
            "`envctl up train`, then `envctl shell train`"
        );
        let kept = unknown_flag(&words("envctl run -it train sh"), "-t", None);
        assert_eq!(kept.hint, "leave out `-t`: `envctl run -i train sh`");
        let removed = unknown_flag(&words("envctl run --rm train echo"), "--rm", None);
        assert!(
            removed.message.contains("always removes"),
            "{}",
            removed.message
        );
        // Anything else is clap's suggestion as before.
        let other = unknown_flag(&words("envctl up --al train"), "--al", Some("--all"));
        assert!(
            other.hint.starts_with("did you mean `--all`?"),
            "{}",
            other.hint
        );
        // Issue 40: a typo one level down is answered from that level's commands.
        let nested = unknown_subcommand_of(
            &words("envctl profiles lst --json"),
            2,
            &["profiles"],
            &["list", "show", "new"],
        )
        .unwrap();
        assert_eq!(nested.message, "`envctl profiles` has no command `lst`");
        assert_eq!(
            nested.hint,
            "did you mean `list`? `envctl profiles list --json`"
        );
        // docker's words are top-level only: `profiles stop` is no `down`.
        assert_eq!(
            unknown_subcommand_of(&words("envctl profiles stop"), 2, &["profiles"], &["list"]),
            None
        );
    }

    #[test]
    fn a_docker_mount_after_v_is_a_volume() {
        let meant = misread_command_line(&words("envctl up -v ./data:/x pytorch-2.8")).unwrap();
        assert_eq!(
            meant.hint,
            "did you mean `--volume ./data:/x`? `envctl up --volume ./data:/x pytorch-2.8`"
        );
        assert!(misread_command_line(&words("envctl --color never up p -v /a:/b")).is_some());
        assert_eq!(
            misread_command_line(&words("envctl up -v pytorch-2.8")),
            None
        );
        assert_eq!(
            misread_command_line(&words("envctl exec -v c ls a:b")),
            None
        );
    }

    #[test]
    fn an_unknown_flag_gets_a_command_not_a_separator() {
        let meant = unknown_flag(&words("envctl ps --al"), "--al", Some("--all"));
        assert_eq!(meant.hint, "did you mean `--all`? `envctl ps --all`");
        let meant = unknown_flag(&words("envctl up p --frob"), "--frob", None);
        assert_eq!(meant.hint, "`envctl up --help` lists its flags");
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
