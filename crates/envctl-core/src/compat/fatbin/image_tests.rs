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

#[test]
fn a_compressed_layer_is_named_as_unread() {
    let mut gzip = vec![0x1f, 0x8b, 8, 0];
    gzip.extend_from_slice(&[0; 600]);
    let archive = image_archive(&[("packed", gzip)], &["packed"]);
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
