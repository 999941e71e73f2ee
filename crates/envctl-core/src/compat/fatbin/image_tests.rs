//! [`scan_archive`] on synthetic image archives: packages from RECORD files, layer order,
//! whiteouts, long names, compressed layers, and damage.

use super::fixture::{FixtureEntry, container, elf, image_archive, tar, tar_with_pax_path};
use super::*;

const SITE: &str = "usr/lib/python3/site-packages";

fn flash_attn(arch: u32) -> Vec<u8> {
    let fatbin = container(&[FixtureEntry::cubin(arch)]);
    elf(&[(".nv_fatbin", &fatbin)])
}

fn sass(library: &ImageLibrary) -> Vec<String> {
    library.code.sass().iter().map(Target::to_string).collect()
}

#[test]
fn finds_gpu_libraries_and_the_package_each_came_from() {
    let library = flash_attn(80);
    let host_only = elf(&[(".text", b"host code")]);
    let record = "flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so,sha256=x,10\n\
                  flash_attn/__init__.py,sha256=y,20\n";
    let first = tar(&[
        (
            &format!("{SITE}/flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so"),
            &library,
        ),
        (
            &format!("{SITE}/flash_attn-2.7.4.dist-info/RECORD"),
            record.as_bytes(),
        ),
    ]);
    let second = tar(&[
        ("usr/lib/x86_64-linux-gnu/libz.so.1", &host_only),
        ("usr/lib/x86_64-linux-gnu/libc.so", b"/* GNU ld script */"),
        ("usr/bin/python3", b"\x7fELF not a library"),
    ]);
    let archive = image_archive(&[("one", first), ("two", second)], &["one", "two"]);
    let scan = scan_archive(archive.as_slice()).unwrap();
    assert_eq!(scan.shared_objects, 3);
    assert_eq!(scan.libraries.len(), 1);
    let found = &scan.libraries[0];
    assert_eq!(
        found.path,
        format!("{SITE}/flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so")
    );
    assert_eq!(found.package.as_deref(), Some("flash_attn 2.7.4"));
    assert_eq!(sass(found), ["sm_80"]);
    assert!(scan.unread_layers.is_empty() && scan.unreadable.is_empty());
}

#[test]
fn layers_apply_in_the_manifests_order_with_whiteouts() {
    let path = "opt/ext/_C.so";
    let old = tar(&[(path, &flash_attn(80))]);
    let new = tar(&[(path, &flash_attn(120))]);
    // The archive holds the newer layer first; the manifest says it comes last.
    let archive = image_archive(
        &[("new", new.clone()), ("old", old.clone())],
        &["old", "new"],
    );
    let scan = scan_archive(archive.as_slice()).unwrap();
    assert_eq!(sass(&scan.libraries[0]), ["sm_120"]);

    let removed = tar(&[("opt/ext/.wh._C.so", b"")]);
    let archive = image_archive(&[("old", old.clone()), ("rm", removed)], &["old", "rm"]);
    assert!(
        scan_archive(archive.as_slice())
            .unwrap()
            .libraries
            .is_empty()
    );

    let emptied = tar(&[("opt/ext/.wh..wh..opq", b"")]);
    let archive = image_archive(&[("old", old), ("opq", emptied)], &["old", "opq"]);
    let scan = scan_archive(archive.as_slice()).unwrap();
    assert!(scan.libraries.is_empty());
    assert_eq!(scan.shared_objects, 0);
}

#[test]
fn long_names_from_gnu_and_pax_records() {
    let long = format!("{SITE}/{}_kernels.so", "deeply/nested/".repeat(10));
    let library = flash_attn(90);
    let gnu = tar(&[(long.as_str(), &library)]);
    let archive = image_archive(&[("gnu", gnu)], &["gnu"]);
    let scan = scan_archive(archive.as_slice()).unwrap();
    assert_eq!(scan.libraries[0].path, long);

    let pax = tar_with_pax_path(&long, &library);
    let archive = image_archive(&[("pax", pax)], &["pax"]);
    let scan = scan_archive(archive.as_slice()).unwrap();
    assert_eq!(scan.libraries[0].path, long);
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// A gzip layer is read in the same pass, packages, order and whiteouts included, beside
/// plain layers; nothing is left unread.
#[test]
fn a_gzip_layer_is_decompressed_and_read() {
    let record = "_C.so,sha256=x,10\n";
    let first = gzip(&tar(&[
        (&format!("{SITE}/_C.so"), &flash_attn(80)),
        (
            &format!("{SITE}/ext-1.0.dist-info/RECORD"),
            record.as_bytes(),
        ),
        ("usr/lib/libold.so", &flash_attn(75)),
    ]));
    assert_eq!(first[..2], [0x1f, 0x8b]);
    let second = tar(&[("usr/lib/.wh.libold.so", b"")]);
    let third = gzip(&tar(&[("usr/lib/libnew.so.1", &flash_attn(120))]));
    let archive = image_archive(
        &[("one", first), ("two", second), ("three", third)],
        &["one", "two", "three"],
    );
    let scan = scan_archive(archive.as_slice()).unwrap();
    assert!(scan.unread_layers.is_empty(), "{:?}", scan.unread_layers);
    let found: Vec<(&str, Option<&str>, Vec<String>)> = scan
        .libraries
        .iter()
        .map(|library| {
            (
                library.path.as_str(),
                library.package.as_deref(),
                sass(library),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            ("usr/lib/libnew.so.1", None, vec!["sm_120".to_string()]),
            (
                "usr/lib/python3/site-packages/_C.so",
                Some("ext 1.0"),
                vec!["sm_80".to_string()]
            ),
        ]
    );
}

/// A gzip stream that is not a tar (a compressed config, say) is not a layer.
#[test]
fn a_gzip_blob_that_is_no_tar_is_skipped() {
    let archive = image_archive(
        &[
            ("blob", gzip(&[b'{'; 4096])),
            ("one", tar(&[("usr/lib/libx.so", &flash_attn(90))])),
        ],
        &["one"],
    );
    let scan = scan_archive(archive.as_slice()).unwrap();
    assert_eq!(scan.libraries.len(), 1);
    assert!(scan.unread_layers.is_empty());
}

/// A damaged gzip layer (cut short, or bytes changed under its checksum) is an error that
/// names the layer, never a panic and never a scan that looks complete.
#[test]
fn a_damaged_gzip_layer_is_an_error_naming_it() {
    let layer = gzip(&tar(&[("usr/lib/libx.so", &flash_attn(90))]));
    let mut flipped = layer.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x55;
    let cut = layer[..layer.len() - 20].to_vec();
    for damaged in [flipped, cut] {
        let archive = image_archive(&[("bad", damaged)], &["bad"]);
        match scan_archive(archive.as_slice()) {
            Err(ImageScanError::Layer { layer, .. }) => assert_eq!(layer, "bad/layer.tar"),
            other => panic!("expected an error for the damaged layer, got {other:?}"),
        }
    }
}

/// A layer compressed otherwise (zstd) is named as unread, never taken as empty.
#[test]
fn a_zstd_layer_is_named_as_unread() {
    let mut zstd = vec![0x28, 0xb5, 0x2f, 0xfd];
    zstd.extend_from_slice(&[0; 600]);
    let archive = image_archive(&[("packed", zstd)], &["packed"]);
    let scan = scan_archive(archive.as_slice()).unwrap();
    assert_eq!(scan.unread_layers, ["packed/layer.tar"]);
}

#[test]
fn a_damaged_library_is_named_and_the_scan_goes_on() {
    let mut broken = flash_attn(80);
    broken[4] = 1; // a 32-bit ELF
    let layer = tar(&[
        ("usr/lib/libbroken.so.1", &broken),
        ("usr/lib/libgood.so", &flash_attn(86)),
    ]);
    let archive = image_archive(&[("one", layer)], &["one"]);
    let scan = scan_archive(archive.as_slice()).unwrap();
    assert_eq!(scan.unreadable.len(), 1);
    assert_eq!(scan.unreadable[0].path, "usr/lib/libbroken.so.1");
    assert_eq!(scan.libraries.len(), 1);
}

#[test]
fn damaged_archives_are_errors_never_panics() {
    let layer = tar(&[("usr/lib/libgood.so", &flash_attn(86))]);
    let archive = image_archive(&[("one", layer)], &["one"]);
    for cut in (0..archive.len()).step_by(97) {
        let _ = scan_archive(&archive[..cut]);
    }
    let mut bad = archive.clone();
    bad[0] ^= 0xff;
    assert!(matches!(
        scan_archive(bad.as_slice()),
        Err(ImageScanError::Archive(_))
    ));
    assert!(matches!(
        scan_archive(&b"not a tar at all"[..]),
        Err(ImageScanError::Archive(_))
    ));
}

#[test]
fn shared_object_names() {
    assert!(is_shared_object("usr/lib/libcudart.so.12"));
    assert!(is_shared_object("x/_C.abi3.so"));
    assert!(!is_shared_object("usr/lib/libfoo.a"));
    assert!(!is_shared_object("usr/share/doc/solver.sosomething"));
}
