#!/usr/bin/env python3
"""Generate ``csrc/pretokenize/unicode_tables.h``: the character classes of the C++ pre-tokenizer.

The ``"gpt2"`` and ``"gpt4"`` pre-tokenization patterns (see
``storygpt/tokenizers/bpe_reference.py``) are defined by the ``regex`` package.
To give exactly the same chunks, the hand-written C++ matchers must use exactly
the same character classes, so this script asks the *installed* ``regex``
package itself, for every code point U+0000..U+10FFFF (lone surrogates
included), whether it matches ``\\p{L}``, ``\\p{N}`` and ``\\s``, and which code
points the case-insensitive contraction letters of ``"gpt4"``
(``'(?i:[sdmt]|ll|ve|re)``) match.  It writes:

* a two-stage lookup table ``kClassStage1`` / ``kClassStage2`` giving each code
  point a class: 0 = other (punctuation, symbols, marks, controls that are not
  white space, unassigned, surrogates), 1 = letter ``\\p{L}``, 2 = number
  ``\\p{N}``, 3 = white space ``\\s``;
* a second two-stage table ``kO200kStage1`` / ``kO200kStage2`` for the ``"o200k"``
  pattern (GPT-4o), which tells letters apart by case and counts marks with them:
  0 = other, 1 = upper ``\\p{Lu}``/``\\p{Lt}``, 2 = lower ``\\p{Ll}``, 3 = both
  ``\\p{Lm}``/``\\p{Lo}`` (in both of o200k's letter classes), 4 = mark ``\\p{M}``
  (in both letter classes too, but not ``\\p{L}``), 5 = number ``\\p{N}``, 6 = white space ``\\s``;
* ``kContractionFolds``: every code point other than the ASCII letters
  themselves that ``(?i:x)`` matches for a contraction letter ``x``
  (e.g. U+017F LATIN SMALL LETTER LONG S for ``s``).

The header records the ``regex`` version and the newest Unicode version whose
characters that ``regex`` build knows.  Re-run this script after upgrading
``regex``; ``tests/core/test_pretokenize.py`` checks the committed tables against the
installed package.

Usage::

    python scripts/gen_unicode_tables.py [--out csrc/pretokenize/unicode_tables.h] [--block-bits 7]
"""

from __future__ import annotations

import argparse
import os
import sys

import regex

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository root
from storygpt.atomic import atomic_write  # noqa: E402  (stdlib only; no torch)

MAX_CP = 0x110000
CLASS_OTHER, CLASS_LETTER, CLASS_NUMBER, CLASS_SPACE = 0, 1, 2, 3
CONTRACTION_LETTERS = "sdmtlvre"
O200K_CLASSES = (
    (1, r"[\p{Lu}\p{Lt}]+"),
    (2, r"\p{Ll}+"),
    (3, r"[\p{Lm}\p{Lo}]+"),
    (4, r"\p{M}+"),
    (5, r"\p{N}+"),
    (6, r"\s+"),
)

# A few characters first assigned in each Unicode version, used to report which
# Unicode version the installed ``regex`` knows (``regex`` has no Age property).
_UNICODE_PROBES = [
    ("13.0", 0x1FAD0),  # BLUEBERRIES (So), probed via Cn
    ("14.0", 0x1E290),  # TOTO LETTER PA
    ("15.0", 0x1E030),  # MODIFIER LETTER CYRILLIC SMALL A
    ("15.1", 0x2EBF0),  # CJK UNIFIED IDEOGRAPH-2EBF0 (Extension I)
    ("16.0", 0x10D50),  # GARAY CAPITAL LETTER A
    ("17.0", 0x323B0),  # CJK UNIFIED IDEOGRAPH-323B0 (Extension J)
]


def all_code_points() -> str:
    """Every code point U+0000..U+10FFFF, in order, as one str (surrogates included)."""
    return "".join(map(chr, range(MAX_CP)))


def compute_classes(text: str) -> bytearray:
    """Class of every code point, asked from ``regex`` (vectorised with finditer).

    Raises:
        RuntimeError: if a code point is in more than one of L, N, \\s.
    """
    classes = bytearray(MAX_CP)
    seen = bytearray(MAX_CP)
    for cls, pat in ((CLASS_LETTER, r"\p{L}+"), (CLASS_NUMBER, r"\p{N}+"), (CLASS_SPACE, r"\s+")):
        for m in regex.finditer(pat, text):
            a, b = m.span()
            if any(seen[a:b]):
                raise RuntimeError(f"classes overlap in U+{a:04X}..U+{b - 1:04X}")
            seen[a:b] = b"\x01" * (b - a)
            classes[a:b] = bytes([cls]) * (b - a)
    return classes


def compute_o200k_classes(text: str) -> bytearray:
    """Class of every code point for the ``"o200k"`` matcher (:data:`O200K_CLASSES`), asked from ``regex``.

    Raises:
        RuntimeError: if a code point is in more than one class.
    """
    classes = bytearray(MAX_CP)
    seen = bytearray(MAX_CP)
    for cls, pat in O200K_CLASSES:
        for m in regex.finditer(pat, text):
            a, b = m.span()
            if any(seen[a:b]):
                raise RuntimeError(f"o200k classes overlap in U+{a:04X}..U+{b - 1:04X}")
            seen[a:b] = b"\x01" * (b - a)
            classes[a:b] = bytes([cls]) * (b - a)
    return classes


def compute_contraction_folds(text: str) -> list[tuple[int, str]]:
    """Non-ASCII-letter code points matched case-insensitively by a contraction letter.

    Checks the literal form ``(?i:x)`` and the class form ``(?i:[x])`` agree,
    and that no single code point matches a two-letter contraction (which would
    mean full case folding, unsupported by the C++ matcher).
    """
    folds = []
    for x in CONTRACTION_LETTERS:
        lit = {m.start() for m in regex.finditer(f"(?i:{x})", text)}
        cls = {m.start() for m in regex.finditer(f"(?i:[{x}])", text)}
        if lit != cls:
            raise RuntimeError(f"(?i:{x}) and (?i:[{x}]) disagree: {sorted(lit ^ cls)}")
        if {ord(x), ord(x.upper())} - lit:
            raise RuntimeError(f"(?i:{x}) does not match both cases of {x!r}")
        folds += [(cp, x) for cp in sorted(lit) if cp not in (ord(x), ord(x.upper()))]
    two = regex.compile(r"'(?i:ll|ve|re)")
    for cp in range(MAX_CP):
        if two.fullmatch("'" + chr(cp)):
            raise RuntimeError(f"U+{cp:04X} matches a two-letter contraction (full case folding)")
    return folds


def unicode_version_probe(classes: bytearray) -> str:
    """Newest Unicode version (of those probed) whose probe character ``regex`` knows."""
    known = "older than 13.0"
    for version, cp in _UNICODE_PROBES:
        if regex.match(r"\p{Cn}", chr(cp)):
            break
        known = version
    return known


def two_stage(classes: bytearray, block_bits: int) -> tuple[list[int], list[bytes]]:
    """Split the class array into deduplicated blocks of ``2**block_bits`` entries."""
    size = 1 << block_bits
    index: dict[bytes, int] = {}
    blocks: list[bytes] = []
    stage1: list[int] = []
    for start in range(0, MAX_CP, size):
        blk = bytes(classes[start : start + size])
        if blk not in index:
            index[blk] = len(blocks)
            blocks.append(blk)
        stage1.append(index[blk])
    return stage1, blocks


def _c_array(values, per_line: int = 32) -> str:
    vals = list(values)
    lines = []
    for k in range(0, len(vals), per_line):
        lines.append("    " + ",".join(str(v) for v in vals[k : k + per_line]) + ",")
    return "\n".join(lines)


def render(classes: bytearray, folds, block_bits: int, o200k: bytearray) -> str:
    stage1, blocks = two_stage(classes, block_bits)
    s1_type = "uint8_t" if len(blocks) <= 256 else "uint16_t"
    o_stage1, o_blocks = two_stage(o200k, block_bits)
    o_s1_type = "uint8_t" if len(o_blocks) <= 256 else "uint16_t"
    o_counts = [o200k.count(c) for c in range(7)]
    counts = [classes.count(c) for c in range(4)]
    fold_lines = "\n".join(f"    {{0x{cp:04X}, '{x}'}}," for cp, x in folds) or "    {0, 0},"
    return f"""\
// GENERATED by scripts/gen_unicode_tables.py -- do not edit by hand.
//
// Character classes of the pre-tokenization patterns, asked from the Python
// `regex` package version {regex.__version__} (knows Unicode {unicode_version_probe(classes)};
// Python {sys.version.split()[0]}) for every code point U+0000..U+10FFFF:
//   0 other   (everything else, incl. lone surrogates U+D800..U+DFFF)  {counts[0]} code points
//   1 letter  \\p{{L}}                                                   {counts[1]} code points
//   2 number  \\p{{N}}                                                   {counts[2]} code points
//   3 space   \\s                                                       {counts[3]} code points
// Two-stage table: class(cp) = kClassStage2[(kClassStage1[cp >> {block_bits}] << {block_bits}) | (cp & {(1 << block_bits) - 1})].
// {len(blocks)} distinct blocks of {1 << block_bits} entries.
// Regenerate after upgrading `regex`: python scripts/gen_unicode_tables.py
#pragma once

#include <cstdint>

namespace storygpt {{
namespace unicode_tables {{

constexpr const char* kRegexVersion = "{regex.__version__}";
constexpr int kBlockBits = {block_bits};
constexpr uint32_t kMaxCodePoint = 0x10FFFF;

enum CharClass : uint8_t {{ kOther = 0, kLetter = 1, kNumber = 2, kSpace = 3 }};

// kClassStage1[cp >> kBlockBits] = index of the block of cp in kClassStage2.
constexpr {s1_type} kClassStage1[{len(stage1)}] = {{
{_c_array(stage1)}
}};

// {len(blocks)} blocks of {1 << block_bits} classes.
constexpr uint8_t kClassStage2[{len(blocks) << block_bits}] = {{
{_c_array(b"".join(blocks), 64)}
}};

// "o200k" (GPT-4o) classes: 0 other {o_counts[0]}, 1 upper \\p{{Lu}}\\p{{Lt}} {o_counts[1]},
// 2 lower \\p{{Ll}} {o_counts[2]}, 3 both \\p{{Lm}}\\p{{Lo}} {o_counts[3]}, 4 mark \\p{{M}} {o_counts[4]},
// 5 number \\p{{N}} {o_counts[5]}, 6 space \\s {o_counts[6]} code points; same two-stage layout.
enum O200kClass : uint8_t {{ kOOther = 0, kOUpper = 1, kOLower = 2, kOBoth = 3, kOMark = 4, kONumber = 5, kOSpace = 6 }};
constexpr {o_s1_type} kO200kStage1[{len(o_stage1)}] = {{
{_c_array(o_stage1)}
}};
constexpr uint8_t kO200kStage2[{len(o_blocks) << block_bits}] = {{
{_c_array(b"".join(o_blocks), 64)}
}};

// Code points (other than the ASCII letter itself in either case) that the
// case-insensitive contraction letters of "gpt4" match: {{code point, letter}}.
struct ContractionFold {{
    uint32_t code_point;
    char letter;
}};
constexpr ContractionFold kContractionFolds[] = {{
{fold_lines}
}};
constexpr int kNumContractionFolds = {len(folds)};

}}  // namespace unicode_tables
}}  // namespace storygpt
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--out",
        default=os.path.join(
            os.path.dirname(os.path.abspath(__file__)), "..", "csrc", "pretokenize", "unicode_tables.h"
        ),
        help="header to write (default: csrc/pretokenize/unicode_tables.h next to this script); written atomically",
    )
    ap.add_argument(
        "--block-bits",
        type=int,
        default=7,
        help="log2 of the block size of the two-stage table (default 7: blocks of 128 code points)",
    )
    args = ap.parse_args(argv)
    if not 4 <= args.block_bits <= 12:
        ap.error(f"--block-bits must be in 4..12, got {args.block_bits}")
    text = all_code_points()
    classes = compute_classes(text)
    folds = compute_contraction_folds(text)
    out = os.path.abspath(args.out)
    content = render(classes, folds, args.block_bits, compute_o200k_classes(text))
    with atomic_write(out, "w", encoding="ascii") as f:
        f.write(content)
    print(f"wrote {out} (regex {regex.__version__}, {len(content)} bytes, folds {folds})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
