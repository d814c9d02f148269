// Pre-tokenization (see pretokenize.h and docs/pretokenization.md).
//
// The "gpt2" and "gpt4" matchers below are hand-written equivalents of the
// tiktoken split patterns run by the Python `regex` package on the input
// decoded with "surrogateescape".  Each match function takes the start offset
// of a chunk and returns its end, trying the alternatives of the pattern in
// order, exactly as a backtracking regex engine would, but without
// backtracking: every alternative is decided from one forward scan.
#include "pretokenize/pretokenize.h"

#include <stdexcept>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "pretokenize/pretokenize_internal.h"
#include "pretokenize/unicode_tables.h"

namespace storygpt {

Pattern parse_pattern(const std::string& name) {
    if (name == "simple") return Pattern::Simple;
    if (name == "gpt2") return Pattern::GPT2;
    if (name == "gpt4") return Pattern::GPT4;
    if (name == "o200k") return Pattern::O200K;
    if (name == "superword") return Pattern::SuperWord;
    throw std::invalid_argument("unknown pre-tokenization pattern '" + name +
                                "'; expected one of 'gpt2', 'gpt4', 'o200k', 'simple', 'superword'");
}

const char* pattern_name(Pattern p) {
    switch (p) {
        case Pattern::Simple:
            return "simple";
        case Pattern::GPT2:
            return "gpt2";
        case Pattern::GPT4:
            return "gpt4";
        case Pattern::O200K:
            return "o200k";
        case Pattern::SuperWord:
            return "superword";
    }
    return "?";
}

namespace {

using detail::contraction_letter;
using detail::decode;
using detail::decode_multi;

// ---------------------------------------------------------------------------
// "simple": byte classes.

enum : unsigned char { kWord = 0, kPunct = 1, kBlank = 2 };

struct SimpleClasses {
    unsigned char cls[256];
};
constexpr SimpleClasses make_simple_classes() {
    SimpleClasses t{};
    for (int b = 0; b < 256; ++b) {
        const unsigned char c = static_cast<unsigned char>(b);
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c >= 0x80)
            t.cls[b] = kWord;
        else if (c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r')
            t.cls[b] = kBlank;
        else
            t.cls[b] = kPunct;
    }
    return t;
}
constexpr SimpleClasses kSimple = make_simple_classes();

// End of the run of "simple" word bytes starting at j.
inline size_t simple_word_run(const unsigned char* s, size_t n, size_t j) {
#if defined(__SSE2__)
    // 16 bytes at a time: a word byte is an ASCII letter ((b | 0x20) in
    // 'a'..'z'), an ASCII digit, or >= 0x80 (negative as int8).
    const __m128i lo = _mm_set1_epi8('a' - 1), hi = _mm_set1_epi8('z' + 1), bit = _mm_set1_epi8(0x20);
    const __m128i d_lo = _mm_set1_epi8('0' - 1), d_hi = _mm_set1_epi8('9' + 1), zero = _mm_setzero_si128();
    while (j + 16 <= n) {
        const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + j));
        const __m128i v = _mm_or_si128(raw, bit);
        const __m128i letter = _mm_and_si128(_mm_cmpgt_epi8(v, lo), _mm_cmplt_epi8(v, hi));
        const __m128i digit = _mm_and_si128(_mm_cmpgt_epi8(raw, d_lo), _mm_cmplt_epi8(raw, d_hi));
        const __m128i high = _mm_cmplt_epi8(raw, zero);
        const unsigned m = static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(letter, digit), high)));
        if (m != 0xFFFF) return j + static_cast<size_t>(__builtin_ctz(~m));
        j += 16;
    }
#endif
    while (j < n && kSimple.cls[s[j]] == kWord) ++j;
    return j;
}

size_t match_simple(const unsigned char* s, size_t n, size_t i) {
    size_t j = i;
    unsigned char cls = kSimple.cls[s[i]];
    if (s[i] == ' ' && i + 1 < n && kSimple.cls[s[i + 1]] != kBlank) {
        // one optional leading space before a word or punctuation run
        j = i + 1;
        cls = kSimple.cls[s[j]];
    }
    if (cls == kWord) return simple_word_run(s, n, j);
    while (j < n && kSimple.cls[s[j]] == cls) ++j;
    return j;
}

// ---------------------------------------------------------------------------
// Unicode classes and UTF-8 decoding for "gpt2" / "gpt4".

using unicode_tables::kBlockBits;
using unicode_tables::kClassStage1;
using unicode_tables::kClassStage2;
constexpr uint8_t kOther = unicode_tables::kOther;
constexpr uint8_t kLetter = unicode_tables::kLetter;
constexpr uint8_t kNumber = unicode_tables::kNumber;
constexpr uint8_t kSpace = unicode_tables::kSpace;

constexpr uint8_t lookup_class(uint32_t cp) {
    return kClassStage2[(static_cast<uint32_t>(kClassStage1[cp >> kBlockBits]) << kBlockBits) |
                        (cp & ((1u << kBlockBits) - 1))];
}

// Class of each byte value: the class of the ASCII character, or kMultiByte
// for bytes >= 0x80 (which need decoding).  Built at compile time from the
// generated tables, so there is a single source of truth.
constexpr uint8_t kMultiByte = 4;
struct ByteClasses {
    uint8_t cls[256];
};
constexpr ByteClasses make_byte_classes() {
    ByteClasses t{};
    for (uint32_t b = 0; b < 256; ++b) t.cls[b] = b < 0x80 ? lookup_class(b) : kMultiByte;
    return t;
}
constexpr ByteClasses kByte = make_byte_classes();

// Class of the code point at s[i] (i < n); sets its length in bytes.
inline uint8_t class_at(const unsigned char* s, size_t n, size_t i, uint32_t& len) {
    const uint8_t c = kByte.cls[s[i]];
    if (c != kMultiByte) {
        len = 1;
        return c;
    }
    return lookup_class(decode_multi(s, n, i, len));
}

// End of the maximal run of code points of class `cls` starting at j.
inline size_t run_of(const unsigned char* s, size_t n, size_t j, uint8_t cls) {
#if defined(__SSE2__)
    if (cls == kLetter && j < n && s[j] < 0x80) {
        // ASCII fast path: 16 bytes at a time, a byte is an ASCII letter iff
        // (b | 0x20) is in 'a'..'z' (bytes >= 0x80 are negative as int8 and fail).
        const __m128i lo = _mm_set1_epi8('a' - 1), hi = _mm_set1_epi8('z' + 1), bit = _mm_set1_epi8(0x20);
        while (j + 16 <= n) {
            const __m128i v = _mm_or_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + j)), bit);
            const unsigned m =
                static_cast<unsigned>(_mm_movemask_epi8(_mm_and_si128(_mm_cmpgt_epi8(v, lo), _mm_cmplt_epi8(v, hi))));
            if (m == 0xFFFF) {
                j += 16;
                continue;
            }
            j += static_cast<size_t>(__builtin_ctz(~m));
            if (s[j] < 0x80) return j;  // an ASCII non-letter ends the run
            break;                      // non-ASCII: decode below
        }
    }
#endif
    while (j < n) {
        const uint8_t c = kByte.cls[s[j]];
        if (c == cls) {
            ++j;
            continue;
        }
        if (c != kMultiByte) break;
        uint32_t len;
        if (lookup_class(decode_multi(s, n, j, len)) != cls) break;
        j += len;
    }
    return j;
}

// End of the run of \r and \n bytes starting at j.
inline size_t crlf_run(const unsigned char* s, size_t n, size_t j) {
    while (j < n && (s[j] == '\r' || s[j] == '\n')) ++j;
    return j;
}

// White-space alternatives shared by gpt2 and gpt4, at s[i] of class kSpace:
//   \s++$          the run reaches the end of the input (in `regex`, $ also
//                  matches before a final "\n", but a possessive \s++ run has
//                  already eaten any such "\n", so only the true end counts);
//   \s*[\r\n]      (gpt4 only) up to and including the last \r or \n of the run;
//   \s+(?!\S)      the run minus its last code point, if that leaves >= 1;
//   \s             a single white-space code point.
template <bool kWithNewline>
inline size_t match_space(const unsigned char* s, size_t n, size_t i) {
    size_t j = i, last = i, nl_end = 0;
    while (j < n) {
        uint32_t len;
        if (class_at(s, n, j, len) != kSpace) break;
        if (kWithNewline && (s[j] == '\r' || s[j] == '\n')) nl_end = j + 1;
        last = j;
        j += len;
    }
    if (j == n) return n;
    if (kWithNewline && nl_end != 0) return nl_end;
    if (last > i) return last;
    return j;  // the run is a single code point
}

// gpt2: '(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s
size_t match_gpt2(const unsigned char* s, size_t n, size_t i) {
    const unsigned char b0 = s[i];
    // Fast path for the most common chunk of Latin-script text: " word".
    if (b0 == ' ' && i + 1 < n && kByte.cls[s[i + 1]] == kLetter) return run_of(s, n, i + 2, kLetter);
    if (b0 == '\'' && i + 1 < n) {
        const unsigned char b1 = s[i + 1];
        if (b1 == 's' || b1 == 'd' || b1 == 'm' || b1 == 't') return i + 2;
        if (i + 2 < n) {
            const unsigned char b2 = s[i + 2];
            if ((b1 == 'l' && b2 == 'l') || (b1 == 'v' && b2 == 'e') || (b1 == 'r' && b2 == 'e')) return i + 3;
        }
    }
    uint32_t len0;
    const uint8_t k0 = class_at(s, n, i, len0);
    if (k0 != kSpace) return run_of(s, n, i + len0, k0);  // \p{L}++ | \p{N}++ | [^\s\p{L}\p{N}]++
    if (b0 == ' ' && i + 1 < n) {                         // the optional leading space
        uint32_t len1;
        const uint8_t k1 = class_at(s, n, i + 1, len1);
        if (k1 != kSpace) return run_of(s, n, i + 1 + len1, k1);
    }
    return match_space<false>(s, n, i);
}

// gpt4: '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+|
//       ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s
size_t match_gpt4(const unsigned char* s, size_t n, size_t i) {
    const unsigned char b0 = s[i];
    // Fast path for the most common chunk of Latin-script text: " word".
    if (b0 == ' ' && i + 1 < n && kByte.cls[s[i + 1]] == kLetter) return run_of(s, n, i + 2, kLetter);
    if (b0 == '\'' && i + 1 < n) {
        uint32_t len1;
        const char l1 = contraction_letter(decode(s, n, i + 1, len1));
        if (l1 == 's' || l1 == 'd' || l1 == 'm' || l1 == 't') return i + 1 + len1;
        if ((l1 == 'l' || l1 == 'v' || l1 == 'r') && i + 1 + len1 < n) {
            uint32_t len2;
            const char l2 = contraction_letter(decode(s, n, i + 1 + len1, len2));
            if ((l1 == 'l' && l2 == 'l') || (l1 != 'l' && l2 == 'e')) return i + 1 + len1 + len2;
        }
    }
    uint32_t len0;
    const uint8_t k0 = class_at(s, n, i, len0);
    if (k0 == kLetter) return run_of(s, n, i + len0, kLetter);
    if (k0 == kNumber) {  // \p{N}{1,3}+
        size_t j = i + len0;
        for (int k = 1; k < 3 && j < n; ++k) {
            uint32_t len;
            if (class_at(s, n, j, len) != kNumber) break;
            j += len;
        }
        return j;
    }
    // k0 is kOther or kSpace: [^\r\n\p{L}\p{N}]?+\p{L}++ takes one such code
    // point (not \r or \n) if a letter follows.
    uint8_t k1 = kSpace;
    uint32_t len1 = 0;
    if (i + len0 < n) {
        k1 = class_at(s, n, i + len0, len1);
        if (k1 == kLetter && b0 != '\r' && b0 != '\n') return run_of(s, n, i + len0 + len1, kLetter);
    }
    // ' ?[^\s\p{L}\p{N}]++[\r\n]*+'
    if (k0 == kOther) {
        size_t j = i + len0;
        if (k1 == kOther) j = run_of(s, n, j + len1, kOther);  // c1 is already decoded
        return crlf_run(s, n, j);
    }
    if (b0 == ' ' && k1 == kOther && i + 1 < n) return crlf_run(s, n, run_of(s, n, i + 1 + len1, kOther));
    return match_space<true>(s, n, i);
}

inline size_t match_at(const unsigned char* s, size_t n, size_t i, Pattern pattern) {
    switch (pattern) {
        case Pattern::GPT2:
            return match_gpt2(s, n, i);
        case Pattern::GPT4:
            return match_gpt4(s, n, i);
        case Pattern::O200K:
            return detail::match_o200k(s, n, i);
        case Pattern::SuperWord:
            return detail::match_superword(s, n, i);
        case Pattern::Simple:
            break;
    }
    return match_simple(s, n, i);
}

template <size_t (*Match)(const unsigned char*, size_t, size_t)>
void split_with(std::string_view data, std::vector<size_t>& ends) {
    const auto* s = reinterpret_cast<const unsigned char*>(data.data());
    const size_t n = data.size();
    size_t i = 0;
    while (i < n) {
        i = Match(s, n, i);
        ends.push_back(i);
    }
}

}  // namespace

void split_chunks(std::string_view data, Pattern pattern, std::vector<size_t>& ends) {
    switch (pattern) {
        case Pattern::Simple:
            split_with<match_simple>(data, ends);
            return;
        case Pattern::GPT2:
            split_with<match_gpt2>(data, ends);
            return;
        case Pattern::GPT4:
            split_with<match_gpt4>(data, ends);
            return;
        case Pattern::O200K:
            split_with<detail::match_o200k>(data, ends);
            return;
        case Pattern::SuperWord:
            split_with<detail::match_superword>(data, ends);
            return;
    }
}

size_t chunk_end(std::string_view data, size_t pos, Pattern pattern) {
    if (pos >= data.size()) return data.size();
    return match_at(reinterpret_cast<const unsigned char*>(data.data()), data.size(), pos, pattern);
}

uint8_t char_class(uint32_t cp) {
    if (cp > unicode_tables::kMaxCodePoint) return kOther;
    return lookup_class(cp);
}

const char* unicode_tables_regex_version() { return unicode_tables::kRegexVersion; }

void decode_utf8_surrogateescape(std::string_view data, std::vector<uint32_t>& out) {
    const auto* s = reinterpret_cast<const unsigned char*>(data.data());
    const size_t n = data.size();
    size_t i = 0;
    while (i < n) {
        uint32_t len;
        out.push_back(decode(s, n, i, len));
        i += len;
    }
}

}  // namespace storygpt
