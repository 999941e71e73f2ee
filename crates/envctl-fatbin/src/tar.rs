//! A streaming reader of tar archives (POSIX ustar, with GNU long names and pax `path`
//! records): just what walking `docker save`'s archive and its layers needs. Entries are
//! read in order from any [`Read`]; an entry's bytes are read through [`TarReader::body`]
//! or skipped. Sizes are checked, and a header that is not one is an error, never a panic.

use std::io::{self, Read};

use thiserror::Error;

const BLOCK: usize = 512;
/// A long name or pax record larger than this is refused (names are short).
const NAME_LIMIT: u64 = 64 * 1024;

#[derive(Debug, Error)]
pub enum TarError {
    #[error("a tar header at byte {offset} is not one ({why})")]
    BadHeader { offset: u64, why: &'static str },
    #[error("the archive ends inside an entry")]
    Truncated,
    #[error("reading the archive")]
    Io(#[from] io::Error),
}

/// What an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryType {
    File,
    Directory,
    /// Links and everything else: named, never read.
    Other,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TarEntry {
    /// The path as written, without a leading `./` or `/`.
    pub path: String,
    pub size: u64,
    pub kind: EntryType,
}

/// Reads the entries of one archive in order.
pub struct TarReader<R> {
    inner: R,
    /// Bytes of the current entry (and its padding) not yet read.
    pending: u64,
    offset: u64,
}

fn octal(field: &[u8]) -> Option<u64> {
    // Base-256 for large sizes: the high bit of the first byte set.
    if field.first().is_some_and(|byte| byte & 0x80 != 0) {
        let mut value: u64 = u64::from(field[0] & 0x7f);
        for byte in &field[1..] {
            value = value.checked_mul(256)?.checked_add(u64::from(*byte))?;
        }
        return Some(value);
    }
    let text: Vec<u8> = field
        .iter()
        .copied()
        .filter(|byte| *byte != 0 && *byte != b' ')
        .collect();
    if text.is_empty() {
        return Some(0);
    }
    u64::from_str_radix(std::str::from_utf8(&text).ok()?, 8).ok()
}

fn text(field: &[u8]) -> String {
    let end = field
        .iter()
        .position(|byte| *byte == 0)
        .unwrap_or(field.len());
    String::from_utf8_lossy(&field[..end]).into_owned()
}

/// Checks a header block's checksum (the sum of its bytes, the checksum field counted as
/// spaces).
fn check_checksum(block: &[u8; BLOCK], at: u64) -> Result<(), TarError> {
    let computed: u64 = block
        .iter()
        .enumerate()
        .map(|(index, byte)| {
            if (148..156).contains(&index) {
                u64::from(b' ')
            } else {
                u64::from(*byte)
            }
        })
        .sum();
    let checksum = octal(&block[148..156]).ok_or(TarError::BadHeader {
        offset: at,
        why: "its checksum is not a number",
    })?;
    if checksum != computed {
        return Err(TarError::BadHeader {
            offset: at,
            why: "its checksum does not match",
        });
    }
    Ok(())
}

/// The name a header block holds: its name field, after its ustar prefix where it has one.
fn header_name(block: &[u8; BLOCK]) -> String {
    let base = text(&block[0..100]);
    let prefix = if &block[257..262] == b"ustar" {
        text(&block[345..500])
    } else {
        String::new()
    };
    if prefix.is_empty() {
        base
    } else {
        format!("{prefix}/{base}")
    }
}

fn normalise(path: &str) -> String {
    path.trim_start_matches("./")
        .trim_start_matches('/')
        .to_string()
}

fn padded(size: u64) -> u64 {
    size.div_ceil(BLOCK as u64) * BLOCK as u64
}

impl<R: Read> TarReader<R> {
    pub fn new(inner: R) -> Self {
        TarReader {
            inner,
            pending: 0,
            offset: 0,
        }
    }

    fn skip_pending(&mut self) -> Result<(), TarError> {
        let skipped = io::copy(&mut (&mut self.inner).take(self.pending), &mut io::sink())?;
        self.offset += skipped;
        if skipped != self.pending {
            return Err(TarError::Truncated);
        }
        self.pending = 0;
        Ok(())
    }

    /// Reads a whole block; `None` at a clean end of the stream.
    fn block(&mut self) -> Result<Option<[u8; BLOCK]>, TarError> {
        let mut block = [0u8; BLOCK];
        let mut filled = 0;
        while filled < BLOCK {
            let read = self.inner.read(&mut block[filled..])?;
            if read == 0 {
                break;
            }
            filled += read;
        }
        self.offset += filled as u64;
        match filled {
            0 => Ok(None),
            BLOCK => Ok(Some(block)),
            _ => Err(TarError::Truncated),
        }
    }

    /// Reads a small record entry (a long name, a pax header) whole.
    fn record(&mut self, size: u64) -> Result<Vec<u8>, TarError> {
        if size > NAME_LIMIT {
            return Err(TarError::BadHeader {
                offset: self.offset,
                why: "a name record larger than 64 KiB",
            });
        }
        let mut bytes = Vec::new();
        (&mut self.inner).take(size).read_to_end(&mut bytes)?;
        self.offset += bytes.len() as u64;
        if bytes.len() as u64 != size {
            return Err(TarError::Truncated);
        }
        self.pending = padded(size) - size;
        self.skip_pending()?;
        Ok(bytes)
    }

    /// The next entry; `None` at the end of the archive.
    pub fn next_entry(&mut self) -> Result<Option<TarEntry>, TarError> {
        self.skip_pending()?;
        let mut long_name: Option<String> = None;
        loop {
            let at = self.offset;
            let Some(block) = self.block()? else {
                return Ok(None);
            };
            if block.iter().all(|byte| *byte == 0) {
                return Ok(None);
            }
            check_checksum(&block, at)?;
            let size = octal(&block[124..136]).ok_or(TarError::BadHeader {
                offset: at,
                why: "its size is not a number",
            })?;
            let flag = block[156];
            match flag {
                b'L' => {
                    let name = self.record(size)?;
                    long_name = Some(text(&name));
                    continue;
                }
                b'x' => {
                    let record = self.record(size)?;
                    if let Some(path) = pax_path(&record) {
                        long_name = Some(path);
                    }
                    continue;
                }
                b'g' => {
                    self.record(size)?;
                    continue;
                }
                _ => {}
            }
            let name = match long_name.take() {
                Some(name) => name,
                None => header_name(&block),
            };
            let kind = match flag {
                b'0' | 0 | b'7' => EntryType::File,
                b'5' => EntryType::Directory,
                _ => EntryType::Other,
            };
            // Only regular files have bytes in the archive.
            let size = if kind == EntryType::File { size } else { 0 };
            self.pending = padded(size);
            return Ok(Some(TarEntry {
                path: normalise(&name),
                size,
                kind,
            }));
        }
    }

    /// The current entry's bytes; what is left unread (and the padding) is skipped by the
    /// next call to [`TarReader::next_entry`].
    pub fn body(&mut self, size: u64) -> Body<'_, R> {
        // `pending` is the padded size: the body is at most `size` of it.
        let padding = self.pending.saturating_sub(size);
        Body {
            reader: self,
            padding,
        }
    }
}

/// The bytes of one entry, as a [`Read`].
pub struct Body<'a, R> {
    reader: &'a mut TarReader<R>,
    padding: u64,
}

impl<R: Read> Read for Body<'_, R> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        let left = self.reader.pending.saturating_sub(self.padding);
        let want = usize::try_from(left)
            .unwrap_or(usize::MAX)
            .min(buffer.len());
        if want == 0 {
            return Ok(0);
        }
        let read = self.reader.inner.read(&mut buffer[..want])?;
        self.reader.pending -= read as u64;
        self.reader.offset += read as u64;
        Ok(read)
    }
}

/// The `path` of a pax extended header: records `LENGTH path=VALUE\n`.
fn pax_path(record: &[u8]) -> Option<String> {
    let mut rest = record;
    while !rest.is_empty() {
        let space = rest.iter().position(|byte| *byte == b' ')?;
        let length: usize = std::str::from_utf8(&rest[..space]).ok()?.parse().ok()?;
        let line = rest.get(space + 1..length)?;
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        if let Some(path) = line.strip_prefix(b"path=") {
            return Some(String::from_utf8_lossy(path).into_owned());
        }
        rest = rest.get(length..)?;
    }
    None
}
