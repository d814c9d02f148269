"""The C++ pre-tokenizer (``storygpt._bpe.pretokenize``) against the Python reference.

Oracle: ``storygpt.tokenizers.bpe_reference.pretokenize``, which runs the
``regex`` package on the tiktoken pattern strings after decoding with
``surrogateescape``; plus Python's own UTF-8 decoder for the byte-level rule,
the ``regex`` package itself for the Unicode tables, and a few hand-computed
chunk lists.
"""

from __future__ import annotations

import itertools
import os
import random
import subprocess
import sys
import time

import pytest
import regex
from conftest import CORPORA
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storygpt import _bpe
from storygpt.tokenizers.bpe_reference import PATTERNS
from storygpt.tokenizers.bpe_reference import pretokenize as ref_pretokenize

ALL = ("simple", "gpt2", "gpt4", "o200k", "superword")
UNICODE = ("gpt2", "gpt4", "o200k")
MAX_CP = 0x110000


def check(data: bytes, pattern: str) -> list[bytes]:
    """Assert C++ == reference for (data, pattern) and return the chunks."""
    got = _bpe.pretokenize(data, pattern)
    want = ref_pretokenize(data, pattern)
    if got != want:
        # Point at the first differing chunk to make failures readable.
        k = next((k for k, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
        raise AssertionError(
            f"pattern {pattern!r}, input {data[:80]!r}...: first difference at chunk {k}: "
            f"C++ {got[k : k + 3]!r} vs reference {want[k : k + 3]!r}"
        )
    assert b"".join(got) == data
    assert all(got)
    return got


# ---------------------------------------------------------------------------
# Unicode tables and the UTF-8 rule


@pytest.fixture(scope="module")
def all_code_points() -> str:
    return "".join(map(chr, range(MAX_CP)))


def test_char_classes_match_installed_regex_for_every_code_point(all_code_points):
    table = _bpe._pretokenize_char_classes()
    assert len(table) == MAX_CP
    want = bytearray(MAX_CP)
    for cls, pat in ((1, r"\p{L}+"), (2, r"\p{N}+"), (3, r"\s+")):
        for m in regex.finditer(pat, all_code_points):
            want[m.start() : m.end()] = bytes([cls]) * (m.end() - m.start())
    if bytes(want) != table:
        bad = [cp for cp in range(MAX_CP) if want[cp] != table[cp]]
        pytest.fail(
            f"csrc/pretokenize/unicode_tables.h (from regex {_bpe._unicode_tables_regex_version}) disagrees with "
            f"installed regex {regex.__version__} on {len(bad)} code points, first "
            f"{[hex(c) for c in bad[:10]]}; regenerate with: python scripts/gen_unicode_tables.py"
        )


def test_committed_header_is_generator_output(tmp_path):
    # The committed csrc/pretokenize/unicode_tables.h must be what scripts/gen_unicode_tables.py
    # writes with the installed regex (comments and the version string aside).
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    out = tmp_path / "unicode_tables.h"
    subprocess.run(
        [sys.executable, os.path.join(root, "scripts", "gen_unicode_tables.py"), "--out", str(out)],
        check=True,
        capture_output=True,
        timeout=120,
    )

    def body(text: str) -> list[str]:
        return [ln for ln in text.splitlines() if not ln.startswith("//") and "kRegexVersion" not in ln]

    with open(os.path.join(root, "csrc", "pretokenize", "unicode_tables.h"), encoding="ascii") as f:
        committed = f.read()
    assert body(out.read_text(encoding="ascii")) == body(committed), (
        "csrc/pretokenize/unicode_tables.h is stale; regenerate with: python scripts/gen_unicode_tables.py"
    )


def test_char_classes_spot_values():
    t = _bpe._pretokenize_char_classes()
    assert [t[ord(c)] for c in "a Z0\t\n\r\x0b\x0c.'\x00"] == [1, 3, 1, 2, 3, 3, 3, 3, 3, 0, 0, 0]
    assert t[0xA0] == 3 and t[0x3000] == 3 and t[0x85] == 3  # NBSP, ideographic space, NEL
    assert t[0x4E2D] == 1 and t[0x0416] == 1 and t[0x00E9] == 1  # 中, Ж, é
    assert t[0x0301] == 0  # combining acute accent is a mark, not a letter
    assert t[0x0663] == 2 and t[0x2167] == 2 and t[0xBD] == 2  # Arabic-Indic 3, Roman numeral 8, ½
    assert all(t[0xDC80 + b] == 0 for b in range(128))  # surrogate escapes behave like punctuation


def test_decoder_matches_python_for_all_one_and_two_byte_strings():
    for a in range(256):
        data = bytes([a])
        assert _bpe._decode_utf8_surrogateescape(data) == [ord(c) for c in data.decode("utf-8", "surrogateescape")]
    for a, b in itertools.product(range(256), repeat=2):
        data = bytes([a, b])
        want = [ord(c) for c in data.decode("utf-8", "surrogateescape")]
        assert _bpe._decode_utf8_surrogateescape(data) == want, data


# Every boundary of Table 3-7 plus ASCII.
_EDGE_BYTES = [
    0x00,
    0x41,
    0x7F,
    0x80,
    0x8F,
    0x90,
    0x9F,
    0xA0,
    0xBF,
    0xC0,
    0xC1,
    0xC2,
    0xDF,
    0xE0,
    0xE1,
    0xEC,
    0xED,
    0xEE,
    0xEF,
    0xF0,
    0xF1,
    0xF3,
    0xF4,
    0xF5,
    0xFF,
]


def test_decoder_matches_python_on_edge_bytes_exhaustively_up_to_four():
    for k in (3, 4):
        for combo in itertools.product(_EDGE_BYTES, repeat=k):
            data = bytes(combo)
            want = [ord(c) for c in data.decode("utf-8", "surrogateescape")]
            assert _bpe._decode_utf8_surrogateescape(data) == want, data


def test_decoder_matches_python_on_random_three_to_eight_bytes():
    rng = random.Random(1234)
    for _ in range(100_000):
        data = bytes(
            rng.randrange(256) if rng.random() < 0.5 else rng.choice(_EDGE_BYTES) for _ in range(rng.randint(3, 8))
        )
        want = [ord(c) for c in data.decode("utf-8", "surrogateescape")]
        assert _bpe._decode_utf8_surrogateescape(data) == want, data


@pytest.mark.parametrize(
    "data, escaped",
    [
        (b"\xe2\x82A", [0xE2, 0x82]),  # truncated 3-byte sequence before ASCII
        (b"\xed\xa0\x80", [0xED, 0xA0, 0x80]),  # encoded surrogate U+D800
        (b"\xf4\x90\x80\x80", [0xF4, 0x90, 0x80, 0x80]),  # U+110000, beyond Unicode
        (b"\xc0\xaf", [0xC0, 0xAF]),  # overlong '/'
        (b"\xe0\x80\xaf", [0xE0, 0x80, 0xAF]),  # overlong 3-byte
        (b"\xf0\x9f\x98", [0xF0, 0x9F, 0x98]),  # truncated emoji at the end
    ],
)
def test_documented_invalid_utf8_examples(data, escaped):
    cps = _bpe._decode_utf8_surrogateescape(data)
    assert [c for c in cps if c >= 0xDC00] == [0xDC00 + b for b in escaped]


def test_pretokenize_all_one_and_two_byte_strings():
    for a in range(256):
        for p in ALL:
            check(bytes([a]), p)
    for a, b in itertools.product(range(256), repeat=2):
        data = bytes([a, b])
        for p in UNICODE:
            assert _bpe.pretokenize(data, p) == ref_pretokenize(data, p), (data, p)


def test_pretokenize_random_short_byte_strings():
    rng = random.Random(99)
    alphabet = _EDGE_BYTES + list(b" \t\r\n'sSlLvVeErRdDmMtT1a.") + [0xC5, 0xBF]  # c5 bf = U+017F
    for _ in range(30_000):
        data = bytes(rng.choice(alphabet) for _ in range(rng.randint(3, 6)))
        for p in UNICODE:
            assert _bpe.pretokenize(data, p) == ref_pretokenize(data, p), (data, p)


# ---------------------------------------------------------------------------
# Hand-written cases

CASES = [
    "",
    "Hello world",
    "Hello, world! How's it going? I'm fine; we'll see, they've gone, you're here, he'd go.",
    "don't DON'T Don'T I'M WE'LL THEY'VE YOU'RE HE'D IT'S 'S 'LL 'Ll 'lL 've 'VE 'rE 'Re",
    "'s's''s ' s 'x 'll' 'l 'v 'r 'e '",
    "\u017f 'ſ 'ſt 'ſſ '\u212a 'K x'\u017fy",  # long s folds to s; Kelvin sign folds to k
    "café naïve résumé Ångström",
    "cafe\u0301 e\u0301e\u0301 a\u0300\u0301\u0302b \u0301x",  # combining marks
    "Привет, мир! Как дела? Ёжик в тумане.",
    "中文测试，你好！「引号」。１２３ａｂｃ",
    "日本語のテキスト、カタカナ。한국어 텍스트",
    "emoji 😀😀 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 ❤️ x😀y",
    "line1\r\nline2\r\n\r\nline3\rline4\n",
    "a\tb\t\tc \t d\t\n\te",
    "nul\x00byte\x00\x00 \x00x",
    "\n\n\n",
    "\n\n\nx",
    "trailing spaces   ",
    "trailing  \n",
    "  \n",
    " \n ",
    "a \n",
    "a\n",
    "a  \nb",
    "a \n\n",
    "x\n \n \n y",
    "1234567 12 1 123 1234 ١٢٣٤ ½⅓ Ⅷ 3.14159 1,000,000",
    "abc123def 4five6",
    " !!! ... ?!?\n\n... \r\n-- \n",
    "    leading spaces",
    "\u00a0nbsp\u00a0\u00a0x \u3000ideographic\u3000\u3000y \u2028ls\u2029ps \x85nel",
    "\x1c\x1d\x1e\x1f\x0b\x0c",
    "mixed Latin кириллица 中文 ελληνικά עברית العربية हिन्दी",
    "$100 @user #tag http://example.com/a_b?c=d&e=f",
    "'",
    " '",
    "''",
    "x'",
    " ",
    "\r",
    " \r\n x",
]


@pytest.mark.parametrize("pattern", ALL)
@pytest.mark.parametrize("text", CASES)
def test_hand_written_text(text, pattern):
    check(text.encode("utf-8"), pattern)


BYTE_CASES = [
    b"\xff hello",  # invalid at the start
    b"hello \xff world",  # invalid in the middle
    b"hello \xe2\x82",  # truncated at the end
    b"\xe2\x82A\xe2\x82\xac",  # truncated, then the euro sign
    b"\xed\xa0\x80abc",  # encoded surrogate
    b"\xf4\x90\x80\x80 x",  # above U+10FFFF
    b"\xc0\xaf\xc0\xaf",  # overlong
    b"\x80\x80\x80word",  # lone continuation bytes
    b"it'\xffs",
    b"'\xc5\xbf",  # 'ſ
    b"'\xc5",  # contraction quote then truncated
    b" \xff\xfe\n\n",
    b"\xff\n",
    b"\t\xff",
    b"123\xff456",
    b"\xf0\x9f\x98\x80\xf0\x9f\x98",  # emoji then truncated emoji
]


@pytest.mark.parametrize("pattern", ALL)
@pytest.mark.parametrize("data", BYTE_CASES)
def test_hand_written_bytes(data, pattern):
    check(data, pattern)


def test_letter_runs_across_simd_blocks():
    # The C++ letter-run (and simple word-run) scans read 16 bytes at a time (SSE2); exercise every
    # run length and position around the block edges, ASCII neighbours of the
    # letter ranges ('@', '[', '`', '{'), non-ASCII letters and invalid bytes.
    terminators = [
        b"",
        b"@",
        b"[",
        b"`",
        b"{",
        b"0",
        b" ",
        b"\n",
        b"'",
        b"\x7f",
        b"\xc3\xa9x",
        b"\xff",
        b"\xd0\x96",
        b"\xe4\xb8\xad",
        b"\xcc\x81",
        b"\xe2\x82",
    ]
    for prefix in (b"", b" ", b"'", b"..."):
        for k in range(0, 40):
            for t in terminators:
                data = prefix + (b"aZ9" * 20)[:k] + t + b"Qz"
                for p in ALL:
                    assert _bpe.pretokenize(data, p) == ref_pretokenize(data, p), (data, p)


# Hand-computed expectations (an oracle independent of the regex engine).
@pytest.mark.parametrize(
    "pattern, text, want",
    [
        ("gpt2", "Hello world's  end", ["Hello", " world", "'s", " ", " end"]),
        ("gpt2", "I'LL 1234567", ["I", "'", "LL", " 1234567"]),
        ("gpt4", "I'LL 1234567", ["I", "'LL", " ", "123", "456", "7"]),
        ("gpt4", "'ſ", ["'ſ"]),
        ("gpt2", "'ſ", ["'", "ſ"]),
        ("gpt4", "a  \n\n b", ["a", "  \n\n", " b"]),
        ("gpt2", "a  \n\n b", ["a", "  \n\n", " b"]),
        ("gpt4", "hi!!\n\nthere", ["hi", "!!\n\n", "there"]),
        ("gpt4", "\tword", ["\tword"]),
        ("gpt2", "\tword", ["\t", "word"]),
        ("gpt2", "a \n", ["a", " \n"]),  # \s++$ takes the trailing run
        ("gpt4", "x   ", ["x", "   "]),
        # o200k (GPT-4o): case runs, marks with letters, contractions after words, no \s++$
        ("o200k", "HelloWorld ABCdef", ["Hello", "World", " ABCdef"]),
        ("o200k", "HELLO world", ["HELLO", " world"]),
        ("o200k", "DON'T don't I'LL 'll", ["DON'T", " don't", " I'LL", " '", "ll"]),  # no lone contraction
        ("o200k", "e\u0301cole \u0301x", ["e\u0301cole", " \u0301x"]),  # a mark is a letter here
        ("o200k", "\u01c5ungla \u01c5", ["\u01c5ungla", " \u01c5"]),  # Lt is upper: Dž + ungla
        ("o200k", "x  \n\n  ", ["x", "  \n\n", "  "]),  # \s*[\r\n]+ before \s+(?!\S)
        ("o200k", "a!/\n/b 1234", ["a", "!/\n/", "b", " ", "123", "4"]),
        ("o200k", "\u02b0A", ["\u02b0", "A"]),  # Lm is in both classes: U* gives it back to L+
    ],
)
def test_known_chunks(pattern, text, want):
    assert [c.decode("utf-8") for c in check(text.encode("utf-8"), pattern)] == want


def test_invalid_bytes_act_like_punctuation():
    assert _bpe.pretokenize(b"a \xff\xfe!b", "gpt2") == [b"a", b" \xff\xfe!", b"b"]
    assert _bpe.pretokenize(b"a \xff\xfe!\n\nb", "gpt4") == [b"a", b" \xff\xfe!\n\n", b"b"]
    assert _bpe.pretokenize(b"\xffword", "gpt4") == [b"\xffword"]
    assert _bpe.pretokenize(b"\xffWord\xfe", "o200k") == [b"\xffWord", b"\xfe"]


# ---------------------------------------------------------------------------
# Long inputs: no crash, linear time


@pytest.mark.parametrize("pattern", ALL)
@pytest.mark.parametrize(
    "data",
    [
        b" " * 100_000 + b"a",
        b" " * 100_000,
        b"\n" * 50_000 + b" " * 50_000 + b"a",
        b" \n" * 50_000 + b"a",
        b"a" * 1_000_000,
        b"7" * 300_000,
        b"." * 1_000_000,
        b"\x00" * 300_000,
        b"\xff" * 300_000,
        b"\x80" * 300_000,
        "é".encode() * 300_000,
        b"\xe2\x82" * 200_000,
    ],
    ids=[
        "100k_spaces_letter",
        "100k_spaces",
        "nl_then_spaces",
        "space_nl",
        "1M_letters",
        "300k_digits",
        "1M_dots",
        "300k_nul",
        "300k_ff",
        "300k_cont",
        "300k_e_acute",
        "truncated_x200k",
    ],
)
def test_long_runs_match_reference(data, pattern):
    check(data, pattern)


def _timed_whitespace_run(k: int, pattern: str):
    """Pre-tokenize ``k`` spaces and an "a": (seconds, chunks)."""
    data = b" " * k + b"a"
    t = time.perf_counter()
    chunks = _bpe.pretokenize(data, pattern)
    return time.perf_counter() - t, chunks


@pytest.mark.parametrize("pattern", UNICODE)
def test_whitespace_lookahead_chunks(pattern):
    for k in (200_000, 4_000_000):
        assert _timed_whitespace_run(k, pattern)[1] == [b" " * (k - 1), b" a"]


@pytest.mark.perf
@pytest.mark.parametrize("pattern", UNICODE)
def test_whitespace_lookahead_is_linear(pattern):
    t_small, _ = _timed_whitespace_run(200_000, pattern)
    t_big, _ = _timed_whitespace_run(4_000_000, pattern)
    # Linear: 20x the input costs ~20x (quadratic would be ~400x); generous bound
    # for noisy shared machines, and an absolute bound too.
    assert t_big < 1.0 and t_big < 100 * max(t_small, 1e-4), (t_small, t_big)


# ---------------------------------------------------------------------------
# Real text


def _corpus(name: str, size: int | None = 200_000) -> bytes:
    path = os.path.join(CORPORA, name)
    if not os.path.exists(path):
        pytest.skip(f"shared corpus {path} absent (the repo is expected next to shared/)")
    with open(path, "rb") as f:
        return f.read() if size is None else f.read(size)


@pytest.mark.parametrize("pattern", ALL)
@pytest.mark.parametrize("name", ["english_literature_plus_kjv.txt", "russian_fortunes.txt", "chinese_fortunes.txt"])
def test_corpus_sample(name, pattern):
    data = _corpus(name)
    chunks = check(data, pattern)
    assert len(chunks) > 1000
    # The cut at 200,000 bytes may split a UTF-8 sequence; also check a shifted cut.
    check(data[1:150_001], pattern)


@pytest.mark.slow
@pytest.mark.parametrize("pattern", ALL)
@pytest.mark.parametrize("name", ["english_literature_plus_kjv.txt", "russian_fortunes.txt", "chinese_fortunes.txt"])
def test_full_corpus(name, pattern):
    check(_corpus(name, None), pattern)


# ---------------------------------------------------------------------------
# Property tests

_INTERESTING = (
    " \t\r\n\x0b\x0c\x00'sSdDmMtTlLvVeErR\u017f\u212a0123456789.,!?-\"()aé\u0301Жж中😀\u200d"
    "\u00a0\u3000\u2028\u0663\u00bd\x85\x1c"
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text())
def test_property_random_unicode(text):
    data = text.encode("utf-8", "surrogatepass")
    for p in ALL:
        check(data, p)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=_INTERESTING, max_size=40))
def test_property_interesting_characters(text):
    data = text.encode("utf-8")
    for p in UNICODE:
        check(data, p)


@settings(max_examples=400, deadline=None)
@given(st.binary())
def test_property_random_bytes(data):
    for p in ALL:
        check(data, p)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_EDGE_BYTES + list(b" \n\r'sa1.") + [0xC5, 0xBF]), max_size=30).map(bytes))
def test_property_edge_bytes(data):
    for p in UNICODE:
        check(data, p)


# ---------------------------------------------------------------------------
# Errors


def test_unknown_pattern_is_value_error():
    with pytest.raises(ValueError, match=r"unknown pre-tokenization pattern 'gpt5'.*gpt2.*gpt4.*simple"):
        _bpe.pretokenize(b"abc", "gpt5")
    with pytest.raises(ValueError, match="unknown pre-tokenization pattern"):
        ref_pretokenize(b"abc", "gpt5")


@pytest.mark.parametrize("pattern", ALL)
def test_chunk_end_streaming_equals_split(pattern):
    data = "It's 12345 times\r\n\n  naïve 中文 😀!!\n ".encode() + b"\xff\xe2\x82 x  "
    chunks = check(data, pattern)
    ends = list(itertools.accumulate(len(c) for c in chunks))
    assert _bpe._pretokenize_ends_streaming(data, pattern) == ends


def test_str_input_is_type_error():
    with pytest.raises(TypeError):
        _bpe.pretokenize("text", "gpt2")
    with pytest.raises(TypeError):
        ref_pretokenize("text", "gpt2")


def test_patterns_cover_reference_names():
    assert set(PATTERNS) == set(ALL)
