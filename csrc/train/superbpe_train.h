// SuperBPE training (Liu et al. 2025, "SuperBPE: Space Travel for Language
// Models", arXiv:2503.13423).  Pure C++17 (no Python types).
//
// Semantics: storygpt/tokenizers/superbpe_reference.py train(); the tests
// check this code against it merge for merge.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "train/train.h"

namespace storygpt {

struct SuperBPEMerges {
    std::vector<Merge> merges;  // merges[i] makes id 256 + i; stage 1's first
    int64_t stage1 = 0;         // how many of them stage 1 learned
};

// Throws std::invalid_argument naming T unless 256 + specials <= T < V.
void check_transition(int64_t vocab_size, int64_t transition, size_t n_specials);

// Stage 1: BPE with options.pattern up to a vocabulary of `transition`
// tokens.  Stage 2: the texts and files counted again in "superword" chunks
// (streamed as train() streams them), each distinct chunk split into its
// stage-1 tokens by the encoder, then the merge loop continued up to
// options.vocab_size.  Reports "count" and "merge" for each stage.
SuperBPEMerges superbpe_train(const std::vector<std::string_view>& texts, const std::vector<std::string>& files,
                              const TrainOptions& options, int64_t transition, const Progress& progress = Progress());

}  // namespace storygpt
