//! Which environment variables hold secrets: the one rule every place that shows or writes
//! an environment reads (`up --dry-run`, `profiles show`, `up`'s drift list, the exports,
//! `doctor`'s `profile.literal-secret`). Pure.
//!
//! A variable is secret when its name looks like one ([`is_secret_key`]), when its value
//! does ([`is_secret_value`]: a URL carrying a password, as `DATABASE_URL` often does), or
//! when `up -e KEY` took its value from the shell: a value the user kept out of every file
//! stays out of everything envctl prints. [`is_secret`] is the name and value rule together. Shown values read [`MASK`]; files reference the value instead
//! of copying it (`${KEY}`, `${localEnv:KEY}`, a Kubernetes `secretKeyRef`, `-e KEY`).

/// What a masked value reads in human output and JSON.
pub const MASK: &str = "<masked>";

/// Words that make a name secret on their own: `GH_TOKEN`, `DB_PASS`, `AWS_SECRET_ACCESS_KEY`,
/// `BASIC_AUTH`, `HF_CREDENTIALS`, `GITHUB_PAT` (a personal access token), `SENTRY_DSN`
/// (a DSN carries the project's key), `SSH_PRIVKEY`.
const SECRET_WORDS: [&str; 19] = [
    "TOKEN",
    "TOKENS",
    "SECRET",
    "SECRETS",
    "PASSWORD",
    "PASSWORDS",
    "PASSWD",
    "PASS",
    "PASSPHRASE",
    "KEY",
    "KEYS",
    "CREDENTIAL",
    "CREDENTIALS",
    "CREDS",
    "AUTH",
    "PRIVATE",
    "APIKEY",
    "PAT",
    "DSN",
];

/// Endings that make a run-together word secret: `HFTOKEN`, `CLIENTSECRET`, `DBPASSWORD`
/// (and `apiToken`, which reads `APITOKEN`). Not a beginning: `TOKENIZERS_PARALLELISM` is
/// Hugging Face's switch, not a token.
const SECRET_ENDINGS: [&str; 4] = ["TOKEN", "SECRET", "PASSWORD", "PASSWD"];

/// Endings of run-together words ending in `KEY` that are keys (`ACCESSKEY`,
/// `AWS_SECRETACCESSKEY`); any other (`MONKEY`, `TURNKEY`, `HOCKEY`) is not, and neither is
/// a word that only begins with it (`KEYBOARD`).
const KEY_COMPOUNDS: [&str; 7] = [
    "ACCESSKEY",
    "PRIVKEY",
    "SECRETKEY",
    "PRIVATEKEY",
    "AUTHKEY",
    "SIGNINGKEY",
    "ENCRYPTIONKEY",
];

/// A last word saying the value is where the secret is, not the secret: the
/// `POSTGRES_PASSWORD_FILE=/run/secrets/db` convention, `SSH_AUTH_SOCK`, `SSL_KEY_PATH`.
const LOCATION_ENDINGS: [&str; 5] = ["FILE", "PATH", "DIR", "SOCK", "SOCKET"];

/// `PWD` is the shell's working folder on its own (`PWD`, `OLDPWD`), and a password as the
/// last word of a longer name (`MYSQL_PWD`, which MySQL's clients read as the password).
const PASSWORD_ABBREVIATION: &str = "PWD";

/// Whether the variable `key` holding `value` is secret: by its name ([`is_secret_key`])
/// or by its value ([`is_secret_value`]).
pub fn is_secret(key: &str, value: &str) -> bool {
    is_secret_key(key) || is_secret_value(value)
}

/// Whether `value` carries a secret whatever its name: a URL whose user part has a password
/// (`postgres://user:PASS@host/db`, `https://user:TOKEN@git.example/…`). A URL with a user
/// and no password (`ssh://git@github.com/…`) is not secret by its value; a DSN's key is
/// caught by the name (`SENTRY_DSN`).
pub fn is_secret_value(value: &str) -> bool {
    if is_token_shaped(value) {
        return true;
    }
    let Some((scheme, rest)) = value.split_once("://") else {
        return false;
    };
    let is_scheme = scheme
        .chars()
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !is_scheme {
        return false;
    }
    // The authority ends at the first `/`, `?` or `#`; its user part at the last `@`.
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    authority
        .rsplit_once('@')
        .and_then(|(user_info, _)| user_info.split_once(':'))
        .is_some_and(|(_, password)| !password.is_empty())
}

/// Whether the variable `key` looks like it holds a secret. Case does not matter; the name
/// is read as words split at anything but a letter or digit (`API_KEY`, `api-key`,
/// `db.password`), and a run-together word counts when it ends in a secret word (`HFTOKEN`).
///
/// Not secret: a name with the word `PUBLIC` (`SSH_PUBLIC_KEY`), a name whose last word
/// says where the secret is (`…_FILE`, `…_PATH`, `…_DIR`, `…_SOCK`, `…_SOCKET`), and words
/// that merely contain a secret word (`KEYBOARD`, `MONKEY`, `TOKENIZERS_PARALLELISM`,
/// `PASSTHROUGH`, `AUTHOR`). `PWD` is the shell's working folder, not a password.
pub fn is_secret_key(key: &str) -> bool {
    let upper = key.to_ascii_uppercase();
    let words: Vec<&str> = upper
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|word| !word.is_empty())
        .collect();
    let Some(last) = words.last() else {
        return false;
    };
    if words.contains(&"PUBLIC") || LOCATION_ENDINGS.contains(last) {
        return false;
    }
    if words.len() > 1 && *last == PASSWORD_ABBREVIATION {
        return true;
    }
    words.iter().any(|word| is_secret_word(word))
}

fn is_secret_word(word: &str) -> bool {
    SECRET_WORDS.contains(&word)
        || KEY_COMPOUNDS
            .iter()
            .any(|compound| word.ends_with(compound))
        || SECRET_ENDINGS.iter().any(|ending| word.ends_with(ending))
}

/// The keys of `env` entries (`KEY=value`) for which `is_secret(KEY, value)` holds, in
/// order, each once.
pub fn secret_keys<'a>(
    env: impl IntoIterator<Item = &'a str>,
    is_secret: impl Fn(&str, &str) -> bool,
) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for entry in env {
        let (key, value) = entry.split_once('=').unwrap_or((entry, ""));
        if is_secret(key, value) && !keys.iter().any(|known| known == key) {
            keys.push(key.to_string());
        }
    }
    keys
}

/// `KEY=value` with the value replaced by [`MASK`] when `is_secret(KEY, value)`.
pub fn mask_entry(entry: &str, is_secret: impl Fn(&str, &str) -> bool) -> String {
    match entry.split_once('=') {
        Some((key, value)) if is_secret(key, value) => format!("{key}={MASK}"),
        _ => entry.to_string(),
    }
}

/// `keys` as prose: `` `A` ``, `` `A` and `B` ``, `` `A`, `B` and `C` ``.
pub fn list(keys: &[String]) -> String {
    let quoted: Vec<String> = keys.iter().map(|key| format!("`{key}`")).collect();
    match quoted.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// What `up --dry-run` and `export --to docker-run` say about the secret `keys` their line
/// writes `-e KEY`.
pub fn docker_run_notice(keys: &[String]) -> String {
    let them = if keys.len() == 1 { "it" } else { "them" };
    format!(
        "secret values are not shown: {} {} written `-e KEY`, so docker takes {them} from the shell that runs the line; export {them} there first",
        list(keys),
        if keys.len() == 1 { "is" } else { "are" },
    )
}

/// A line of a TOML file as a diagnostic may quote it, with the value of every secret in
/// it ([`is_secret`]: by the key that holds it, by the value itself, or a `"KEY=value"`
/// item of an `env` list) written as `*`s, one per character so that the carets under the
/// line stay in place. A diagnostic quotes the line it points at whatever is wrong there
/// (a typo'd table name, a duplicate key, a NUL), and the user's own profile holding a
/// token is no reason to print the token.
pub fn mask_toml_line(line: &str) -> String {
    let characters: Vec<char> = line.chars().collect();
    let mut shown = characters.clone();
    // The key the next value belongs to: a bare or quoted key followed by `=`.
    let mut key: Option<String> = None;
    let mut index = 0;
    while index < characters.len() {
        let character = characters[index];
        if character == '"' || character == '\'' {
            let (end, content) = toml_string(&characters, index);
            let after = characters
                .get(end..)
                .unwrap_or_default()
                .iter()
                .find(|c| !c.is_whitespace());
            if after == Some(&'=') {
                key = Some(content);
            } else {
                let keyed_secret = key.as_deref().is_some_and(|key| is_secret(key, &content));
                // A `"KEY=value"` item keeps its name: only the value is hidden.
                let pair_value_start = content
                    .split_once('=')
                    .filter(|(name, value)| is_secret(name, value))
                    .map(|(name, _)| name.chars().count() + 1);
                let first_masked = if keyed_secret || is_secret_value(&content) {
                    Some(index + 1)
                } else {
                    pair_value_start.map(|offset| index + 1 + offset)
                };
                if let Some(first_masked) = first_masked {
                    for masked in shown
                        .iter_mut()
                        .take(end.saturating_sub(1))
                        .skip(first_masked)
                    {
                        *masked = '*';
                    }
                }
                key = None;
            }
            index = end;
            continue;
        }
        if character.is_ascii_alphanumeric() || matches!(character, '_' | '-') {
            let start = index;
            while index < characters.len()
                && (characters[index].is_ascii_alphanumeric()
                    || matches!(characters[index], '_' | '-' | '.'))
            {
                index += 1;
            }
            let word: String = characters[start..index].iter().collect();
            let after = characters[index..].iter().find(|c| !c.is_whitespace());
            if after == Some(&'=') {
                // A dotted key (`env.HF_TOKEN`) is judged by its last part.
                key = Some(word.rsplit('.').next().unwrap_or(&word).to_string());
            } else {
                // A bare word where a value belongs (a missing quote): masked as a value.
                if key.as_deref().is_some_and(|key| is_secret(key, &word)) {
                    for masked in &mut shown[start..index] {
                        *masked = '*';
                    }
                }
                key = None;
            }
            continue;
        }
        if matches!(character, ',' | '{' | '[' | ']' | '}') {
            key = None;
        }
        index += 1;
    }
    shown.into_iter().collect()
}

/// The end (one past the closing quote, or the line's end) and the raw content of the TOML
/// string that opens at `start`.
fn toml_string(characters: &[char], start: usize) -> (usize, String) {
    let quote = characters[start];
    let mut index = start + 1;
    let mut content = String::new();
    while index < characters.len() {
        let character = characters[index];
        if character == quote {
            return (index + 1, content);
        }
        if quote == '"' && character == '\\' && index + 1 < characters.len() {
            content.push(character);
            content.push(characters[index + 1]);
            index += 2;
            continue;
        }
        content.push(character);
        index += 1;
    }
    // Unterminated: the rest of the line is the value, masked to its end.
    (characters.len() + 1, content)
}

/// `text` with the password of every URL in it (`tcp://user:pw@host`,
/// `ssh://me:pw@gpu2`) written [`MASK`]: an endpoint is shown in errors, in `doctor`, in
/// `--hosts` tables and in JSON, and none of those is a place for a password. The one
/// function every shown endpoint goes through; the user name stays, as it says who.
/// The authority ends at the first `/`, `?`, `#` or white space, and its user
/// information at its last `@`, as URL parsers read it.
pub fn masked_url(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains("://") || !text.contains('@') {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("://") {
        let authority_start = start + 3;
        shown.push_str(&rest[..authority_start]);
        let after = &rest[authority_start..];
        let authority_end = after
            .find(|character: char| {
                matches!(character, '/' | '?' | '#') || character.is_whitespace()
            })
            .unwrap_or(after.len());
        let authority = &after[..authority_end];
        match authority.rsplit_once('@') {
            Some((user_information, host)) => match user_information.split_once(':') {
                Some((user, _password)) => {
                    shown.push_str(user);
                    shown.push(':');
                    shown.push_str(MASK);
                    shown.push('@');
                    shown.push_str(host);
                }
                None => shown.push_str(authority),
            },
            None => shown.push_str(authority),
        }
        rest = &after[authority_end..];
    }
    shown.push_str(rest);
    std::borrow::Cow::Owned(shown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_looking_names() {
        for key in [
            "GH_TOKEN",
            "HF_TOKEN",
            "HUGGING_FACE_HUB_TOKEN",
            "API_TOKEN",
            "WANDB_API_KEY",
            "API_KEY",
            "OPENAI_API_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_ACCESS_KEY_ID",
            "DB_PASSWORD",
            "DB_PASS",
            "MYSQL_ROOT_PASSWD",
            "SSH_PASSPHRASE",
            "CLIENT_SECRET",
            "SECRETS",
            "HF_CREDENTIALS",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "REGISTRY_CREDS",
            "BASIC_AUTH",
            "PRIVATE_KEY",
            "SIGNING_KEY",
            "KEY",
            "hf_token",
            "apiKey",
            "hfToken",
            "db.password",
            "api-key",
            "GITHUBTOKEN",
            "NPM_AUTHTOKEN",
            "STRIPE_SECRETKEY",
            "MY_ACCESSKEY",
        ] {
            assert!(is_secret_key(key), "{key} should be secret");
        }
    }

    #[test]
    fn names_that_only_contain_a_secret_word_are_not_secret() {
        for key in [
            "KEYBOARD",
            "KEYBOARD_LAYOUT",
            "MONKEY",
            "TURNKEY_MODE",
            "HOCKEY",
            "TOKENIZERS_PARALLELISM",
            "PASSTHROUGH",
            "AUTHOR",
            "PWD",
            "OLDPWD",
            "PYTHONUNBUFFERED",
            "CUDA_DEVICE_ORDER",
            "CUDA_VISIBLE_DEVICES",
            "NCCL_DEBUG",
            "PATH",
            "HOME",
            "SSH_PUBLIC_KEY",
            "PUBLIC_KEY",
            "POSTGRES_PASSWORD_FILE",
            "SSL_KEY_PATH",
            "SECRETS_DIR",
            "SSH_AUTH_SOCK",
            "",
            "_",
        ] {
            assert!(!is_secret_key(key), "{key} should not be secret");
        }
    }

    /// The credentials a hostile review found printed (issue 30, class 7), and their
    /// neighbours that must stay visible: (name, value, secret).
    const CASES: [(&str, &str, bool); 22] = [
        ("MYSQL_PWD", "hunter2", true),
        ("DATABASE_URL", "postgres://u:PASS@h/d", true),
        ("DATABASE_URL", "postgres://u@h/d", false),
        ("DATABASE_URL", "postgres://h/d", false),
        ("REDIS_URL", "redis://:PASS@cache:6379/0", true),
        ("GIT_REMOTE", "https://user:ghp_x@github.com/o/r.git", true),
        ("GIT_REMOTE", "ssh://git@github.com/o/r.git", false),
        ("HOMEPAGE", "https://example.com/a:b@c", false),
        ("PROXY", "http://proxy:3128", false),
        ("GITHUB_PAT", "ghp_x", true),
        ("SENTRY_DSN", "https://KEY@o1.ingest.sentry.io/2", true),
        ("SSH_PRIVKEY", "-----BEGIN", true),
        ("AWS_SECRETACCESSKEY", "x", true),
        ("PWD", "/work", false),
        ("OLDPWD", "/work", false),
        ("PATTERN", "*.py", false),
        ("PATH", "/usr/bin", false),
        ("DSN_FILE", "/run/secrets/dsn", false),
        ("NOTE", "mailto:a@b", false),
        ("NOTE", "x://a:b@c", true),
        ("NOTE", "1://a:b@c", false),
        ("LABEL", "a:b@c", false),
    ];

    #[test]
    fn lines_quoted_by_diagnostics_hide_secret_values_and_keep_their_width() {
        for (line, shown) in [
            (
                r#"envv = { HF_TOKEN = "hf_abc", FLAG = "on" }"#,
                r#"envv = { HF_TOKEN = "******", FLAG = "on" }"#,
            ),
            (r#"HF_TOKEN = "a\u0000b""#, r#"HF_TOKEN = "********""#),
            (r#"env.API_KEY = 'xyz'"#, r#"env.API_KEY = '***'"#),
            (
                r#"env = ["GH_TOKEN=abc", "A=b"]"#,
                r#"env = ["GH_TOKEN=***", "A=b"]"#,
            ),
            (
                r#"DATABASE_URL = "postgres://u:p@h/d""#,
                r#"DATABASE_URL = "******************""#,
            ),
            (r#"HF_TOKEN = hf_abc"#, r#"HF_TOKEN = ******"#),
            (r#"HF_TOKEN = "unterminated"#, r#"HF_TOKEN = "************"#),
            (r#"memroy = "16g""#, r#"memroy = "16g""#),
            // A commented-out secret is still a secret.
            (
                r#"image = "x" # HF_TOKEN = "y""#,
                r#"image = "x" # HF_TOKEN = "*""#,
            ),
        ] {
            let masked = mask_toml_line(line);
            assert_eq!(masked, shown, "{line}");
            assert_eq!(masked.chars().count(), line.chars().count());
        }
    }

    #[test]
    fn secret_names_and_values_follow_the_table() {
        for (key, value, secret) in CASES {
            assert_eq!(is_secret(key, value), secret, "{key}={value}");
        }
    }

    #[test]
    fn masks_and_lists_secret_entries() {
        let from_shell = |key: &str, value: &str| is_secret(key, value) || key == "FROM_SHELL";
        assert_eq!(
            mask_entry("API_TOKEN=xyz", from_shell),
            "API_TOKEN=<masked>"
        );
        assert_eq!(
            mask_entry("FROM_SHELL=a=b", from_shell),
            "FROM_SHELL=<masked>"
        );
        assert_eq!(mask_entry("FLAG=on", from_shell), "FLAG=on");
        assert_eq!(
            mask_entry("DATABASE_URL=postgres://u:p@h/d", from_shell),
            "DATABASE_URL=<masked>"
        );
        assert_eq!(mask_entry("BARE", from_shell), "BARE");
        assert_eq!(
            secret_keys(
                ["A=1", "API_TOKEN=x", "FROM_SHELL=y", "API_TOKEN=z"],
                from_shell
            ),
            ["API_TOKEN", "FROM_SHELL"]
        );
        assert_eq!(list(&[]), "");
        assert_eq!(list(&["A".into()]), "`A`");
        assert_eq!(list(&["A".into(), "B".into()]), "`A` and `B`");
        assert_eq!(
            list(&["A".into(), "B".into(), "C".into()]),
            "`A`, `B` and `C`"
        );
    }
}

#[cfg(test)]
mod url_tests {
    use super::*;

    #[test]
    fn every_url_password_is_masked_and_the_rest_kept() {
        assert_eq!(
            masked_url("tcp://me:hunter2@gpu2:2376"),
            "tcp://me:<masked>@gpu2:2376"
        );
        assert_eq!(
            masked_url("ssh://me:pw@gpu2/run/d.sock"),
            "ssh://me:<masked>@gpu2/run/d.sock"
        );
        // Inside a message, several, and a password holding `@` or `:`.
        assert_eq!(
            masked_url("cannot reach `tcp://a:b@c:1` nor ssh://x:y:z@w@h now"),
            "cannot reach `tcp://a:<masked>@c:1` nor ssh://x:<masked>@h now"
        );
        // No password: unchanged.
        for plain in [
            "ssh://me@gpu2",
            "unix:///run/docker.sock",
            "tcp://gpu2:2375",
            "a@b",
            "ssh://gpu2/x@y",
        ] {
            assert_eq!(masked_url(plain), plain);
        }
    }
}

/// Prefixes of well-known token shapes, each with the least number of characters of its
/// alphabet (`[A-Za-z0-9_-]`) that must follow: OpenAI and Anthropic (`sk-`), GitHub's
/// (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_`), Hugging Face (`hf_`), GitLab
/// (`glpat-`), Slack (`xoxb-`, `xoxp-`, `xoxa-`, `xoxr-`, `xoxs-`), Stripe (`sk_live_`,
/// `rk_live_`), npm (`npm_`), PyPI (`pypi-`), Google API keys (`AIza`).
const TOKEN_PREFIXES: [(&str, usize); 19] = [
    ("sk-", 20),
    ("ghp_", 30),
    ("gho_", 30),
    ("ghu_", 30),
    ("ghs_", 30),
    ("ghr_", 30),
    ("github_pat_", 22),
    ("hf_", 30),
    ("glpat-", 20),
    ("xoxb-", 10),
    ("xoxp-", 10),
    ("xoxa-", 10),
    ("xoxr-", 10),
    ("xoxs-", 10),
    ("sk_live_", 20),
    ("rk_live_", 20),
    ("npm_", 30),
    ("pypi-", 50),
    ("AIza", 30),
];

/// Whether `value` is (or holds, as a word of its own: `Bearer eyJ…`) a token of a
/// well-known shape, whatever the variable's name: a JWT (`eyJ…` header, three base64url
/// parts), an AWS access key id (`AKIA`/`ASIA` and 16 capitals or digits), or one of
/// [`TOKEN_PREFIXES`] followed by enough characters of a token's alphabet. Short values
/// that merely begin alike (`sk-learn`, `hf_hub`) are not tokens.
pub fn is_token_shaped(value: &str) -> bool {
    value
        .split(|c: char| c.is_whitespace() || c == ',' || c == ';')
        .any(is_token_word)
}

fn is_token_word(word: &str) -> bool {
    let token_alphabet = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if TOKEN_PREFIXES.iter().any(|(prefix, least)| {
        word.strip_prefix(prefix).is_some_and(|rest| {
            rest.chars().count() >= *least
                && rest.chars().all(token_alphabet)
                && rest.chars().any(|c| c.is_ascii_digit())
        })
    }) {
        return true;
    }
    if let Some(rest) = word
        .strip_prefix("AKIA")
        .or_else(|| word.strip_prefix("ASIA"))
    {
        return rest.len() == 16
            && rest
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
    }
    let parts: Vec<&str> = word.split('.').collect();
    parts.len() == 3
        && word.starts_with("eyJ")
        && parts.iter().take(2).all(|part| part.len() >= 10)
        && parts
            .iter()
            .all(|part| !part.is_empty() && part.chars().all(token_alphabet))
}

/// A `KEY=VALUE` word of `-e` as a hint repeats it, as shell text: when the value is secret
/// ([`is_secret`]), `KEY="$KEY"` (the shell that runs the hint gives the value; a key that
/// is no shell name reads `'KEY=<masked>'`), else the word quoted as it is.
pub fn env_argument_shown(word: &str) -> String {
    match word.split_once('=') {
        Some((key, value)) if is_secret(key, value) => {
            let shell_name = key
                .chars()
                .next()
                .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
                && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if shell_name {
                format!("{key}=\"${key}\"")
            } else {
                crate::text::shell_quote(&format!("{key}={MASK}"))
            }
        }
        _ => crate::text::shell_quote(word),
    }
}

#[cfg(test)]
mod token_shape_tests {
    use super::*;

    #[test]
    fn well_known_token_shapes_are_secret_under_any_name() {
        for value in [
            "sk-proj-4f9A8b7C6d5E4f3G2h1I0jKlMnOpQrSt",
            "sk-ant-api03-abcdefghij0123456789",
            "ghp_0123456789abcdefghijABCDEFGHIJklmnop",
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
            "hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
            "AKIAIOSFODNN7EXAMPLE",
            "glpat-xxxxXXXX1234yyyyZZZZ",
            "xoxb-1234567890-abcdefghij",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
            "npm_0123456789abcdefghijABCDEFGHIJklmnop",
            "AIzaSyA0123456789abcdefghijklmnopqrstu",
        ] {
            assert!(is_token_shaped(value), "{value}");
            assert!(is_secret("HARMLESS_NAME", value), "{value}");
        }
        for value in [
            "sk-learn",
            "hf_hub",
            "ghp_short",
            "AKIA-not-a-key",
            "eyJ.x.y",
            "1.2.3",
            "scikit-learn==1.5.0",
            "glpat-",
            "sk-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        ] {
            assert!(!is_token_shaped(value), "{value}");
        }
    }

    #[test]
    fn an_env_argument_with_a_secret_value_is_shown_by_its_key() {
        assert_eq!(env_argument_shown("A=1"), "A=1");
        assert_eq!(
            env_argument_shown("X=ghp_0123456789abcdefghijABCDEFGHIJklmnop"),
            "X=\"$X\""
        );
        assert_eq!(
            env_argument_shown("API_TOKEN=abc"),
            "API_TOKEN=\"$API_TOKEN\""
        );
        assert_eq!(env_argument_shown("my.token=abc"), "'my.token=<masked>'");
        assert_eq!(env_argument_shown("PLAIN"), "PLAIN");
        assert_eq!(env_argument_shown("A=two words"), "'A=two words'");
    }
}
