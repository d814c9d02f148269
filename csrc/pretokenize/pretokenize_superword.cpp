// The "superword" pre-tokenization pattern: SuperBPE's second stage (Liu et al.
// 2025, arXiv:2503.13423), where white space stops being a chunk boundary.
// Same chunks as bpe_reference.PATTERNS["superword"]:
//   [^\r\n.!?;:]+[.!?;:]*|[.!?;:]+|[\r\n]+
// A chunk ends where a line break starts or ends and where a run of sentence
// punctuation ends.  Works on bytes (every byte of a multi-byte UTF-8
// character is >= 0x80, never one of these), one forward scan: linear.
#include "pretokenize/pretokenize_internal.h"

namespace storygpt {
namespace detail {

namespace {

inline bool is_break(unsigned char c) { return c == '\r' || c == '\n'; }
inline bool is_stop(unsigned char c) { return c == '.' || c == '!' || c == '?' || c == ';' || c == ':'; }

}  // namespace

size_t match_superword(const unsigned char* s, size_t n, size_t i) {
    if (is_break(s[i])) {
        while (i < n && is_break(s[i])) ++i;
        return i;
    }
    while (i < n && !is_break(s[i]) && !is_stop(s[i])) ++i;
    while (i < n && is_stop(s[i])) ++i;
    return i;
}

}  // namespace detail
}  // namespace storygpt
