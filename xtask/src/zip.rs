//! Reading a wheel (a zip file): the central directory (with its ZIP64 form, for archives
//! past 4 GiB), and one member streamed out, stored or DEFLATE, its CRC-32 checked. Only
//! what wheels use; a method or layout outside that is a clear error, never a guess.

use crate::bytes::{u16_at, u32_at, u64_at};

use std::io::{self, Read, Seek, SeekFrom, Write};

use miniz_oxide::inflate::stream::{InflateState, inflate};
use miniz_oxide::{DataFormat, MZError, MZFlush, MZStatus};
use thiserror::Error;

const END_SIGNATURE: u32 = 0x0605_4b50;
const END64_LOCATOR_SIGNATURE: u32 = 0x0706_4b50;
const END64_SIGNATURE: u32 = 0x0606_4b50;
const CENTRAL_SIGNATURE: u32 = 0x0201_4b50;
const LOCAL_SIGNATURE: u32 = 0x0403_4b50;
const METHOD_STORED: u16 = 0;
const METHOD_DEFLATE: u16 = 8;
const CHUNK: usize = 1 << 20;

#[derive(Debug, Error)]
pub enum ZipError {
    #[error("not a zip file: no end-of-central-directory record")]
    NoEnd,
    #[error("the zip's {0} is damaged (bad signature)")]
    BadSignature(&'static str),
    #[error("{name}: compression method {method}; wheels use stored (0) or DEFLATE (8)")]
    UnsupportedMethod { name: String, method: u16 },
    #[error("{name}: the DEFLATE stream is damaged ({detail})")]
    BadDeflate { name: String, detail: String },
    #[error("{name}: CRC-32 {found:#010x}, the directory says {expected:#010x}")]
    BadCrc {
        name: String,
        expected: u32,
        found: u32,
    },
    #[error("{name}: {found} bytes, the directory says {expected}")]
    BadSize {
        name: String,
        expected: u64,
        found: u64,
    },
    #[error("no member {0} in the wheel")]
    NoMember(String),
    #[error("reading the zip file")]
    Io(#[from] io::Error),
}

/// One member as the central directory describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub name: String,
    pub method: u16,
    pub crc: u32,
    pub compressed_size: u64,
    pub size: u64,
    pub local_header_offset: u64,
    /// The member's modification date, `YYYY-MM-DD` (MS-DOS date field).
    pub date: String,
}

fn read_at<R: Read + Seek>(file: &mut R, offset: u64, length: usize) -> io::Result<Vec<u8>> {
    file.seek(SeekFrom::Start(offset))?;
    let mut bytes = vec![0; length];
    file.read_exact(&mut bytes)?;
    Ok(bytes)
}

/// `YYYY-MM-DD` from an MS-DOS date (day in bits 0-4, month 5-8, years since 1980 9-15).
pub fn dos_date(date: u16) -> String {
    let year = 1980 + u32::from(date >> 9);
    let month = (date >> 5) & 0xF;
    let day = date & 0x1F;
    format!("{year:04}-{month:02}-{day:02}")
}

/// The members of the archive, in directory order.
pub fn members<R: Read + Seek>(file: &mut R) -> Result<Vec<Member>, ZipError> {
    let length = file.seek(SeekFrom::End(0))?;
    // The end record is 22 bytes plus a comment of at most 65535 bytes.
    let tail_length = length.min(22 + 65_535);
    let tail = read_at(file, length - tail_length, tail_length as usize)?;
    let end_at = (0..tail.len().saturating_sub(21))
        .rev()
        .find(|at| u32_at(&tail, *at) == END_SIGNATURE)
        .ok_or(ZipError::NoEnd)?;
    let mut count = u64::from(u16_at(&tail, end_at + 10));
    let mut directory_size = u64::from(u32_at(&tail, end_at + 12));
    let mut directory_offset = u64::from(u32_at(&tail, end_at + 16));
    if count == 0xFFFF || directory_size == 0xFFFF_FFFF || directory_offset == 0xFFFF_FFFF {
        let locator_at = end_at.checked_sub(20).ok_or(ZipError::NoEnd)?;
        if u32_at(&tail, locator_at) != END64_LOCATOR_SIGNATURE {
            return Err(ZipError::BadSignature("ZIP64 end locator"));
        }
        let end64 = read_at(file, u64_at(&tail, locator_at + 8), 56)?;
        if u32_at(&end64, 0) != END64_SIGNATURE {
            return Err(ZipError::BadSignature("ZIP64 end record"));
        }
        count = u64_at(&end64, 32);
        directory_size = u64_at(&end64, 40);
        directory_offset = u64_at(&end64, 48);
    }
    let directory = read_at(
        file,
        directory_offset,
        usize::try_from(directory_size).map_err(|_| ZipError::BadSignature("central directory"))?,
    )?;
    let mut members = Vec::new();
    let mut at = 0;
    for _ in 0..count {
        if directory.len() < at + 46 || u32_at(&directory, at) != CENTRAL_SIGNATURE {
            return Err(ZipError::BadSignature("central directory"));
        }
        let name_length = usize::from(u16_at(&directory, at + 28));
        let extra_length = usize::from(u16_at(&directory, at + 30));
        let comment_length = usize::from(u16_at(&directory, at + 32));
        let next = at + 46 + name_length + extra_length + comment_length;
        if directory.len() < next {
            return Err(ZipError::BadSignature("central directory"));
        }
        let name = String::from_utf8_lossy(&directory[at + 46..at + 46 + name_length]).into_owned();
        let mut member = Member {
            name,
            method: u16_at(&directory, at + 10),
            crc: u32_at(&directory, at + 16),
            compressed_size: u64::from(u32_at(&directory, at + 20)),
            size: u64::from(u32_at(&directory, at + 24)),
            local_header_offset: u64::from(u32_at(&directory, at + 42)),
            date: dos_date(u16_at(&directory, at + 14)),
        };
        let extra = &directory[at + 46 + name_length..at + 46 + name_length + extra_length];
        apply_zip64_extra(&mut member, extra);
        members.push(member);
        at = next;
    }
    Ok(members)
}

/// The ZIP64 extra field (id 1) holds, in this order, each of size, compressed size and
/// local header offset whose 32-bit field reads 0xFFFFFFFF.
fn apply_zip64_extra(member: &mut Member, mut extra: &[u8]) {
    while extra.len() >= 4 {
        let id = u16_at(extra, 0);
        let length = usize::from(u16_at(extra, 2)).min(extra.len() - 4);
        let mut field = &extra[4..4 + length];
        if id == 1 {
            for value in [
                &mut member.size,
                &mut member.compressed_size,
                &mut member.local_header_offset,
            ] {
                if *value == 0xFFFF_FFFF && field.len() >= 8 {
                    *value = u64_at(field, 0);
                    field = &field[8..];
                }
            }
        }
        extra = &extra[4 + length..];
    }
}

/// The member called `name`.
pub fn find<'a>(members: &'a [Member], name: &str) -> Result<&'a Member, ZipError> {
    members
        .iter()
        .find(|member| member.name == name)
        .ok_or_else(|| ZipError::NoMember(name.to_string()))
}

/// Streams `member`'s contents into `out`, checking its size and CRC-32.
pub fn extract<R: Read + Seek, W: Write>(
    file: &mut R,
    member: &Member,
    out: &mut W,
) -> Result<(), ZipError> {
    let local = read_at(file, member.local_header_offset, 30)?;
    if u32_at(&local, 0) != LOCAL_SIGNATURE {
        return Err(ZipError::BadSignature("local header"));
    }
    let data_at = member.local_header_offset
        + 30
        + u64::from(u16_at(&local, 26))
        + u64::from(u16_at(&local, 28));
    file.seek(SeekFrom::Start(data_at))?;
    let mut input = file.take(member.compressed_size);
    let mut checked = Checked {
        out,
        crc: Crc32::new(),
        written: 0,
    };
    match member.method {
        METHOD_STORED => {
            io::copy(&mut input, &mut checked)?;
        }
        METHOD_DEFLATE => inflate_into(&mut input, &mut checked, &member.name)?,
        method => {
            return Err(ZipError::UnsupportedMethod {
                name: member.name.clone(),
                method,
            });
        }
    }
    if checked.written != member.size {
        return Err(ZipError::BadSize {
            name: member.name.clone(),
            expected: member.size,
            found: checked.written,
        });
    }
    let found = checked.crc.finish();
    if found != member.crc {
        return Err(ZipError::BadCrc {
            name: member.name.clone(),
            expected: member.crc,
            found,
        });
    }
    Ok(())
}

/// The contents of a small member.
pub fn read_member<R: Read + Seek>(file: &mut R, member: &Member) -> Result<Vec<u8>, ZipError> {
    let mut bytes = Vec::new();
    extract(file, member, &mut bytes)?;
    Ok(bytes)
}

fn inflate_into<R: Read, W: Write>(input: &mut R, out: &mut W, name: &str) -> Result<(), ZipError> {
    let damaged = |detail: String| ZipError::BadDeflate {
        name: name.to_string(),
        detail,
    };
    let mut state = InflateState::new_boxed(DataFormat::Raw);
    let mut compressed = vec![0u8; CHUNK];
    let mut plain = vec![0u8; CHUNK];
    let mut pending = 0;
    let mut input_done = false;
    loop {
        if !input_done && pending < CHUNK {
            let read = input.read(&mut compressed[pending..])?;
            input_done = read == 0;
            pending += read;
        }
        // Never `Finish`: on a first call miniz_oxide then wants the whole output in one
        // buffer; the stream says itself where it ends.
        let result = inflate(
            &mut state,
            &compressed[..pending],
            &mut plain,
            MZFlush::None,
        );
        compressed.copy_within(result.bytes_consumed..pending, 0);
        pending -= result.bytes_consumed;
        out.write_all(&plain[..result.bytes_written])?;
        let stalled = result.bytes_written == 0 && result.bytes_consumed == 0;
        match result.status {
            Ok(MZStatus::StreamEnd) => return Ok(()),
            // No progress: more input is needed, and there is none left.
            Ok(_) | Err(MZError::Buf) if stalled && input_done => {
                return Err(damaged("the data ends before the stream does".into()));
            }
            Ok(_) | Err(MZError::Buf) => {}
            Err(error) => return Err(damaged(format!("{error:?}"))),
        }
    }
}

/// A writer that counts and checksums what passes through.
struct Checked<'a, W: Write> {
    out: &'a mut W,
    crc: Crc32,
    written: u64,
}

impl<W: Write> Write for Checked<'_, W> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let written = self.out.write(bytes)?;
        self.crc.update(&bytes[..written]);
        self.written += written as u64;
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// CRC-32 (IEEE, reflected, polynomial 0xEDB88320), as zip uses.
pub struct Crc32 {
    table: [u32; 256],
    value: u32,
}

impl Crc32 {
    pub fn new() -> Self {
        let mut table = [0u32; 256];
        for (index, slot) in table.iter_mut().enumerate() {
            let mut value = index as u32;
            for _ in 0..8 {
                value = if value & 1 != 0 {
                    0xEDB8_8320 ^ (value >> 1)
                } else {
                    value >> 1
                };
            }
            *slot = value;
        }
        Crc32 {
            table,
            value: 0xFFFF_FFFF,
        }
    }

    pub fn update(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.value =
                self.table[((self.value ^ u32::from(*byte)) & 0xFF) as usize] ^ (self.value >> 8);
        }
    }

    pub fn finish(&self) -> u32 {
        self.value ^ 0xFFFF_FFFF
    }
}

/// Builds zip files for tests: members stored or deflated, with the local headers, the
/// central directory and its end record.
#[cfg(test)]
pub fn fixture(members: &[(&str, &[u8], bool)]) -> Vec<u8> {
    let mut file = Vec::new();
    let mut directory = Vec::new();
    // 2026-11-30 as an MS-DOS date.
    let date: u16 = ((2026 - 1980) << 9) | (11 << 5) | 30;
    for (name, contents, deflate) in members {
        let mut crc = Crc32::new();
        crc.update(contents);
        let crc = crc.finish();
        let (method, data) = if *deflate {
            (
                METHOD_DEFLATE,
                miniz_oxide::deflate::compress_to_vec(contents, 6),
            )
        } else {
            (METHOD_STORED, contents.to_vec())
        };
        let offset = file.len() as u32;
        let mut common = Vec::new();
        common.extend_from_slice(&20u16.to_le_bytes());
        common.extend_from_slice(&0u16.to_le_bytes());
        common.extend_from_slice(&method.to_le_bytes());
        common.extend_from_slice(&0u16.to_le_bytes());
        common.extend_from_slice(&date.to_le_bytes());
        common.extend_from_slice(&crc.to_le_bytes());
        common.extend_from_slice(&(data.len() as u32).to_le_bytes());
        common.extend_from_slice(&(contents.len() as u32).to_le_bytes());
        common.extend_from_slice(&(name.len() as u16).to_le_bytes());
        common.extend_from_slice(&0u16.to_le_bytes());
        file.extend_from_slice(&LOCAL_SIGNATURE.to_le_bytes());
        file.extend_from_slice(&common);
        file.extend_from_slice(name.as_bytes());
        file.extend_from_slice(&data);
        directory.extend_from_slice(&CENTRAL_SIGNATURE.to_le_bytes());
        directory.extend_from_slice(&20u16.to_le_bytes());
        directory.extend_from_slice(&common);
        directory.extend_from_slice(&[0; 6]);
        directory.extend_from_slice(&0u32.to_le_bytes());
        directory.extend_from_slice(&offset.to_le_bytes());
        directory.extend_from_slice(name.as_bytes());
    }
    let directory_offset = file.len() as u32;
    file.extend_from_slice(&directory);
    file.extend_from_slice(&END_SIGNATURE.to_le_bytes());
    file.extend_from_slice(&[0; 4]);
    file.extend_from_slice(&(members.len() as u16).to_le_bytes());
    file.extend_from_slice(&(members.len() as u16).to_le_bytes());
    file.extend_from_slice(&(directory.len() as u32).to_le_bytes());
    file.extend_from_slice(&directory_offset.to_le_bytes());
    file.extend_from_slice(&0u16.to_le_bytes());
    file
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;

    #[test]
    fn reads_stored_and_deflated_members() {
        let big: Vec<u8> = (0..3 * CHUNK as u32).map(|i| (i % 251) as u8).collect();
        let mut file = Cursor::new(fixture(&[
            ("torch/version.py", b"__version__ = '2.15.0+cu132'\n", false),
            ("torch/lib/libtorch_cuda.so", &big, true),
        ]));
        let members = members(&mut file).unwrap();
        assert_eq!(members.len(), 2);
        assert_eq!(members[0].date, "2026-11-30");
        let version = read_member(&mut file, find(&members, "torch/version.py").unwrap()).unwrap();
        assert_eq!(version, b"__version__ = '2.15.0+cu132'\n");
        let library = find(&members, "torch/lib/libtorch_cuda.so").unwrap();
        assert_eq!(library.method, METHOD_DEFLATE);
        assert_eq!(read_member(&mut file, library).unwrap(), big);
        assert!(matches!(
            find(&members, "torch/missing"),
            Err(ZipError::NoMember(_))
        ));
    }

    #[test]
    fn a_damaged_member_is_caught_by_its_crc() {
        let mut bytes = fixture(&[("a.txt", b"hello wheel", false)]);
        bytes[30 + 5] ^= 0xFF;
        let mut file = Cursor::new(bytes);
        let members = members(&mut file).unwrap();
        assert!(matches!(
            read_member(&mut file, &members[0]),
            Err(ZipError::BadCrc { .. })
        ));
    }

    #[test]
    fn a_file_that_is_not_a_zip_is_an_error() {
        let mut file = Cursor::new(vec![7u8; 100]);
        assert!(matches!(members(&mut file), Err(ZipError::NoEnd)));
    }

    #[test]
    fn crc32_of_the_standard_check_string() {
        let mut crc = Crc32::new();
        crc.update(b"123456789");
        assert_eq!(crc.finish(), 0xCBF4_3926);
    }

    #[test]
    fn zip64_extra_fields_replace_the_saturated_sizes() {
        let mut member = Member {
            name: "torch/lib/libtorch_cuda.so".into(),
            method: METHOD_DEFLATE,
            crc: 0,
            compressed_size: 0xFFFF_FFFF,
            size: 0xFFFF_FFFF,
            local_header_offset: 12,
            date: String::new(),
        };
        let mut extra = Vec::new();
        extra.extend_from_slice(&0x5455u16.to_le_bytes());
        extra.extend_from_slice(&1u16.to_le_bytes());
        extra.push(0);
        extra.extend_from_slice(&1u16.to_le_bytes());
        extra.extend_from_slice(&16u16.to_le_bytes());
        extra.extend_from_slice(&5_000_000_000u64.to_le_bytes());
        extra.extend_from_slice(&4_500_000_000u64.to_le_bytes());
        apply_zip64_extra(&mut member, &extra);
        assert_eq!(member.size, 5_000_000_000);
        assert_eq!(member.compressed_size, 4_500_000_000);
        assert_eq!(member.local_header_offset, 12);
    }

    #[test]
    fn dos_dates() {
        assert_eq!(dos_date(((2025 - 1980) << 9) | (6 << 5) | 4), "2025-06-04");
    }
}
