// Learning byte-level BPE merges.  Pure C++17 (no Python types).
//
// Semantics: storygpt/tokenizers/bpe_reference.py train(); the tests check
// this code against it merge for merge.  Algorithm: docs/bpe_core.md.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pretokenize/pretokenize.h"
#include "train/chunk_counts.h"

namespace storygpt {

enum class TieBreak { SmallestIds, LargestBytes };

// "smallest_ids" | "largest_bytes"; throws std::invalid_argument naming the bad value.
TieBreak parse_tie_break(const std::string& name);

struct TrainOptions {
    int64_t vocab_size = 256;
    Pattern pattern = Pattern::Simple;
    std::vector<std::string> special_tokens;  // split the text; never counted
    int64_t min_frequency = 1;
    TieBreak tie_break = TieBreak::SmallestIds;
    int num_threads = 1;  // <= 0: all hardware threads

    // Merges to learn: vocab_size - 256 - len(special_tokens).  Throws
    // std::invalid_argument for a vocab_size too small (with the numbers)
    // and min_frequency < 1.  Every entry point calls it first.
    int64_t merges_to_learn() const;
};

using Merge = std::pair<uint32_t, uint32_t>;

// Merges learned from chunk counts: merges[i] = (left, right) makes id
// 256 + i; fewer come back when the text runs out of pairs with count >=
// options.min_frequency.  Same result as bpe_reference.train(...) on any
// texts with these counts.  Reports stage "merge" (merges done of the most
// possible).  Frees the counts as it goes.
std::vector<Merge> learn_merges(std::vector<ChunkCounts>&& counts, const TrainOptions& options,
                                const Progress& progress = Progress());

// Distinct chunks already split into tokens, with their counts: word k is
// symbols[start_k, start_k + lengths[k]) (start_k: the sum of the lengths
// before it).  SuperBPE's stage 2 (superbpe_train.h) starts from these.
struct TokenWords {
    std::vector<uint32_t> symbols;
    std::vector<uint32_t> lengths;
    std::vector<int64_t> counts;
};

// Learns up to n_merges more merges after `merges` (which made ids 256 ..
// 256 + merges.size() - 1, the ids `words` hold), the next one making id
// 256 + merges.size(): bpe_reference.continue_merges.  Returns only the new
// merges; frees `words` as it goes.
std::vector<Merge> continue_merges(TokenWords&& words, const std::vector<Merge>& merges, int64_t n_merges,
                                   const TrainOptions& options, const Progress& progress = Progress());

// Counts the chunks of `texts` (in memory) and `files` (streamed in windows;
// FileError for an unreadable one), each a separate text, and learns merges
// from them: the same result as bpe_reference.train(...) for any num_threads.
std::vector<Merge> train(const std::vector<std::string_view>& texts, const std::vector<std::string>& files,
                         const TrainOptions& options, const Progress& progress = Progress());

// The distinct chunks and their counts exactly as train() counts them; in no
// particular order.  For tests and statistics.
std::vector<std::pair<std::string, int64_t>> chunk_counts(const std::vector<std::string_view>& texts,
                                                          const TrainOptions& options);

}  // namespace storygpt
