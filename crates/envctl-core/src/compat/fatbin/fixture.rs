//! Builds fat binaries and ELF files for tests: the inverse of the readers, written from
//! the layouts in `container` and `elf`.

use super::container::{
    FLAG_ARCHITECTURE_SPECIFIC, FLAG_COMPRESSED, FLAG_COMPRESSED_ZSTD, FLAG_FAMILY, HEADER_SIZE,
    KIND_CUBIN, KIND_PTX, MAGIC,
};

const FLAG_64_BIT: u64 = 0x1;
const FLAG_HOST_LINUX: u64 = 0x10;

/// One entry: kind, architecture, code version, flags and payload, with a header of
/// `header_size` bytes.
#[derive(Debug, Clone)]
pub struct FixtureEntry {
    pub kind: u16,
    pub arch: u32,
    pub version: (u16, u16),
    pub flags: u64,
    pub header_size: u32,
    pub payload: Vec<u8>,
}

impl FixtureEntry {
    pub fn cubin(arch: u32) -> Self {
        FixtureEntry {
            kind: KIND_CUBIN,
            arch,
            version: (1, 8),
            flags: FLAG_64_BIT | FLAG_HOST_LINUX,
            header_size: 64,
            payload: b"\x7fELF not really a cubin".to_vec(),
        }
    }

    /// PTX of ISA `isa`, compressed as CUDA 12 does, with an 80-byte header.
    pub fn ptx(arch: u32, isa: (u16, u16)) -> Self {
        FixtureEntry {
            kind: KIND_PTX,
            arch,
            version: isa,
            flags: FLAG_64_BIT | FLAG_HOST_LINUX | FLAG_COMPRESSED,
            header_size: 80,
            payload: vec![0xab; 24],
        }
    }

    pub fn specific(mut self) -> Self {
        self.flags |= FLAG_ARCHITECTURE_SPECIFIC;
        self
    }

    pub fn family(mut self) -> Self {
        self.flags |= FLAG_FAMILY;
        self
    }

    pub fn zstd(mut self) -> Self {
        self.flags |= FLAG_COMPRESSED_ZSTD;
        self
    }
}

/// One container holding `entries`, padded to 8 bytes.
pub fn container(entries: &[FixtureEntry]) -> Vec<u8> {
    let mut body = Vec::new();
    for entry in entries {
        let mut header = vec![0u8; entry.header_size as usize];
        header[0..2].copy_from_slice(&entry.kind.to_le_bytes());
        header[2..4].copy_from_slice(&0x0101u16.to_le_bytes());
        header[4..8].copy_from_slice(&entry.header_size.to_le_bytes());
        header[8..16].copy_from_slice(&(entry.payload.len() as u64).to_le_bytes());
        header[24..26].copy_from_slice(&entry.version.1.to_le_bytes());
        header[26..28].copy_from_slice(&entry.version.0.to_le_bytes());
        header[28..32].copy_from_slice(&entry.arch.to_le_bytes());
        header[40..48].copy_from_slice(&entry.flags.to_le_bytes());
        body.extend_from_slice(&header);
        body.extend_from_slice(&entry.payload);
    }
    let mut out = Vec::new();
    out.extend_from_slice(&MAGIC.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&(HEADER_SIZE as u16).to_le_bytes());
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(&body);
    while !out.len().is_multiple_of(8) {
        out.push(0);
    }
    out
}

/// A minimal ELF64 little-endian file with these named sections (and the section-name
/// table), laid out after the 64-byte header; the section header table comes last.
pub fn elf(sections: &[(&str, &[u8])]) -> Vec<u8> {
    let mut names = vec![0u8];
    let mut name_offsets = Vec::new();
    for (name, _) in sections {
        name_offsets.push(names.len() as u32);
        names.extend_from_slice(name.as_bytes());
        names.push(0);
    }
    let shstrtab_name = names.len() as u32;
    names.extend_from_slice(b".shstrtab\0");

    let mut file = vec![0u8; 64];
    let mut placed = Vec::new();
    for (_, bytes) in sections {
        while !file.len().is_multiple_of(8) {
            file.push(0);
        }
        placed.push((file.len() as u64, bytes.len() as u64));
        file.extend_from_slice(bytes);
    }
    let names_at = file.len() as u64;
    file.extend_from_slice(&names);
    while !file.len().is_multiple_of(8) {
        file.push(0);
    }
    let table = file.len() as u64;
    let header = |name: u32, kind: u32, offset: u64, size: u64| {
        let mut header = vec![0u8; 64];
        header[0..4].copy_from_slice(&name.to_le_bytes());
        header[4..8].copy_from_slice(&kind.to_le_bytes());
        header[24..32].copy_from_slice(&offset.to_le_bytes());
        header[32..40].copy_from_slice(&size.to_le_bytes());
        header
    };
    file.extend(header(0, 0, 0, 0));
    for (index, (offset, size)) in placed.iter().enumerate() {
        file.extend(header(name_offsets[index], 1, *offset, *size));
    }
    file.extend(header(shstrtab_name, 3, names_at, names.len() as u64));
    let count = sections.len() as u16 + 2;
    file[0..4].copy_from_slice(b"\x7fELF");
    file[4] = 2;
    file[5] = 1;
    file[6] = 1;
    file[0x10..0x12].copy_from_slice(&3u16.to_le_bytes());
    file[0x28..0x30].copy_from_slice(&table.to_le_bytes());
    file[0x34..0x36].copy_from_slice(&64u16.to_le_bytes());
    file[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
    file[0x3c..0x3e].copy_from_slice(&count.to_le_bytes());
    file[0x3e..0x40].copy_from_slice(&(count - 1).to_le_bytes());
    file
}

/// One tar header block for `path` (GNU `L` long names are the caller's), type `flag`.
fn tar_header(path: &str, size: usize, flag: u8) -> [u8; 512] {
    let mut header = [0u8; 512];
    let name = path.as_bytes();
    let length = name.len().min(100);
    header[..length].copy_from_slice(&name[..length]);
    header[100..108].copy_from_slice(b"0000644\0");
    header[108..116].copy_from_slice(b"0000000\0");
    header[116..124].copy_from_slice(b"0000000\0");
    header[124..136].copy_from_slice(format!("{size:011o}\0").as_bytes());
    header[136..148].copy_from_slice(b"00000000000\0");
    header[156] = flag;
    header[257..263].copy_from_slice(b"ustar\0");
    header[263..265].copy_from_slice(b"00");
    header[148..156].copy_from_slice(b"        ");
    let sum: u32 = header.iter().map(|byte| u32::from(*byte)).sum();
    header[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    header
}

fn tar_push(out: &mut Vec<u8>, header: [u8; 512], body: &[u8]) {
    out.extend_from_slice(&header);
    out.extend_from_slice(body);
    while !out.len().is_multiple_of(512) {
        out.push(0);
    }
}

/// A tar archive of regular files; a path over 100 bytes gets a GNU long-name record.
pub fn tar(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for (path, body) in files {
        if path.len() > 100 {
            let mut name = path.as_bytes().to_vec();
            name.push(0);
            tar_push(
                &mut out,
                tar_header("././@LongLink", name.len(), b'L'),
                &name,
            );
        }
        tar_push(&mut out, tar_header(path, body.len(), b'0'), body);
    }
    out.extend_from_slice(&[0u8; 1024]);
    out
}

/// A tar archive whose one file's path comes from a pax extended header.
pub fn tar_with_pax_path(path: &str, body: &[u8]) -> Vec<u8> {
    let record_body = format!("path={path}\n");
    // The length counts itself: try the digits until they agree.
    let mut length = record_body.len() + 3;
    while format!("{length} {record_body}").len() != length {
        length += 1;
    }
    let record = format!("{length} {record_body}");
    let mut out = Vec::new();
    tar_push(
        &mut out,
        tar_header("PaxHeaders/x", record.len(), b'x'),
        record.as_bytes(),
    );
    tar_push(&mut out, tar_header("short-name", body.len(), b'0'), body);
    out.extend_from_slice(&[0u8; 1024]);
    out
}

/// `docker save`'s legacy layout: `<name>/layer.tar` for each layer, in archive order
/// `layers`, and a manifest listing `order`.
pub fn image_archive(layers: &[(&str, Vec<u8>)], order: &[&str]) -> Vec<u8> {
    let manifest = format!(
        "[{{\"Config\":\"config.json\",\"RepoTags\":[\"test:1\"],\"Layers\":[{}]}}]",
        order
            .iter()
            .map(|name| format!("\"{name}/layer.tar\""))
            .collect::<Vec<_>>()
            .join(",")
    );
    let paths: Vec<String> = layers
        .iter()
        .map(|(name, _)| format!("{name}/layer.tar"))
        .collect();
    let mut files: Vec<(&str, &[u8])> = vec![("config.json", b"{}")];
    for (path, (_, bytes)) in paths.iter().zip(layers) {
        files.push((path, bytes));
    }
    files.push(("manifest.json", manifest.as_bytes()));
    tar(&files)
}
