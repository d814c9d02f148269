// Helpers shared by the pre-tokenizer's matchers (pretokenize.cpp, pretokenize_o200k.cpp).
// Internal: not part of the pretokenize.h interface.
#pragma once

#include <cstddef>
#include <cstdint>

#include "pretokenize/unicode_tables.h"

namespace storygpt {
namespace detail {

// Decodes the sequence that starts with the non-ASCII byte s[i] (i < n).
// Well-formed sequences follow Unicode Table 3-7:
//   C2..DF 80..BF | E0 A0..BF 80..BF | E1..EC,EE..EF 80..BF 80..BF |
//   ED 80..9F 80..BF | F0 90..BF 80..BF 80..BF | F1..F3 80..BF x3 |
//   F4 80..8F 80..BF 80..BF
// Anything else (lone continuation byte, C0/C1/F5..FF, overlong, surrogate,
// > U+10FFFF, truncated) escapes the single byte s[i] to U+DC00 + s[i] with
// length 1; decoding resumes at the next byte.  This gives the same code
// points as Python's decode("utf-8", "surrogateescape"): the bytes after the
// lead byte of an ill-formed sequence are continuation bytes, which never
// start a well-formed sequence, so they are escaped too.
inline uint32_t decode_multi(const unsigned char* s, size_t n, size_t i, uint32_t& len) {
    const uint32_t b0 = s[i];
    const size_t avail = n - i;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        if (avail >= 2 && (s[i + 1] & 0xC0) == 0x80) {
            len = 2;
            return ((b0 & 0x1F) << 6) | (s[i + 1] & 0x3Fu);
        }
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        if (avail >= 3) {
            const uint32_t b1 = s[i + 1], b2 = s[i + 2];
            const uint32_t lo = (b0 == 0xE0) ? 0xA0 : 0x80;
            const uint32_t hi = (b0 == 0xED) ? 0x9F : 0xBF;
            if (b1 >= lo && b1 <= hi && (b2 & 0xC0) == 0x80) {
                len = 3;
                return ((b0 & 0x0F) << 12) | ((b1 & 0x3F) << 6) | (b2 & 0x3F);
            }
        }
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        if (avail >= 4) {
            const uint32_t b1 = s[i + 1], b2 = s[i + 2], b3 = s[i + 3];
            const uint32_t lo = (b0 == 0xF0) ? 0x90 : 0x80;
            const uint32_t hi = (b0 == 0xF4) ? 0x8F : 0xBF;
            if (b1 >= lo && b1 <= hi && (b2 & 0xC0) == 0x80 && (b3 & 0xC0) == 0x80) {
                len = 4;
                return ((b0 & 0x07) << 18) | ((b1 & 0x3F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F);
            }
        }
    }
    len = 1;
    return 0xDC00 + b0;
}

inline uint32_t decode(const unsigned char* s, size_t n, size_t i, uint32_t& len) {
    const uint32_t b0 = s[i];
    if (b0 < 0x80) {
        len = 1;
        return b0;
    }
    return decode_multi(s, n, i, len);
}

// The ASCII letter among "sdmtlvre" that `(?i:x)` would match code point cp
// with, or 0.  Case-insensitive matching in `regex` here is simple case
// folding: ASCII letters in both cases plus kContractionFolds (U+017F -> s).
inline char contraction_letter(uint32_t cp) {
    if (cp < 0x80) {
        char c = static_cast<char>(cp | 0x20);  // ASCII lower-case for letters
        if (cp >= 'A' && cp <= 'Z') return c;
        if (cp >= 'a' && cp <= 'z') return static_cast<char>(cp);
        return 0;
    }
    for (int k = 0; k < unicode_tables::kNumContractionFolds; ++k)
        if (unicode_tables::kContractionFolds[k].code_point == cp) return unicode_tables::kContractionFolds[k].letter;
    return 0;
}

// o200k (GPT-4o): end of the chunk that starts at s[i] (i < n); see pretokenize_o200k.cpp.
size_t match_o200k(const unsigned char* s, size_t n, size_t i);
// The "superword" pattern (pretokenize_superword.cpp).
size_t match_superword(const unsigned char* s, size_t n, size_t i);

}  // namespace detail
}  // namespace storygpt
