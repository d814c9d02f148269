// Pre-tokenization: split bytes into chunks that BPE merges never cross.
//
// Pure C++17, no Python types.  The three named patterns and their exact
// semantics (including invalid UTF-8) are defined by the Python reference
// storygpt/tokenizers/bpe_reference.py; this code must give identical chunks.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace storygpt {

enum class Pattern { Simple, GPT2, GPT4 };

// "simple" | "gpt2" | "gpt4"; throws std::invalid_argument naming the bad value.
Pattern parse_pattern(const std::string& name);
const char* pattern_name(Pattern p);

// Appends to `ends` the end offset (exclusive) of every chunk of `data`, in
// order.  Chunk k spans [ends[k-1], ends[k]) (the first starts at 0).  The
// last end appended equals data.size(); nothing is appended for empty data.
// Never throws on any byte sequence.
void split_chunks(std::string_view data, Pattern pattern, std::vector<size_t>& ends);

}  // namespace storygpt
