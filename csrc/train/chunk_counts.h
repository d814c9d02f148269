// The 64 parts of ChunkCounts pay on: nothing measured; one part as fast, peak 63.3 vs 68.5 MB (20 MB varied text),
// 193 vs 197 MB (200 MB) (docs/performance.md, "What the special paths earn").
// Counting the distinct pre-tokenization chunks of a training corpus.
// Pure C++17 (no Python types).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/common.h"
#include "pretokenize/chunking.h"
#include "pretokenize/special_tokens.h"

namespace storygpt {

// A chunk as ChunkCounts looks it up: its bytes, and (made once, by
// chunk_key) its hash and, for a short chunk, the bytes as two zero-padded
// words.
struct ChunkKey {
    const char* data;
    size_t size;
    uint64_t k0, k1;  // short: bytes 0-7 and 8-15, zero-padded; long: 0 and the hash
    uint64_t hash;
};

// Chunks of at most this many bytes keep their bytes inside their slot.
// 99.9% of the chunks of English text, 95% of the varied benchmark text.
constexpr size_t kShortChunkBytes = 16;

// The key of data[0, size).  Reading [data, data + 16) must be allowed when
// data + 16 <= readable_end (then two fixed loads make the short key); pass
// data + size when nothing past the chunk may be read.
ChunkKey chunk_key(const char* data, size_t size, const char* readable_end);
inline ChunkKey chunk_key(std::string_view chunk) {
    return chunk_key(chunk.data(), chunk.size(), chunk.data() + chunk.size());
}

// Distinct byte strings with a count each; owns the bytes.
//
// Measured (docs/performance.md, "What was tried"): the former map (a slot array of
// indices into 24-byte entries, every chunk's bytes in one arena) cost three
// cache misses per look-up: slot, entry, bytes.  Here a look-up touches one
// 32-byte slot (two per cache line) for a short chunk: open addressing with
// linear probing, keys inline.  The table is cut into kParts parts by hash
// bits, each grown on its own, so growing never holds two copies of the whole
// table, and the trainer frees the parts one by one as it reads them
// (drain()).
class ChunkCounts {
   public:
    ChunkCounts();

    // `count` (>= 1) more of key's chunk.  Throws std::length_error for a
    // chunk of 4 GiB or more.
    void add(const ChunkKey& key, int64_t count) {
        Part& part = parts_[part_of(key.hash)];
        const size_t mask = part.capacity - 1;
        for (size_t i = key.hash & mask;; i = (i + 1) & mask) {
            Slot& s = part.slots[i];
            if (s.count == 0) return insert(part, i, key, count);
            if (s.k1 == key.k1 && s.size == key.size &&
                (key.size <= kShortChunkBytes ? s.k0 == key.k0 : same_long(s, key))) {
                s.count += count;
                return;
            }
        }
    }
    void add(std::string_view chunk, int64_t count) { add(chunk_key(chunk), count); }
    // Asks the CPU to fetch the slot where key's look-up starts (a hint).
    void prefetch(const ChunkKey& key) const {
        const Part& part = parts_[part_of(key.hash)];
        __builtin_prefetch(&part.slots[key.hash & (part.capacity - 1)], 1);
    }

    size_t size() const { return size_; }
    // Calls f(chunk, count) for every distinct chunk, in no particular order.
    template <class F>
    void for_each(F&& f) const {
        for (const Part& part : parts_) for_each_in(part, f);
    }
    // As for_each, freeing each part once it has been visited; empty after.
    template <class F>
    void drain(F&& f) {
        for (Part& part : parts_) {
            for_each_in(part, f);
            part = Part();
            grow(part);
        }
        long_ = std::vector<std::string>();
        size_ = 0;
    }
    size_t memory_bytes() const;

   private:
    struct alignas(32) Slot {
        uint64_t k0, k1;  // as ChunkKey's; for a long chunk k0 is its place in long_
        int64_t count;    // 0: empty
        uint32_t size;
        uint32_t hash;  // the low half of the hash (enough for the parts and their slots)
    };
    struct Part {
        std::unique_ptr<Slot[]> slots;
        size_t capacity = 0, used = 0;
    };
    static constexpr int kPartBits = 6;
    static constexpr size_t kParts = size_t(1) << kPartBits;
    // Slot index bits stay below the part bits.
    static constexpr int kPartShift = 26;

    static size_t part_of(uint64_t hash) { return (hash >> kPartShift) & (kParts - 1); }
    std::string_view bytes_of(const Slot& s) const {
        if (s.size <= kShortChunkBytes) return std::string_view(reinterpret_cast<const char*>(&s.k0), s.size);
        return std::string_view(long_[s.k0 >> 32]).substr(s.k0 & 0xFFFFFFFFu, s.size);
    }
    bool same_long(const Slot& s, const ChunkKey& key) const {
        return std::memcmp(long_[s.k0 >> 32].data() + (s.k0 & 0xFFFFFFFFu), key.data, key.size) == 0;
    }
    template <class F>
    void for_each_in(const Part& part, F& f) const {
        for (size_t i = 0; i < part.capacity; ++i)
            if (part.slots[i].count != 0) f(bytes_of(part.slots[i]), part.slots[i].count);
    }
    void insert(Part& part, size_t i, const ChunkKey& key, int64_t count);
    uint64_t store_long(const char* data, size_t size);
    static void grow(Part& part);

    std::vector<Part> parts_;
    std::vector<std::string> long_;  // long chunks' bytes, in blocks
    size_t size_ = 0;
};

// Many texts laid end to end in one buffer, to count many short texts in one
// call: text i is bytes[i == 0 ? 0 : ends[i - 1], ends[i]).  Chunks never
// cross texts.  Append a text's bytes to `bytes`, then end_text().
struct TextBatch {
    std::string bytes;
    std::vector<size_t> ends;

    void add(std::string_view text) {
        bytes.append(text.data(), text.size());
        end_text();
    }
    void end_text() { ends.push_back(bytes.size()); }
    size_t size() const { return ends.size(); }
    // Empty, keeping the memory for the next batch.
    void clear() {
        bytes.clear();
        ends.clear();
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
    // Each text of the batch separately, as add_texts; faster for many short
    // texts (every chunk key made with two fixed loads).  `texts` is left as
    // it was (its buffer is padded during the call).
    void add_texts(TextBatch& texts);
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
    // readable_end: chunks whose data lies in [readable_begin, readable_end)
    // may be read up to readable_end (else only to the end of their run).
    void add_batch(const ChunkBatch& batch, const char* readable_begin = nullptr, const char* readable_end = nullptr);
    size_t shard_of(uint64_t hash) const { return static_cast<size_t>(((hash >> 32) * shards_.size()) >> 32); }

    Pattern pattern_;
    SpecialSplitter specials_;
    int threads_;
    std::vector<ChunkCounts> shards_;
};

}  // namespace storygpt
