// Pays on: encoding the 15.7 MB English corpus (GPT-2): 2.2x the time without any cache, 5 MB varied text
// 1.3-1.6x; the 17-256-byte CacheTable alone: within noise (docs/performance.md, "What the special paths earn").
// Bounded caches of chunk bytes -> token ids for the encoder.  Pure C++17.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/common.h"

namespace storygpt {

// chunk bytes -> ids, not synchronised: keys and ids live in two arenas;
// when the table is half full or the key arena full, everything is dropped.
// Empty until the first put; then the table and arenas grow with use.
class CacheTable {
   public:
    CacheTable(size_t slots, size_t max_key_bytes) : slots_(slots), max_key_bytes_(max_key_bytes) {}
    // Counts an input that is about to be encoded: the table may hold one
    // slot per 64 bytes and keys of a quarter of the bytes of all the inputs
    // it was lent for (at least 1,024 slots and 64 KiB, at most its maximum).
    void allow(size_t input_bytes) {
        seen_bytes_ += input_bytes;
        allowed_slots_ = std::min(slots_, std::max<size_t>(1024, seen_bytes_ / 64));
        allowed_key_bytes_ = std::min(max_key_bytes_, std::max<size_t>(size_t(1) << 16, seen_bytes_ / 4));
    }
    // Appends the cached ids of chunk p[0, n) (hash h) to `out`; false if absent.
    bool get(const unsigned char* p, size_t n, uint64_t h, std::vector<uint32_t>& out) const;
    void put(const unsigned char* p, size_t n, uint64_t h, const uint32_t* ids, size_t n_ids);

   private:
    struct Entry {
        uint64_t hash;
        uint32_t key_offset, key_size, ids_offset, ids_size;
    };
    struct HashOf {
        uint64_t operator()(const Entry& e) const { return e.hash; }
    };
    auto same(const unsigned char* p, size_t n, uint64_t h) const {
        return [=](const Entry& e) {
            return e.hash == h && e.key_size == n && std::memcmp(keys_.data() + e.key_offset, p, n) == 0;
        };
    }
    size_t slots_, max_key_bytes_;
    size_t allowed_slots_ = 0, allowed_key_bytes_ = 0, seen_bytes_ = 0;  // allow()
    HashMap<Entry, HashOf> map_{0};                                      // grows with its entries
    std::string keys_;
    std::vector<uint32_t> ids_;
};

// The bytes of a chunk of at most 16 bytes as two words, zero padded, with
// its length: equal keys <=> equal chunks.
struct ShortKey {
    uint64_t lo, hi;
    uint32_t size;
};

// The first k (1..8) bytes of v (as memcpy loaded them), the rest zero.
inline uint64_t first_bytes(uint64_t v, size_t k) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return v & (~uint64_t(0) << (64 - 8 * k));
#else
    return v & (~uint64_t(0) >> (64 - 8 * k));
#endif
}

// Makes the key of chunk p[0, n), 1 <= n <= 16; `end` is the end of the
// buffer holding the chunk (16 bytes are read at once when the buffer allows).
inline ShortKey make_short_key(const unsigned char* p, size_t n, const unsigned char* end) {
    uint64_t lo, hi;
    if (static_cast<size_t>(end - p) >= 16) {  // two fixed-size loads, no memcpy call
        std::memcpy(&lo, p, 8);
        std::memcpy(&hi, p + 8, 8);
    } else {
        unsigned char bytes[16] = {0};
        std::memcpy(bytes, p, n);
        std::memcpy(&lo, bytes, 8);
        std::memcpy(&hi, bytes + 8, 8);
    }
    return ShortKey{first_bytes(lo, n < 8 ? n : 8), n > 8 ? first_bytes(hi, n - 8) : 0, static_cast<uint32_t>(n)};
}

// chunk of at most 16 bytes -> ids, not synchronised.  A set-associative
// table: each 64-byte set (one cache line) holds two entries with the key
// bytes and up to 3 ids inline, so a look-up reads one cache line and no
// arena; a new key evicts its set's least recently inserted entry.  Chunks of
// more than 3 ids keep them in an arena, dropped with the whole table when
// full (4 ids per set allowed, at most 1M ids).
//
// The table starts with kFirstLog2Sets sets (64 KiB) and doubles, keeping its
// entries, each time it has taken as many new entries as it holds, up to one
// set per 256 bytes of the inputs it was lent for so far (allow()) and at
// most 2**max_log2_sets sets: memory follows the input (a short text, or the
// first megabytes of a stream, take a small cache; a long text the whole).
//
// Measured (callgrind, one encode of 2 MB of the varied corpus, GPT-2
// vocabulary): in front of the former shared + private CacheTables it cut
// instructions 206 -> 178 M and L1 data misses 2.6 -> 1.7 M; a CacheTable
// look-up reads a slot, an entry and the key bytes in the arena, three
// likely cache misses.  docs/performance.md, "The encoder's instruction counts".
class ShortChunkCache {
   public:
    static constexpr size_t kMaxBytes = 16;

    explicit ShortChunkCache(unsigned max_log2_sets);
    // Counts an input that is about to be encoded: the table may grow to one
    // set per kBytesPerSet bytes of all the inputs it was lent for (never
    // above its maximum), so that its memory (64 bytes a set) stays a quarter
    // of what it has encoded.
    void allow(size_t input_bytes) {
        seen_bytes_ += input_bytes;
        while (allowed_sets_ < max_sets_ && allowed_sets_ * 2 * kBytesPerSet <= seen_bytes_) allowed_sets_ *= 2;
    }
    static constexpr size_t kBytesPerSet = 256;
    static constexpr size_t kArenaIdsPerSet = 4;
    // Appends the cached ids of `key` to `out`; false if absent.
    bool get(const ShortKey& key, std::vector<uint32_t>& out) const {
        const Set& set = sets_[set_index(key)];
        for (const Entry& e : set.way) {
            if (!matches(e, key)) continue;
            const uint32_t* ids = e.count <= kInlineIds ? e.ids : arena_.data() + e.ids[0];
            for (size_t i = 0; i < e.count; ++i) out.push_back(ids[i]);  // cheaper than insert() for 1-3 ids
            return true;
        }
        return false;
    }
    void put(const ShortKey& key, const uint32_t* ids, size_t n_ids);

   private:
    static constexpr unsigned kFirstLog2Sets = 10;
    static constexpr size_t kInlineIds = 3;
    static constexpr size_t kMaxArenaIds = size_t(1) << 20;
    struct Entry {
        uint64_t lo, hi;
        uint32_t ids[kInlineIds];  // the ids, or ids[0] = arena offset when count > kInlineIds
        uint8_t size, count;       // size 0: empty
    };
    struct alignas(64) Set {
        Entry way[2];  // way[0] the newer
    };
    static bool matches(const Entry& e, const ShortKey& key) {
        return e.lo == key.lo && e.hi == key.hi && e.size == key.size;
    }
    size_t set_index(const ShortKey& key) const {
        uint64_t x = key.lo * 0x9E3779B97F4A7C15ULL + key.hi * 0xC2B2AE3D27D4EB4FULL + key.size;
        x ^= x >> 29;
        x *= 0xBF58476D1CE4E5B9ULL;
        return (x ^ (x >> 32)) & mask_;
    }
    void grow();
    void insert(const Entry& e) {
        Set& set = sets_[set_index(ShortKey{e.lo, e.hi, e.size})];
        set.way[1] = set.way[0];
        set.way[0] = e;
    }
    std::unique_ptr<Set[]> sets_;
    size_t mask_;
    size_t max_sets_;
    size_t allowed_sets_;    // grows no further than this (allow())
    size_t seen_bytes_ = 0;  // bytes of the inputs counted by allow()
    size_t puts_ = 0;        // entries put since the last growth
    std::vector<uint32_t> arena_;
};

// Yes/no answers about pairs of ids, not synchronised: a direct-mapped table
// of pair << 1 | answer (a new pair evicts the old one), 128 KiB, allocated
// by the first put.  Holds the SuperBPE encoder's piece-border checks
// (Encoder::encode_staged), which ask about the same few pairs again and again.
class PairAnswers {
   public:
    // 1 or 0 when `pair` is known, -1 when not.
    int get(uint64_t pair) const {
        if (slots_.empty()) return -1;
        const uint64_t slot = slots_[index(pair)];
        return slot >> 1 == pair ? static_cast<int>(slot & 1) : -1;
    }
    void put(uint64_t pair, bool answer) {
        if (slots_.empty()) slots_.assign(size_t(1) << kLog2Slots, kEmpty);
        slots_[index(pair)] = pair << 1 | static_cast<uint64_t>(answer);
    }

   private:
    static constexpr unsigned kLog2Slots = 14;
    static constexpr uint64_t kEmpty = ~uint64_t(0);  // no pair: pairs are below 2**63
    static size_t index(uint64_t pair) { return (pair * 0x9E3779B97F4A7C15ULL) >> (64 - kLog2Slots); }
    std::vector<uint64_t> slots_;
};

// The caches one thread uses for one encoding call: short chunks in a
// ShortChunkCache, 17-256 byte chunks in a CacheTable, pair answers for
// SuperBPE.
struct WorkerCache {
    ShortChunkCache short_chunks{16};                          // up to 65,536 sets, 4 MiB
    CacheTable long_chunks{size_t(1) << 16, size_t(1) << 22};  // up to 32,768 entries, 4 MiB of keys
    PairAnswers valid_pairs;
    void allow(size_t input_bytes) {
        short_chunks.allow(input_bytes);
        long_chunks.allow(input_bytes);
    }
};

// The WorkerCaches of one Encoder, lent to one call (or one thread of a
// bulk call) at a time, so look-ups take no lock and later calls find what
// earlier ones cached.  There are as many as calls ever ran at once.
class CachePool {
   public:
    // Returns a cache to the pool when destroyed.
    class Lease {
       public:
        Lease(CachePool& pool, std::unique_ptr<WorkerCache> cache) : pool_(pool), cache_(std::move(cache)) {}
        Lease(Lease&& other) = default;
        ~Lease() {
            if (cache_) pool_.give_back(std::move(cache_));
        }
        WorkerCache& operator*() const { return *cache_; }

       private:
        CachePool& pool_;
        std::unique_ptr<WorkerCache> cache_;
    };

    // A cache for a call that encodes `input_bytes` bytes (its growth bound:
    // WorkerCache::allow).
    Lease lend(size_t input_bytes);

   private:
    void give_back(std::unique_ptr<WorkerCache> cache);
    std::mutex mutex_;
    std::vector<std::unique_ptr<WorkerCache>> idle_;
};

}  // namespace storygpt
