#include "train/superbpe_train.h"

#include <optional>
#include <stdexcept>
#include <utility>

#include "encode/encoder.h"
#include "train/chunk_counts.h"

namespace storygpt {

void check_transition(int64_t vocab_size, int64_t transition, size_t n_specials) {
    const int64_t least = 256 + static_cast<int64_t>(n_specials);
    if (transition >= vocab_size)
        throw std::invalid_argument("transition T=" + std::to_string(transition) +
                                    " must be below the vocabulary size V=" + std::to_string(vocab_size));
    if (transition < least)
        throw std::invalid_argument("transition T=" + std::to_string(transition) +
                                    " must hold the 256 byte tokens and " + std::to_string(n_specials) +
                                    " special tokens (at least " + std::to_string(least) + ")");
}

namespace {

// Every distinct stage-2 chunk of two bytes or more as its stage-1 tokens:
// the lowest rank first over the whole chunk (the encoder's rule), which is
// what replaying the stage-1 merges in order on the chunk's bytes gives.  The
// encoder takes the split-stage path when it can (Encoder::split_stages: the
// chunk's stage-1 pieces through the chunk cache, their borders checked):
// the same ids for less CPU than the merge loop over each whole chunk
// (docs/performance.md, "SuperBPE training and encoding").
TokenWords stage1_tokens(std::vector<ChunkCounts>&& shards, const std::vector<Merge>& stage1, Pattern pattern) {
    std::vector<MergeRule> rules;
    rules.reserve(stage1.size());
    for (size_t i = 0; i < stage1.size(); ++i)
        rules.push_back(MergeRule{stage1[i].first, stage1[i].second, static_cast<int64_t>(256 + i)});
    Encoder encoder(rules, std::nullopt, Pattern::SuperWord, std::nullopt);
    const bool split = encoder.split_stages(rules, pattern).empty();
    TokenWords words;
    std::vector<uint32_t> ids;
    for (ChunkCounts& shard : shards)
        shard.drain([&](std::string_view chunk, int64_t count) {  // frees as it goes
            if (chunk.size() < 2) return;                         // no pair
            ids.clear();
            if (split)
                encoder.encode(chunk, ids);  // one superword chunk: Encoder::encode_staged
            else
                encoder.encode_chunk_uncached(reinterpret_cast<const unsigned char*>(chunk.data()), chunk.size(), ids);
            if (ids.size() < 2) return;
            words.symbols.insert(words.symbols.end(), ids.begin(), ids.end());
            words.lengths.push_back(static_cast<uint32_t>(ids.size()));
            words.counts.push_back(count);
        });
    return words;
}

}  // namespace

SuperBPEMerges superbpe_train(const std::vector<std::string_view>& texts, const std::vector<std::string>& files,
                              const TrainOptions& options, int64_t transition, const Progress& progress) {
    const int64_t n_merges = options.merges_to_learn();  // checks V first, before any reading
    check_transition(options.vocab_size, transition, options.special_tokens.size());
    TrainOptions stage1_options = options;
    stage1_options.vocab_size = transition;
    SuperBPEMerges out;
    out.merges = train(texts, files, stage1_options, progress);
    out.stage1 = static_cast<int64_t>(out.merges.size());

    ChunkCounter counter(Pattern::SuperWord, options.special_tokens, options.num_threads);
    if (!texts.empty()) counter.add_texts(texts, progress);
    for (const auto& path : files) counter.add_file(path, progress);
    TokenWords words = stage1_tokens(std::move(counter.shards()), out.merges, options.pattern);
    const std::vector<Merge> more =
        continue_merges(std::move(words), out.merges, n_merges - out.stage1, options, progress);
    out.merges.insert(out.merges.end(), more.begin(), more.end());
    return out;
}

}  // namespace storygpt
