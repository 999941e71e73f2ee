#!/usr/bin/env python3
"""Writes corpus.toml: for every shared object fetch.sh extracted, what NVIDIA's cuobjdump
lists (--list-elf, --list-ptx, and both with -all) and the `.version` of each PTX it
extracts. A maintainer's tool: the test compares envctl's reader with this file and never
runs cuobjdump itself.

    bash tests/corpus/fatbin/fetch.sh /tmp/fatbin-corpus
    python3 -m pip download --no-deps --only-binary=:all: -d /tmp/cuobjdump \
        nvidia-cuda-cuobjdump==13.5.37 && (cd /tmp/cuobjdump && python3 -m zipfile -e *.whl .)
    python3 tests/corpus/fatbin/measure.py /tmp/fatbin-corpus \
        /tmp/cuobjdump/nvidia/cu13/bin/cuobjdump > tests/corpus/fatbin/corpus.toml
"""
import hashlib, os, pathlib, re, subprocess, sys, tempfile

corpus, cuobjdump = pathlib.Path(sys.argv[1]), sys.argv[2]
here = pathlib.Path(__file__).parent
requirements = {}
for line in (here / "wheels.tsv").read_text().splitlines():
    if line and not line.startswith("#"):
        requirement, wheel, sha256 = line.split("\t")
        requirements[requirement.split("==")[0]] = (requirement, wheel, sha256)

failures = {}

def listing(path, flag, everything):
    args = [cuobjdump] + (["-all"] if everything else []) + [flag, str(path)]
    run = subprocess.run(args, capture_output=True, text=True)
    out = run.stdout
    fatal = re.search(r"cuobjdump fatal\s*:\s*([^\n']*)", run.stderr)
    if run.returncode != 0 and fatal:
        failures[path] = fatal.group(1).strip().rstrip(" in").strip()
    # "ELF file    1: name.1.sm_90a.cubin" -> sm_90a
    names = re.findall(r"\.(sm_[0-9]+[af]?)\.(?:cubin|ptx)$", out, re.M)
    return sorted(set(names), key=lambda n: (int(re.sub(r"\D", "", n)), n))

def ptx_versions(path):
    with tempfile.TemporaryDirectory() as folder:
        subprocess.run([cuobjdump, "-xptx", "all", str(path)], cwd=folder, capture_output=True)
        versions = {}
        for ptx in pathlib.Path(folder).glob("*.ptx"):
            text = ptx.read_text(errors="replace")
            version = re.search(r"^\.version ([0-9.]+)", text, re.M)
            target = re.search(r"^\.target (sm_[0-9]+[af]?)", text, re.M)
            if version and target:
                key = target.group(1)
                versions[key] = max(versions.get(key, "0.0"), version.group(1),
                                    key=lambda v: tuple(map(int, v.split("."))))
        return versions

def cubin_headers(path):
    """The architectures the uncompressed cubins of .nv_fatbin name in their ELF headers."""
    import struct
    data = path.read_bytes()
    table, = struct.unpack_from("<Q", data, 0x28)
    count, names = struct.unpack_from("<HH", data, 0x3C)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, table + 64 * i) for i in range(count)]
    strings = headers[names][4]
    found = []
    for header in headers:
        name = data[strings + header[0]:data.index(b"\0", strings + header[0])]
        if name != b".nv_fatbin":
            continue
        at, end = header[4], header[4] + header[5]
        while at < end:
            if data[at] == 0:
                at += 1
                continue
            _, _, size_of_header, size = struct.unpack_from("<IHHQ", data, at)
            entry, stop = at + size_of_header, at + size_of_header + size
            while entry < stop:
                kind, _, entry_header, payload = struct.unpack_from("<HHIQ", data, entry)
                flags, = struct.unpack_from("<Q", data, entry + 40)
                body = data[entry + entry_header:entry + entry_header + payload]
                if kind == 2 and not flags & 0xA000 and body[:5] == b"\x7fELF\x02":
                    arch = struct.unpack_from("<I", body, 0x30)[0] & 0xFF
                    found.append(f"sm_{arch}")
                entry += entry_header + payload
            at = stop
    return sorted(set(found), key=lambda n: int(n[3:]))

version = subprocess.run([cuobjdump, "--version"], capture_output=True, text=True).stdout
release = re.search(r"V([0-9.]+)", version).group(1)
print("# What NVIDIA's cuobjdump", release, "(PyPI nvidia-cuda-cuobjdump) lists for each shared")
print("# object of the wheels in wheels.tsv; written by measure.py, read by")
print("# tests/it/fatbin_corpus.rs. Target names are cuobjdump's: it prints `f` targets without")
print("# their suffix. `ptx_isa` is the `.version` of the PTX `cuobjdump -xptx` extracts.")
print("# Where cuobjdump stops with an error (`cuobjdump_error`; 13.2 and 13.5 alike), its lists are")
print("# partial, and `sass_by_cubin_header` names what each cubin's own ELF header says.")
print(f'cuobjdump = "{release}"')
for name in sorted(os.listdir(corpus)):
    if name not in requirements:
        continue
    requirement, wheel, wheel_sha256 = requirements[name]
    for path in sorted((corpus / name).rglob("*")):
        if not path.is_file():
            continue
        print()
        print("[[library]]")
        print(f'requirement = "{requirement}"')
        print(f'wheel = "{wheel}"')
        print(f'path = "{name}/{path.relative_to(corpus / name)}"')
        print(f'sha256 = "{hashlib.sha256(path.read_bytes()).hexdigest()}"')
        for key, flag, everything in [("sass", "--list-elf", False), ("ptx", "--list-ptx", False),
                                      ("sass_all", "--list-elf", True), ("ptx_all", "--list-ptx", True)]:
            names = listing(path, flag, everything)
            print(f"{key} = [{', '.join(repr(n).replace(chr(39), chr(34)) for n in names)}]")
        if path in failures:
            # cuobjdump stopped part-way: a second witness, independent of both readers,
            # is each machine-code payload's own ELF header (e_flags' low byte is the
            # architecture of a cubin of ABI version 7, `\x7fELF` and class 2 checked).
            print(f'cuobjdump_error = "{failures[path]}"')
            print(f"sass_by_cubin_header = [{', '.join(chr(34) + n + chr(34) for n in cubin_headers(path))}]")
        versions = ptx_versions(path)
        print("ptx_isa = {" + ", ".join(f'{k} = "{v}"' for k, v in sorted(versions.items())) + "}")
