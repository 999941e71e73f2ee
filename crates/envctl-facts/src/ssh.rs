//! An `ssh://` endpoint as plain words: the user, host, port and far socket the docker
//! CLI would read from it, each checked before it can reach ssh or the far side's shell
//! ([`SshRefusal`]), and the arguments ssh is given. Pure parsing: the engine's connector
//! spawns ssh with [`SshTarget::arguments`]; the team file, contexts and `ops` check an
//! endpoint with [`ssh_refusal`] without naming the engine.

/// How long ssh may take to set up a connection, as the docker CLI gives it
/// (`-o ConnectTimeout=30`); envctl's own deadlines are shorter and come first.
const SSH_CONNECT_TIMEOUT: &str = "ConnectTimeout=30";

/// An `ssh://` endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshTarget {
    pub user: Option<String>,
    pub host: String,
    pub port: Option<u16>,
    /// The daemon's socket on the far side (`ssh://host/run/docker.sock`); `None`: the
    /// far side's default (its `DOCKER_HOST`, else its default socket).
    pub socket: Option<String>,
}

impl SshTarget {
    /// ssh's arguments, as the docker CLI gives them: `-o ConnectTimeout=30 -T [-l user]
    /// [-p port] -- host docker [--host unix://socket] system dial-stdio`.
    pub fn arguments(&self) -> Vec<String> {
        let mut arguments: Vec<String> = vec!["-o".into(), SSH_CONNECT_TIMEOUT.into(), "-T".into()];
        if let Some(user) = &self.user {
            arguments.extend(["-l".into(), user.clone()]);
        }
        if let Some(port) = self.port {
            arguments.extend(["-p".into(), port.to_string()]);
        }
        arguments.extend(["--".into(), self.host.clone(), "docker".into()]);
        if let Some(socket) = &self.socket {
            arguments.extend(["--host".into(), format!("unix://{socket}")]);
        }
        arguments.extend(["system".into(), "dial-stdio".into()]);
        arguments
    }
}

impl SshTarget {
    /// The target an `ssh://` endpoint names, read as the docker CLI reads it (the user
    /// name and socket path percent-decoded), or why it is refused. Every word that will
    /// reach ssh is checked here, the one place an endpoint becomes ssh's arguments,
    /// whichever source named it (`-H`, `DOCKER_HOST`, a context, the team file): see
    /// [`SshRefusal`].
    pub fn parse(endpoint: &str) -> Result<SshTarget, SshRefusal> {
        // The URL parser drops tabs and line feeds silently: a word with a control
        // character in it is refused before it is parsed, not changed into another one.
        if let Some(control) = endpoint.chars().find(|character| character.is_control()) {
            return Err(SshRefusal::Control { character: control });
        }
        let url = url::Url::parse(endpoint).map_err(|_| SshRefusal::NotAUrl)?;
        if url.scheme() != "ssh" {
            return Err(SshRefusal::NotAUrl);
        }
        // The CLI refuses a password in the URL: ssh asks for one itself.
        if url.password().is_some() {
            return Err(SshRefusal::Password);
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(SshRefusal::QueryOrFragment);
        }
        let Some(host) = url.host_str().filter(|host| !host.is_empty()) else {
            return Err(SshRefusal::NoHost);
        };
        // ssh takes an IPv6 address without its brackets, as the CLI gives it.
        let host = match url.host() {
            Some(url::Host::Ipv6(address)) => address.to_string(),
            _ => percent_decoded(host).ok_or(SshRefusal::NotAUrl)?,
        };
        refuse_unsafe(SshWord::Host, &host)?;
        let user = Some(url.username())
            .filter(|user| !user.is_empty())
            .map(|user| percent_decoded(user).ok_or(SshRefusal::NotAUrl))
            .transpose()?;
        if let Some(user) = &user {
            refuse_unsafe(SshWord::User, user)?;
        }
        let socket = Some(url.path())
            .filter(|path| !path.is_empty() && *path != "/")
            .map(|path| percent_decoded(path).ok_or(SshRefusal::NotAUrl))
            .transpose()?;
        if let Some(socket) = &socket {
            refuse_unsafe(SshWord::Socket, socket)?;
        }
        if url.port() == Some(0) {
            return Err(SshRefusal::PortZero);
        }
        Ok(SshTarget {
            user,
            host,
            port: url.port(),
            socket,
        })
    }
}

/// A word of an `ssh://` endpoint that reaches ssh.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SshWord {
    User,
    Host,
    Socket,
}

impl SshWord {
    fn name(self) -> &'static str {
        match self {
            SshWord::User => "user name",
            SshWord::Host => "host",
            SshWord::Socket => "socket path",
        }
    }

    /// Where the word goes, which is why it must be plain.
    fn goes(self) -> &'static str {
        match self {
            SshWord::User => {
                "it goes to ssh as `-l USER`, which an ssh_config's `%r` hands to a shell"
            }
            SshWord::Host => {
                "it goes to ssh as the host, which an ssh_config's `%h` hands to a shell"
            }
            SshWord::Socket => {
                "it is part of the command ssh runs on the far side, which the remote user's shell reads"
            }
        }
    }

    /// The characters the word may hold.
    fn allowed(self) -> &'static str {
        match self {
            SshWord::User => "letters, digits and `. _ - @`",
            SshWord::Host => "letters, digits and `. _ -` (or an IPv6 address in brackets)",
            SshWord::Socket => "letters, digits and `/ . _ - + @ : , =`",
        }
    }

    fn takes(self, character: char) -> bool {
        character.is_ascii_alphanumeric()
            || match self {
                SshWord::User => matches!(character, '.' | '_' | '-' | '@'),
                SshWord::Host => matches!(character, '.' | '_' | '-' | ':'),
                SshWord::Socket => {
                    matches!(
                        character,
                        '/' | '.' | '_' | '-' | '+' | '@' | ':' | ',' | '='
                    )
                }
            }
    }
}

/// Why an `ssh://` endpoint is not given to ssh. Every word of it that reaches ssh (the
/// user name, the host, the socket path) is refused unless it is plain: the socket path
/// becomes part of the command the far side's shell runs (`docker --host unix://PATH
/// system dial-stdio`), so `/run/docker.sock;touch /tmp/x` would run `touch` there, and
/// the user name and host reach a shell wherever an ssh_config uses `%r` or `%h` in
/// `ProxyCommand` or `Match exec`. Refused rather than quoted: the far side's shell may
/// be any shell, and no quoting is right for all of them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SshRefusal {
    #[error("it is not a URL envctl can read as `ssh://[USER@]HOST[:PORT][/SOCKET]`")]
    NotAUrl,
    #[error("it names no host")]
    NoHost,
    #[error(
        "it carries a password, which envctl never sends (ssh asks for one itself, or uses a key or the agent)"
    )]
    Password,
    #[error("it has a query or a fragment (`?`, `#`), which the docker CLI does not take either")]
    QueryOrFragment,
    #[error("port 0 is no port")]
    PortZero,
    #[error("it holds the control character {}", .character.escape_debug())]
    Control { character: char },
    #[error(
        "its {} `{}` holds `{}`: {}; a {} may hold only {}",
        .word.name(), .value.escape_debug(), .character.escape_debug(), .word.goes(), .word.name(), .word.allowed()
    )]
    Unsafe {
        word: SshWord,
        value: String,
        character: char,
    },
    #[error("its {} `{}` begins with `-`, which ssh would read as an option", .word.name(), .value.escape_debug())]
    Dash { word: SshWord, value: String },
}

/// `value` as a word `word` may be, or the first character that makes it unsafe.
fn refuse_unsafe(word: SshWord, value: &str) -> Result<(), SshRefusal> {
    if value.starts_with('-') {
        return Err(SshRefusal::Dash {
            word,
            value: value.to_string(),
        });
    }
    match value.chars().find(|character| !word.takes(*character)) {
        Some(character) => Err(SshRefusal::Unsafe {
            word,
            value: value.to_string(),
            character,
        }),
        None => Ok(()),
    }
}

/// Why the `ssh://` endpoint `endpoint` would be refused, for the sources that name one
/// (a context, the team file) to say so with their own place; `None` for an endpoint that
/// is not `ssh://` or that is fine.
pub fn ssh_refusal(endpoint: &str) -> Option<SshRefusal> {
    let scheme = endpoint.split_once("://").map(|(scheme, _)| scheme)?;
    if !scheme.eq_ignore_ascii_case("ssh") {
        return None;
    }
    SshTarget::parse(endpoint).err()
}

/// `%40` in a user name, as a URL may carry it.
fn percent_decoded(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = text.get(index + 1..index + 3)?;
            decoded.push(u8::from_str_radix(hex, 16).ok()?);
            index += 3;
        } else {
            decoded.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(decoded).ok()
}
