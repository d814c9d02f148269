// Pre-tokenization with GPT-4o's split pattern ("o200k", tiktoken's o200k_base):
//
//   [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//  |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//  |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// The quantifiers are not possessive, so a backtracking engine may give back
// characters; match_o200k decides each alternative from forward scans with the
// same result (the reasoning is written next to each step and in
// docs/pretokenization.md).  Character classes come from csrc/pretokenize/unicode_tables.h
// (kO200kStage*): upper = Lu|Lt, lower = Ll, both = Lm|Lo, mark = M.  "Upper-ish"
// is the first letter class of the pattern (upper, both, mark), "lower-ish" the
// second (lower, both, mark).  A mark is not \p{L}: it may be the optional
// prefix character and it counts as punctuation in ` ?[^\s\p{L}\p{N}]+`.
#include <initializer_list>

#include "pretokenize/pretokenize_internal.h"

namespace storygpt {
namespace detail {
namespace {

using unicode_tables::kBlockBits;
using unicode_tables::kO200kStage1;
using unicode_tables::kO200kStage2;
constexpr uint8_t kOther = unicode_tables::kOOther;
constexpr uint8_t kUpper = unicode_tables::kOUpper;
constexpr uint8_t kLower = unicode_tables::kOLower;
constexpr uint8_t kBoth = unicode_tables::kOBoth;
constexpr uint8_t kMark = unicode_tables::kOMark;
constexpr uint8_t kNumber = unicode_tables::kONumber;
constexpr uint8_t kSpace = unicode_tables::kOSpace;
constexpr size_t kFail = static_cast<size_t>(-1);

constexpr uint8_t o_class(uint32_t cp) {
    if (cp > unicode_tables::kMaxCodePoint) return kOther;
    return kO200kStage2[(static_cast<uint32_t>(kO200kStage1[cp >> kBlockBits]) << kBlockBits) |
                        (cp & ((1u << kBlockBits) - 1))];
}

struct AsciiClasses {
    uint8_t cls[128];
};
constexpr AsciiClasses make_ascii() {
    AsciiClasses t{};
    for (uint32_t b = 0; b < 128; ++b) t.cls[b] = o_class(b);
    return t;
}
constexpr AsciiClasses kAscii = make_ascii();

inline uint8_t class_at(const unsigned char* s, size_t n, size_t i, uint32_t& len) {
    if (s[i] < 0x80) {
        len = 1;
        return kAscii.cls[s[i]];
    }
    return o_class(decode_multi(s, n, i, len));
}

inline bool upperish(uint8_t c) { return c == kUpper || c == kBoth || c == kMark; }
inline bool lowerish(uint8_t c) { return c == kLower || c == kBoth || c == kMark; }
inline bool punct(uint8_t c) { return c == kOther || c == kMark; }  // [^\s\p{L}\p{N}]

// End of the run of code points satisfying pred, from j.
template <bool (*Pred)(uint8_t)>
inline size_t run(const unsigned char* s, size_t n, size_t j) {
    while (j < n) {
        uint32_t len;
        if (!Pred(class_at(s, n, j, len))) break;
        j += len;
    }
    return j;
}

// Alternative 1 without its prefix, from t: U*L+ (U upper-ish, L lower-ish).
// U* first takes the whole upper-ish run a.  If a lower code point follows, L+
// takes the lower-ish run from there.  Otherwise U* gives back code points
// until L+ can match one: L+ then matches the last "both"/mark code point of a
// (and nothing after it, which is upper-only or ends a).  No such code point:
// the alternative fails (kFail).
inline size_t alt_lower(const unsigned char* s, size_t n, size_t t) {
    size_t j = t, last_both_end = kFail;
    uint8_t c = kOther;
    uint32_t len = 0;
    while (j < n) {
        c = class_at(s, n, j, len);
        if (!upperish(c)) break;
        if (c != kUpper) last_both_end = j + len;
        j += len;
    }
    if (j < n && c == kLower) return run<lowerish>(s, n, j + len);
    return last_both_end;
}

// Alternative 2 without its prefix, from t: U+L*; fails when no upper-ish code point is at t.
inline size_t alt_upper(const unsigned char* s, size_t n, size_t t) {
    const size_t j = run<upperish>(s, n, t);
    if (j == t) return kFail;
    return run<lowerish>(s, n, j);
}

// (?i:'s|'t|'re|'ve|'m|'ll|'d)? at e: the end after an optional contraction.
inline size_t contraction(const unsigned char* s, size_t n, size_t e) {
    if (e + 1 >= n || s[e] != '\'') return e;
    uint32_t len1;
    const char l1 = contraction_letter(decode(s, n, e + 1, len1));
    if (l1 == 's' || l1 == 't' || l1 == 'm' || l1 == 'd') return e + 1 + len1;
    if ((l1 == 'r' || l1 == 'v' || l1 == 'l') && e + 1 + len1 < n) {
        uint32_t len2;
        const char l2 = contraction_letter(decode(s, n, e + 1 + len1, len2));
        if ((l1 == 'l' && l2 == 'l') || (l1 != 'l' && l2 == 'e')) return e + 1 + len1 + len2;
    }
    return e;
}

}  // namespace

size_t match_o200k(const unsigned char* s, size_t n, size_t i) {
    uint32_t len0;
    const uint8_t c0 = class_at(s, n, i, len0);
    // [^\r\n\p{L}\p{N}]? may take s[i]: other, mark or white space but \r, \n.
    const bool prefix = (c0 == kOther || c0 == kMark || c0 == kSpace) && s[i] != '\r' && s[i] != '\n' && i + len0 < n;
    // Alternatives 1 and 2, each first with the prefix taken (the greedy ?), then without it.
    for (auto alt : {alt_lower, alt_upper}) {
        size_t e = prefix ? alt(s, n, i + len0) : kFail;
        if (e == kFail) e = alt(s, n, i);
        if (e != kFail) return contraction(s, n, e);
    }
    if (c0 == kNumber) {  // \p{N}{1,3}
        size_t j = i + len0;
        for (int k = 1; k < 3 && j < n; ++k) {
            uint32_t len;
            if (class_at(s, n, j, len) != kNumber) break;
            j += len;
        }
        return j;
    }
    // ` ?[^\s\p{L}\p{N}]+[\r\n/]*`: the greedy + and * never need to give back.
    size_t j = kFail;
    if (punct(c0)) {
        j = run<punct>(s, n, i + len0);
    } else if (s[i] == ' ' && i + 1 < n) {
        uint32_t len1;
        if (punct(class_at(s, n, i + 1, len1))) j = run<punct>(s, n, i + 1 + len1);
    }
    if (j != kFail) {
        while (j < n && (s[j] == '\r' || s[j] == '\n' || s[j] == '/')) ++j;
        return j;
    }
    // Here s[i] is white space (every other class matched above).
    //   \s*[\r\n]+  \s* gives back until [\r\n]+ matches: up to the last \r or \n of the run;
    //   \s+(?!\S)   the whole run at the end of the input, else the run minus its last code point;
    //   \s+         a run of one code point.
    size_t last = i, nl_end = 0;
    j = i;
    while (j < n) {
        uint32_t len;
        if (class_at(s, n, j, len) != kSpace) break;
        if (s[j] == '\r' || s[j] == '\n') nl_end = j + 1;
        last = j;
        j += len;
    }
    if (nl_end != 0) return nl_end;
    if (j == n) return n;
    if (last > i) return last;
    return j;
}

}  // namespace detail
}  // namespace storygpt
