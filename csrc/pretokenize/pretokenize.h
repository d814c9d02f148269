// Pre-tokenization: split bytes into chunks that BPE merges never cross.
//
// Pure C++17, no Python types.  The three named patterns and their exact
// semantics (including invalid UTF-8) are defined by the Python reference
// storygpt/tokenizers/bpe_reference.py; this code must give identical chunks.
// The "gpt2", "gpt4" and "o200k" patterns are matched by hand-written code (no regex
// engine; o200k in pretokenize_o200k.cpp); the rules are spelled out in docs/pretokenization.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace storygpt {

enum class Pattern { Simple, GPT2, GPT4, O200K, SuperWord };

// "simple" | "gpt2" | "gpt4" | "o200k" | "superword" (SuperBPE stage 2,
// pretokenize_superword.cpp); throws std::invalid_argument naming the bad value.
Pattern parse_pattern(const std::string& name);
const char* pattern_name(Pattern p);

// Appends to `ends` the end offset (exclusive) of every chunk of `data`, in
// order.  Chunk k spans [ends[k-1], ends[k]) (the first starts at 0).  The
// last end appended equals data.size(); nothing is appended for empty data.
// Never throws on any byte sequence (except std::bad_alloc from `ends`).
// Time is linear in data.size().
void split_chunks(std::string_view data, Pattern pattern, std::vector<size_t>& ends);

// End offset (exclusive) of the chunk that starts at byte offset `pos`, for
// pos < data.size(); returns data.size() when pos >= data.size().  Calling it
// repeatedly from 0 gives exactly the chunks of split_chunks (streaming use).
size_t chunk_end(std::string_view data, size_t pos, Pattern pattern);

// ---- Helpers exposed for tests (see tests/core/test_pretokenize.py) ----------

// Character class of a code point as the "gpt2"/"gpt4" patterns see it:
// 0 other, 1 letter \p{L}, 2 number \p{N}, 3 white space \s (tables from
// csrc/pretokenize/unicode_tables.h, generated from the `regex` package).  Code points
// above U+10FFFF give 0.
uint8_t char_class(uint32_t cp);

// Version string of the `regex` package the tables were generated from.
const char* unicode_tables_regex_version();

// Decodes `data` the way Python's bytes.decode("utf-8", "surrogateescape")
// does: every byte that does not start a well-formed UTF-8 sequence (Unicode
// Table 3-7) becomes U+DC00 + byte.  Appends the code points to `out`.
void decode_utf8_surrogateescape(std::string_view data, std::vector<uint32_t>& out);

}  // namespace storygpt
