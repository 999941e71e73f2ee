//! Who the chosen daemon's transport proves the client is ([`Identity`]): the kernel's
//! uid for a unix socket, the login user sshd admitted for `ssh://`, the client
//! certificate's subject for TLS, and no one for plain `tcp://` (or TLS without a client
//! certificate). Learnt from the daemon choice alone, before any request: the certificate
//! file envctl hands rustls, and `ssh -G` for the user ssh would log in as.

use std::path::Path;
use std::time::{Duration, Instant};

use envctl_facts::user::{Identity, User};
use envctl_host::docker_config::DaemonChoice;

use super::connector::SshTarget;

/// The largest certificate file read (as the connector reads it).
const MAXIMUM_PEM_BYTES: u64 = 1024 * 1024;

/// How long `ssh -G` may take: it connects nowhere, but an ssh_config's `Match exec`
/// runs a command.
const SSH_CONFIG_DEADLINE: Duration = Duration::from_secs(10);

/// Why the transport's identity could not be learnt; the identity is then unproven.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    #[error("the client certificate `{path}` {why}")]
    Certificate { path: String, why: String },
    #[error("`ssh -G {host}` did not say which user ssh logs in as: {why}")]
    SshUser { host: String, why: String },
    #[error("the real uid of this process is unknown (/proc/self/status unreadable)")]
    NoUid,
    #[error("this machine's host name is unknown: {0}")]
    Hostname(#[source] std::io::Error),
}

/// Who `choice`'s transport proves `local` (the user running envctl on the machine named
/// `hostname`) to be.
pub fn of_choice(
    choice: &DaemonChoice,
    local: &User,
    hostname: Result<String, std::io::Error>,
) -> Result<Identity, IdentityError> {
    let endpoint = choice.endpoint.as_str();
    let scheme = endpoint
        .split_once("://")
        .map(|(scheme, _)| scheme.to_ascii_lowercase());
    let claimed = || -> Result<String, IdentityError> {
        let uid = local.uid.ok_or(IdentityError::NoUid)?;
        let host = hostname.as_ref().map_err(|error| {
            IdentityError::Hostname(std::io::Error::new(error.kind(), error.to_string()))
        })?;
        Ok(format!("uid:{uid}@{host}"))
    };
    match scheme.as_deref() {
        Some("unix") => {
            let uid = local.uid.ok_or(IdentityError::NoUid)?;
            let host = hostname.map_err(IdentityError::Hostname)?;
            Ok(Identity::LocalUid { uid, host })
        }
        Some("ssh") => {
            let target = SshTarget::parse(endpoint).map_err(|refusal| IdentityError::SshUser {
                host: endpoint.to_string(),
                why: refusal.to_string(),
            })?;
            let user = match &target.user {
                Some(user) => user.clone(),
                None => ssh_login_user(&target)?,
            };
            Ok(Identity::Ssh {
                user,
                server: target.host,
            })
        }
        Some("tcp") | Some("https") | Some("http") => match &choice.tls {
            Some(tls) => match (&tls.certificate, &tls.key) {
                (Some(certificate), Some(_)) => Ok(Identity::Tls {
                    subject: certificate_subject(certificate)?,
                }),
                _ => Ok(Identity::Unproven {
                    claimed: claimed()?,
                    why: format!("TLS to {endpoint} without a client certificate proves no client"),
                }),
            },
            None => Ok(Identity::Unproven {
                claimed: claimed()?,
                why: format!(
                    "plain tcp to {endpoint} proves no one (no TLS client certificate, no ssh)"
                ),
            }),
        },
        _ => Ok(Identity::Unproven {
            claimed: claimed()?,
            why: format!("{endpoint} is no transport envctl knows to prove a user"),
        }),
    }
}

/// The user ssh would log in to `target` as: `ssh -G`'s `user` line (the `-l`, the
/// ssh_config's `User`, else the local login name), read through the same `ssh` the
/// connection runs.
fn ssh_login_user(target: &SshTarget) -> Result<String, IdentityError> {
    let failed = |why: String| IdentityError::SshUser {
        host: target.host.clone(),
        why,
    };
    let mut command = std::process::Command::new("ssh");
    command.arg("-G");
    if let Some(port) = target.port {
        command.args(["-p", &port.to_string()]);
    }
    command
        .args(["--", &target.host])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = command.spawn().map_err(|error| failed(error.to_string()))?;
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() > SSH_CONFIG_DEADLINE => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(failed(format!(
                    "no answer within {} s",
                    SSH_CONFIG_DEADLINE.as_secs()
                )));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(error) => return Err(failed(error.to_string())),
        }
    }
    let output = child
        .wait_with_output()
        .map_err(|error| failed(error.to_string()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        // Outside text: capped and escaped before it reaches a message.
        let shown: String = stderr.trim().chars().take(300).collect();
        return Err(failed(shown.escape_debug().to_string()));
    }
    login_user(&stdout).ok_or_else(|| failed("it printed no `user` line".into()))
}

/// The `user` line of `ssh -G`'s output, when it is a plain user name.
fn login_user(output: &str) -> Option<String> {
    output
        .lines()
        .find_map(|line| line.strip_prefix("user "))
        .map(str::trim)
        .filter(|user| {
            !user.is_empty()
                && user
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@'))
        })
        .map(str::to_string)
}

/// The subject of the first certificate in the PEM file `path`.
fn certificate_subject(path: &Path) -> Result<String, IdentityError> {
    use rustls_pki_types::pem::PemObject as _;
    let failed = |why: String| IdentityError::Certificate {
        path: path.display().to_string(),
        why,
    };
    let bytes = match envctl_core::untrusted::read(
        path,
        MAXIMUM_PEM_BYTES,
        envctl_core::untrusted::Named::ByTheUser,
    ) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Err(failed("does not exist".into())),
        Err(error) => return Err(failed(error.to_string())),
    };
    let first = rustls_pki_types::CertificateDer::pem_slice_iter(&bytes)
        .next()
        .ok_or_else(|| failed("holds no PEM certificate".into()))?
        .map_err(|error| failed(format!("is not PEM: {error}")))?;
    subject(&first)
        .ok_or_else(|| failed("is not an X.509 certificate envctl can read a subject from".into()))
}

/// One DER element: its tag, and its contents.
fn element(bytes: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let tag = *bytes.first()?;
    // High tag numbers (`0x1f`) never appear where this reader looks.
    if tag & 0x1f == 0x1f {
        return None;
    }
    let first = *bytes.get(1)?;
    let (length, header) = if first < 0x80 {
        (usize::from(first), 2)
    } else {
        let count = usize::from(first & 0x7f);
        // DER: no indefinite length, at most 4 length bytes for what a certificate holds.
        if count == 0 || count > 4 {
            return None;
        }
        let mut length = 0usize;
        for index in 0..count {
            length = (length << 8) | usize::from(*bytes.get(2 + index)?);
        }
        (length, 2 + count)
    };
    let end = header.checked_add(length)?;
    let contents = bytes.get(header..end)?;
    Some((tag, contents, &bytes[end..]))
}

/// The subject of a DER certificate, as `CN=alice,O=team` in the order it is written;
/// `None` for anything that is not a well-formed certificate.
pub(crate) fn subject(certificate: &[u8]) -> Option<String> {
    const SEQUENCE: u8 = 0x30;
    const SET: u8 = 0x31;
    let (tag, certificate, _) = element(certificate)?;
    if tag != SEQUENCE {
        return None;
    }
    let (tag, tbs, _) = element(certificate)?;
    if tag != SEQUENCE {
        return None;
    }
    let mut rest = tbs;
    // [0] version, when present.
    if rest.first() == Some(&0xa0) {
        rest = element(rest)?.2;
    }
    // serialNumber INTEGER, signature AlgorithmIdentifier, issuer Name, validity.
    for expected in [0x02, SEQUENCE, SEQUENCE, SEQUENCE] {
        let (tag, _, after) = element(rest)?;
        if tag != expected {
            return None;
        }
        rest = after;
    }
    let (tag, mut names, _) = element(rest)?;
    if tag != SEQUENCE {
        return None;
    }
    let mut parts = Vec::new();
    while !names.is_empty() {
        let (tag, mut set, after) = element(names)?;
        if tag != SET {
            return None;
        }
        names = after;
        while !set.is_empty() {
            let (tag, pair, after) = element(set)?;
            if tag != SEQUENCE {
                return None;
            }
            set = after;
            let (tag, oid, after) = element(pair)?;
            if tag != 0x06 {
                return None;
            }
            let (tag, value, _) = element(after)?;
            parts.push(format!(
                "{}={}",
                attribute_name(oid)?,
                attribute_value(tag, value)?
            ));
        }
    }
    (!parts.is_empty()).then(|| parts.join(","))
}

/// The short name of a subject attribute's OID, else its dotted form.
fn attribute_name(oid: &[u8]) -> Option<String> {
    Some(
        match oid {
            [0x55, 0x04, 0x03] => "CN",
            [0x55, 0x04, 0x06] => "C",
            [0x55, 0x04, 0x07] => "L",
            [0x55, 0x04, 0x08] => "ST",
            [0x55, 0x04, 0x0a] => "O",
            [0x55, 0x04, 0x0b] => "OU",
            [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x01] => "emailAddress",
            _ => return dotted(oid),
        }
        .to_string(),
    )
}

/// An OID in dotted form.
fn dotted(oid: &[u8]) -> Option<String> {
    let (&first, rest) = oid.split_first()?;
    let mut parts = vec![u64::from(first / 40), u64::from(first % 40)];
    let mut value = 0u64;
    for &byte in rest {
        value = value.checked_mul(128)? | u64::from(byte & 0x7f);
        if byte & 0x80 == 0 {
            parts.push(value);
            value = 0;
        }
    }
    Some(
        parts
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join("."),
    )
}

/// A string attribute's text, with the characters that would make the subject ambiguous
/// (`,` `+` `=` `\` and any not printable ASCII) written `\XX`.
fn attribute_value(tag: u8, value: &[u8]) -> Option<String> {
    let text = match tag {
        // UTF8String, PrintableString, IA5String, TeletexString (read as Latin-1 bytes).
        0x0c => String::from_utf8(value.to_vec()).ok()?,
        0x13 | 0x16 | 0x14 => value.iter().map(|&byte| char::from(byte)).collect(),
        // BMPString: UTF-16BE.
        0x1e => {
            let units: Vec<u16> = value
                .chunks(2)
                .map(|pair| u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)]))
                .collect();
            String::from_utf16(&units).ok()?
        }
        _ => return None,
    };
    let mut escaped = String::new();
    for character in text.chars() {
        if character.is_ascii_graphic() && !matches!(character, ',' | '+' | '=' | '\\')
            || character == ' '
        {
            escaped.push(character);
        } else {
            let mut buffer = [0u8; 4];
            for byte in character.encode_utf8(&mut buffer).bytes() {
                escaped.push_str(&format!("\\{byte:02X}"));
            }
        }
    }
    Some(escaped)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A DER element of `tag` around `contents`.
    fn der(tag: u8, contents: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        if contents.len() < 0x80 {
            out.push(contents.len() as u8);
        } else {
            out.extend([0x82, (contents.len() >> 8) as u8, contents.len() as u8]);
        }
        out.extend_from_slice(contents);
        out
    }

    fn name(pairs: &[(&[u8], u8, &[u8])]) -> Vec<u8> {
        let mut sets = Vec::new();
        for (oid, tag, value) in pairs {
            let pair = [der(0x06, oid), der(*tag, value)].concat();
            sets.extend(der(0x31, &der(0x30, &pair)));
        }
        der(0x30, &sets)
    }

    fn certificate(subject: &[u8], version: bool) -> Vec<u8> {
        let mut tbs = Vec::new();
        if version {
            tbs.extend(der(0xa0, &der(0x02, &[2])));
        }
        tbs.extend(der(0x02, &[1, 2, 3]));
        tbs.extend(der(0x30, &der(0x06, &[0x2a, 0x86, 0x48])));
        tbs.extend(name(&[(&[0x55, 4, 3], 0x0c, b"team-ca")]));
        tbs.extend(der(0x30, &[0x17, 0x00, 0x17, 0x00]));
        tbs.extend_from_slice(subject);
        tbs.extend(der(0x30, &[0; 200]));
        der(
            0x30,
            &[der(0x30, &tbs), der(0x30, &[]), der(0x03, &[0])].concat(),
        )
    }

    #[test]
    fn the_subject_is_read_in_order_and_escaped() {
        let subject = name(&[
            (&[0x55, 4, 3], 0x13, b"alice"),
            (&[0x55, 4, 0x0a], 0x0c, b"team, inc"),
            (&[0x55, 4, 0x2e], 0x13, b"x"),
        ]);
        assert_eq!(
            super::subject(&certificate(&subject, true)).as_deref(),
            Some("CN=alice,O=team\\2C inc,2.5.4.46=x")
        );
        // A version 1 certificate has no `[0]`.
        let only_cn = name(&[(&[0x55, 4, 3], 0x0c, "bö\n".as_bytes())]);
        assert_eq!(
            super::subject(&certificate(&only_cn, false)).as_deref(),
            Some("CN=b\\C3\\B6\\0A")
        );
    }

    #[test]
    fn broken_certificates_give_no_subject() {
        let good = certificate(&name(&[(&[0x55, 4, 3], 0x0c, b"alice")]), true);
        for cut in 0..good.len() {
            assert_eq!(super::subject(&good[..cut]), None, "cut at {cut}");
        }
        assert_eq!(super::subject(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff]), None);
        assert_eq!(super::subject(&[0x30, 0x80, 0, 0]), None);
        assert_eq!(super::subject(b""), None);
        // An empty subject names no one.
        assert_eq!(super::subject(&certificate(&der(0x30, &[]), true)), None);
    }

    #[test]
    fn ssh_g_names_the_login_user() {
        assert_eq!(
            login_user("hostname 127.0.0.1\nuser alice\nport 22\n").as_deref(),
            Some("alice")
        );
        assert_eq!(login_user("user a;b\n"), None);
        assert_eq!(login_user("port 22\n"), None);
    }

    #[test]
    fn each_transport_proves_what_it_can() {
        use envctl_host::docker_config::{ChosenBy, TlsChoice};
        let me = User {
            uid: Some(1001),
            name: "carol".into(),
            identity: None,
        };
        let choice = |endpoint: &str, tls: Option<TlsChoice>| DaemonChoice {
            endpoint: endpoint.into(),
            chosen_by: ChosenBy::HostFlag,
            tls,
        };
        let host = || Ok::<_, std::io::Error>("laptop".to_string());
        assert_eq!(
            of_choice(&choice("unix:///var/run/docker.sock", None), &me, host()).unwrap(),
            Identity::LocalUid {
                uid: 1001,
                host: "laptop".into()
            }
        );
        // The URL's user: no ssh is asked.
        assert_eq!(
            of_choice(&choice("ssh://alice@gpu2:2222", None), &me, host()).unwrap(),
            Identity::Ssh {
                user: "alice".into(),
                server: "gpu2".into()
            }
        );
        let plain = of_choice(&choice("tcp://gpu2:2375", None), &me, host()).unwrap();
        assert_eq!(plain.label(), "unproven:uid:1001@laptop");
        assert!(!plain.proven());
        // TLS that verifies the daemon but presents no client certificate proves no client.
        let server_only = TlsChoice {
            ca: Some("/nowhere/ca.pem".into()),
            certificate: None,
            key: None,
            verify: true,
            why: "test".into(),
        };
        let tls = of_choice(
            &choice("tcp://gpu2:2376", Some(server_only.clone())),
            &me,
            host(),
        );
        assert!(!tls.unwrap().proven());
        // A client certificate that cannot be read is an error naming it, never a guess.
        let missing = TlsChoice {
            certificate: Some("/nowhere/cert.pem".into()),
            key: Some("/nowhere/key.pem".into()),
            ..server_only
        };
        let error = of_choice(&choice("tcp://gpu2:2376", Some(missing)), &me, host()).unwrap_err();
        assert!(error.to_string().contains("/nowhere/cert.pem"), "{error}");
        // No host name: the local identity is unknown, not made up.
        let nameless = Err(std::io::Error::other("empty"));
        assert!(of_choice(&choice("unix:///var/run/docker.sock", None), &me, nameless).is_err());
    }
}
