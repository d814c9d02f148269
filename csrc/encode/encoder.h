// Byte-level BPE encoder (general form).  Pure C++17 (no Python types).
//
// Semantics: storygpt/tokenizers/bpe_reference.py Encoder; the tests check
// this code against it (and tiktoken) token for token.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/common.h"
#include "encode/backtrack.h"
#include "encode/chunk_cache.h"
#include "encode/merge_table.h"
#include "pretokenize/pretokenize.h"

namespace storygpt {

// Inside each pre-tokenization chunk the adjacent pair with the lowest rank
// is merged (leftmost on equal ranks), again and again.  Thread-safe: all
// methods are const and may run from several threads at once.
class Encoder {
   public:
    // byte_ids: 256 distinct ids (none: byte b is id b); ranks: one per merge
    // (none: the merge's position).  Throws std::invalid_argument for
    // malformed input, with the reference's messages.
    Encoder(const std::vector<MergeRule>& merges, const std::optional<std::vector<int64_t>>& byte_ids, Pattern pattern,
            const std::optional<std::vector<int64_t>>& ranks);

    // Appends the ids of `data` (ordinary text, no special tokens) to `out`.
    void encode(std::string_view data, std::vector<uint32_t>& out) const;

    // Encodes every text; ids concatenated into `ids`, offsets[k]..offsets[k+1]
    // are text k's (offsets has texts.size() + 1 entries).
    void encode_batch(const std::vector<std::string_view>& texts, int num_threads, std::vector<uint32_t>& ids,
                      std::vector<int64_t>& offsets) const;

    // Receives the ids of texts [first, last), concatenated (the sink may move
    // them away), and lengths[k - first] = the number of ids of text k.
    using BatchSink =
        std::function<void(size_t first, size_t last, std::vector<uint32_t>& ids, const int64_t* lengths)>;
    // Encodes every text on up to num_threads threads (0: all cores), in groups
    // of consecutive texts, and gives each finished group to `sink` at once, in
    // no fixed order, always on the calling thread (between the groups that
    // thread encodes itself), so that the caller consumes results while the
    // other threads keep encoding.  Rethrows the first exception of a worker
    // or of the sink after every thread has stopped (encode_batch.cpp).
    void encode_batch(const std::vector<std::string_view>& texts, int num_threads, const BatchSink& sink) const;

    // Streams a file in windows of `window_bytes` and appends its ids to
    // `out`; equals encode(whole file).  Throws FileError naming the path.
    void encode_file(const std::string& path, int num_threads, size_t window_bytes, std::vector<uint32_t>& out) const;

    // Concatenated bytes of the ids; throws std::invalid_argument
    // ("unknown token id N").
    std::string decode(const int64_t* ids, size_t n) const;
    // Bytes of one token; throws std::invalid_argument for an unknown id.
    std::string_view token_bytes(int64_t id) const;
    bool has_token(int64_t id) const {
        return id >= 0 && static_cast<uint64_t>(id) < token_defined_.size() && token_defined_[id];
    }

    uint32_t vocab_size() const { return static_cast<uint32_t>(token_defined_.size()); }  // max id + 1
    Pattern pattern() const { return pattern_; }
    size_t num_merges() const { return num_merges_; }

    // How a chunk is encoded: the encoder's choice by length, or forced (for
    // tests and benchmarks).  kBacktrack falls back to kMergeLoop when the
    // vocabulary does not allow backtracking.
    enum class ChunkMethod { kAuto, kMergeLoop, kBacktrack };
    // Encodes one chunk without any cache.
    void encode_chunk_uncached(const unsigned char* p, size_t n, std::vector<uint32_t>& out,
                               ChunkMethod method = ChunkMethod::kAuto) const;
    // Why long chunks cannot use the backtracking encoder ("" when they can).
    const std::string& backtrack_refusal() const { return backtrack_refusal_; }

    // SuperBPE (issue 21): declares the first merges, learned on chunks of
    // `stage1_pattern`, a stage of their own, so that each chunk is encoded as
    // its stage-1 pieces (through the cache) and then the later merges
    // (encode_staged); the ids stay those of the merge loop.  Returns "" when
    // taken, else why not (then nothing changes).  Never call it while
    // another thread uses the encoder.
    std::string split_stages(const std::vector<MergeRule>& stage1_merges, Pattern stage1_pattern);
    bool stages_split() const { return stage1_ != nullptr; }

   private:
    // A merge: rank index << 32 | new id, or kNoMerge.
    static constexpr uint64_t kNoMerge = MergeTable::kNoMerge;

    uint64_t lookup(uint32_t left, uint32_t right) const { return merges_.find(pair_key(left, right)); }

    // Encodes data[from, end): `from` must be a chunk start.
    void encode_pieces(std::string_view data, std::vector<uint32_t>& out, WorkerCache& cache, size_t from = 0) const;
    // Chunk p[0, n) inside a buffer that ends at `end`.
    void encode_chunk(const unsigned char* p, size_t n, const unsigned char* end, std::vector<uint32_t>& out,
                      WorkerCache& cache) const;
    void encode_chunk_miss(const unsigned char* p, size_t n, const unsigned char* end, std::vector<uint32_t>& out,
                           WorkerCache& cache) const;
    void encode_short(const unsigned char* p, size_t n, std::vector<uint32_t>& out) const;
    void encode_long(const unsigned char* p, size_t n, std::vector<uint32_t>& out) const;
    // The merge loop over ids instead of bytes: symbol[0, n), n <= 64, in
    // place (returns the new length); or any number, appended to `out`.
    size_t merge_short(uint32_t* symbol, size_t n) const;
    void merge_long(std::vector<uint32_t>& symbol, std::vector<uint32_t>& out) const;
    // The merge loop continued over the ids out[first, end), in place.
    void merge_ids(std::vector<uint32_t>& out, size_t first) const;
    // Whether a stage-1 merge may join the bytes x and y (stage1_joins_).
    bool may_join(unsigned char x, unsigned char y) const {
        const unsigned join = x << 8 | y;
        return (stage1_joins_[join / 64] >> (join % 64)) & 1;
    }
    // A chunk when split_stages was taken.
    void encode_staged(const unsigned char* p, size_t n, const unsigned char* end, std::vector<uint32_t>& out,
                       WorkerCache& cache) const;
    std::string_view token_bytes_unchecked(size_t id) const {
        return std::string_view(token_blob_).substr(token_offset_[id], token_offset_[id + 1] - token_offset_[id]);
    }

    Pattern pattern_;
    size_t num_merges_ = 0;
    std::array<uint32_t, 256> byte_ids_{};
    MergeTable merges_;
    // vocabulary: bytes of id = token_blob_[token_offset_[id], token_offset_[id + 1])
    std::vector<uint64_t> token_offset_;
    std::string token_blob_;
    std::vector<uint8_t> token_defined_;
    std::unique_ptr<CachePool> caches_;
    // The long-chunk encoder, built with the encoder; null when the vocabulary does not allow it.
    std::unique_ptr<const Backtracker> backtracker_;
    std::string backtrack_refusal_;
    // Every merge makes a new token and ranks above the ones listed before
    // it: what split_stages needs.
    bool merges_in_order_ = true;
    // split_stages: the first merges alone, on chunks of stage1_pattern_.
    std::unique_ptr<const Encoder> stage1_;
    // Bit x << 8 | y: some stage-1 merge joins a token ending in byte x to one
    // starting with byte y.  No other border can be merged across.
    std::vector<uint64_t> stage1_joins_;
    Pattern stage1_pattern_ = Pattern::GPT4;
};

}  // namespace storygpt
