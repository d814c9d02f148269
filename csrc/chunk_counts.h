// Counting the distinct pre-tokenization chunks of a training corpus.
// Pure C++17 (no Python types).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chunking.h"
#include "common.h"
#include "special_tokens.h"

namespace storygpt {

// Distinct byte strings with a count each; owns the bytes (one arena).
class ChunkCounts {
   public:
    // 24 bytes: there are millions (3.8 million in 800 MB of varied text).
    struct Entry {
        uint64_t offset;  // the chunk is bytes_[offset, offset + size)
        uint32_t hash;    // the low half of the chunk's hash
        uint32_t size;
        int64_t count;
    };

    // Throws std::length_error for a chunk of 4 GiB or more.
    void add(std::string_view chunk, uint64_t hash, int64_t count);
    void add(std::string_view chunk, int64_t count) { add(chunk, hash_bytes(chunk.data(), chunk.size()), count); }
    size_t size() const { return map_.size(); }
    const std::vector<Entry>& entries() const { return map_.entries(); }
    std::string_view chunk(const Entry& e) const { return std::string_view(bytes_).substr(e.offset, e.size); }
    size_t memory_bytes() const { return map_.memory_bytes() + bytes_.capacity(); }

   private:
    struct HashOf {
        uint64_t operator()(const Entry& e) const { return e.hash; }
    };
    HashMap<Entry, HashOf> map_;
    std::string bytes_;
};

// Progress of a long job: called with (stage, done, total) now and then,
// always from the thread that started the job.  `total` is 0 when unknown.
// An exception it throws ends the job.
struct Progress {
    void (*call)(void* context, const char* stage, uint64_t done, uint64_t total) = nullptr;
    void* context = nullptr;
    void operator()(const char* stage, uint64_t done, uint64_t total) const {
        if (call) call(context, stage, done, total);
    }
};

// Counts the chunks of texts, files and given (chunk, count) pairs, exactly
// as bpe_reference.count_chunks counts each text: split around the special
// tokens (which are dropped), pre-tokenized with `pattern`.  Work is spread
// over `threads` threads; the counts live in one shard per thread, chosen by
// the chunk's hash, so memory does not grow with the thread count and the
// counts do not depend on it.
class ChunkCounter {
   public:
    ChunkCounter(Pattern pattern, const std::vector<std::string>& special_tokens, int threads);

    // Each text separately (chunks never cross texts); the views need to live
    // only during the call.  Reports stage "count": bytes done of the texts'.
    void add_texts(const std::vector<std::string_view>& texts, const Progress& progress = Progress());
    // One file, read in windows (never whole; window_bytes 0: the default
    // for the thread count); throws FileError naming it.  Reports stage
    // "count": bytes read of the file's size.
    void add_file(const std::string& path, const Progress& progress = Progress(), size_t window_bytes = 0);
    // One chunk as is (no splitting), `count` (>= 1, else
    // std::invalid_argument) times.
    void add_chunk(std::string_view chunk, int64_t count);

    int threads() const { return threads_; }
    // The counts, one shard per thread (each chunk in exactly one).
    std::vector<ChunkCounts>& shards() { return shards_; }

   private:
    void add_batch(const ChunkBatch& batch);
    size_t shard_of(uint64_t hash) const { return static_cast<size_t>(((hash >> 32) * shards_.size()) >> 32); }

    Pattern pattern_;
    SpecialSplitter specials_;
    int threads_;
    std::vector<ChunkCounts> shards_;
};

}  // namespace storygpt
