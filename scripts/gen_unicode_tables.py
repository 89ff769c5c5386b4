#!/usr/bin/env python3
"""Generates src/tokenizer/unicode_tables.c.

1. Character classes for the pre-tokenizer patterns (\\p{L}, \\p{N}, \\s; for o200k also \\p{Lu}|\\p{Lt},
   \\p{Ll}, \\p{Lm}|\\p{Lo} and \\p{M}) at the Unicode version of the regex engine behind HF `tokenizers`
   (Oniguruma 6.9.10 in the `onig` crate: Unicode 16.0). They come from the `unicodedata2` package
   (pip install unicodedata2==16.0.0; scripts/setup.sh installs it), falling back to Python's own
   `unicodedata` (Python 3.11: Unicode 14.0) with a warning. The version is written into the file.
   \\s follows the Unicode White_Space property (what Oniguruma uses); Python's str.isspace() also
   accepts U+001C..U+001F (bidi class B/S), which White_Space does not, so those four are removed.

2. Normalization data for the NFC / NFD / NFKC / NFKD normalizers at the version HF's normalizers use
   (the crate unicode-normalization-alignments 0.1.12: Unicode 9.0): canonical combining classes,
   full canonical and compatibility decompositions and the primary composites. Unicode's stability
   policy freezes decompositions and combining classes of assigned characters, so the data of a newer
   version restricted to the characters assigned in 9.0 is the 9.0 data; which characters those are
   comes from Perl's Unicode::UCD (`In=9.0`). Hangul syllables are algorithmic (not in the tables).

Usage: python3 scripts/gen_unicode_tables.py > src/tokenizer/unicode_tables.c
"""
import subprocess
import sys
import unicodedata as ud_norm

try:
    import unicodedata2 as ud
except ImportError:  # pragma: no cover
    import unicodedata as ud
    print(f"warning: unicodedata2 is missing; classes use Python's Unicode {ud.unidata_version}", file=sys.stderr)

NORM_VERSION = "9.0"


def ranges(pred):
    out, start = [], None
    for cp in range(0x110000):
        if pred(cp):
            if start is None:
                start = cp
        elif start is not None:
            out.append((start, cp - 1))
            start = None
    if start is not None:
        out.append((start, 0x10FFFF))
    return out


def cat(cp):
    return ud.category(chr(cp))


def is_letter(cp):
    return cat(cp) in ("Lu", "Ll", "Lt", "Lm", "Lo")


def is_number(cp):
    return cat(cp) in ("Nd", "Nl", "No")


def is_space(cp):
    # White_Space: Python's isspace() minus U+001C..U+001F (stable across versions).
    return chr(cp).isspace() and not (0x1C <= cp <= 0x1F)


def cats(*names):
    return lambda cp: cat(cp) in names


def emit(name, rs):
    print(f"const zaya_unicode_range {name}[] = {{")
    line = "   "
    for a, b in rs:
        item = f" {{0x{a:X}, 0x{b:X}}},"
        if len(line) + len(item) > 110:
            print(line)
            line = "   "
        line += item
    print(line)
    print("};")
    print(f"const int {name}_count = {len(rs)};\n")


def emit_u32(name, vals, ctype="uint32_t"):
    print(f"const {ctype} {name}[] = {{")
    line = "   "
    for v in vals:
        item = f" 0x{v:X},"
        if len(line) + len(item) > 110:
            print(line)
            line = "   "
        line += item
    print(line)
    print("};")


def assigned_in(version):
    """Code points assigned in Unicode `version` or earlier (Perl's In=version property)."""
    out = subprocess.run(["perl", "-MUnicode::UCD=prop_invlist", "-e",
                          f'print join(" ", prop_invlist("In={version}"))'], capture_output=True, text=True, check=True)
    inv = [int(x) for x in out.stdout.split()]
    keep = bytearray(0x110000)
    for k in range(0, len(inv), 2):
        hi = inv[k + 1] if k + 1 < len(inv) else 0x110000
        for cp in range(inv[k], hi):
            keep[cp] = 1
    return keep


def hangul(cp):
    return 0xAC00 <= cp <= 0xD7A3


def norm_tables():
    keep = assigned_in(NORM_VERSION)
    ccc = [ud_norm.combining(chr(cp)) if keep[cp] else 0 for cp in range(0x110000)]
    # Combining class ranges of equal nonzero value.
    cr, start = [], None
    for cp in range(0x110001):
        v = ccc[cp] if cp < 0x110000 else 0
        if start is not None and (v != ccc[start] or cp == 0x110000):
            cr.append((start, cp - 1, ccc[start]))
            start = None
        if v and start is None:
            start = cp
    canon, compat, pool = [], [], []

    def add(table, cp, seq):
        table.append((cp, len(pool), len(seq)))
        pool.extend(ord(c) for c in seq)

    for cp in range(0x110000):
        if not keep[cp] or hangul(cp) or 0xD800 <= cp <= 0xDFFF:
            continue
        c = chr(cp)
        d = ud_norm.normalize("NFD", c)
        k = ud_norm.normalize("NFKD", c)
        if d != c:
            add(canon, cp, d)
        if k != d:
            add(compat, cp, k)
    # Primary composites: canonical pairs (a, b) -> c that NFC recomposes.
    pairs = []
    for cp in range(0x110000):
        if not keep[cp] or hangul(cp) or 0xD800 <= cp <= 0xDFFF:
            continue
        dec = ud_norm.decomposition(chr(cp))
        if not dec or dec.startswith("<"):
            continue
        parts = [int(x, 16) for x in dec.split()]
        if len(parts) != 2:
            continue
        if ud_norm.normalize("NFC", chr(parts[0]) + chr(parts[1])) == chr(cp):
            pairs.append((parts[0], parts[1], cp))
    pairs.sort()
    return cr, canon, compat, pool, pairs


print("/* Generated by scripts/gen_unicode_tables.py. Do not edit. Character classes: Unicode "
      f"{ud.unidata_version} (unicodedata2);\n * normalization: Unicode {NORM_VERSION} (Unicode "
      f"{ud_norm.unidata_version} data restricted to the characters assigned in {NORM_VERSION}). */")
print('#include "tokenizer/unicode.h"\n')
print(f'const char zaya_unicode_version[] = "{ud.unidata_version}";')
print(f'const char zaya_unicode_norm_version[] = "{NORM_VERSION}";\n')
emit("zaya_unicode_letters", ranges(is_letter))
emit("zaya_unicode_numbers", ranges(is_number))
emit("zaya_unicode_spaces", ranges(is_space))
emit("zaya_unicode_upper", ranges(cats("Lu", "Lt")))
emit("zaya_unicode_lower", ranges(cats("Ll")))
emit("zaya_unicode_lmlo", ranges(cats("Lm", "Lo")))
emit("zaya_unicode_marks", ranges(cats("Mn", "Mc", "Me")))

cr, canon, compat, pool, pairs = norm_tables()
print("const zaya_unicode_ccc zaya_unicode_ccc_ranges[] = {")
line = "   "
for a, b, v in cr:
    item = f" {{0x{a:X}, 0x{b:X}, {v}}},"
    if len(line) + len(item) > 110:
        print(line)
        line = "   "
    line += item
print(line)
print("};")
print(f"const int zaya_unicode_ccc_count = {len(cr)};\n")
for name, table in (("zaya_unicode_canon", canon), ("zaya_unicode_compat", compat)):
    print(f"const zaya_unicode_decomp {name}[] = {{")
    line = "   "
    for cp, off, n in table:
        item = f" {{0x{cp:X}, {off}, {n}}},"
        if len(line) + len(item) > 110:
            print(line)
            line = "   "
        line += item
    print(line)
    print("};")
    print(f"const int {name}_count = {len(table)};\n")
emit_u32("zaya_unicode_decomp_pool", pool)
print(f"const int zaya_unicode_decomp_pool_count = {len(pool)};\n")
print("const zaya_unicode_pair zaya_unicode_compose[] = {")
line = "   "
for a, b, c in pairs:
    item = f" {{0x{a:X}, 0x{b:X}, 0x{c:X}}},"
    if len(line) + len(item) > 110:
        print(line)
        line = "   "
    line += item
print(line)
print("};")
print(f"const int zaya_unicode_compose_count = {len(pairs)};")
