// Bounded caches of chunk bytes -> token ids for the encoder.  Pure C++17.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "common.h"

namespace storygpt {

// chunk bytes -> ids, not synchronised: keys and ids live in two arenas;
// when the table is half full or the key arena full, everything is dropped.
class CacheTable {
   public:
    CacheTable(size_t slots, size_t max_key_bytes) : slots_(slots), max_key_bytes_(max_key_bytes) {}
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
    HashMap<Entry, HashOf> map_{0};  // sized on first put
    std::string keys_;
    std::vector<uint32_t> ids_;
};

// Thread-safe bounded cache shared by all users of one Encoder: 64 shards
// chosen by the chunk hash, each a mutex and a CacheTable.
class SharedCache {
   public:
    bool get(const unsigned char* p, size_t n, uint64_t h, std::vector<uint32_t>& out);
    void put(const unsigned char* p, size_t n, uint64_t h, const uint32_t* ids, size_t n_ids);

   private:
    static constexpr size_t kShards = 64;
    struct Shard {
        std::mutex mutex;
        CacheTable table{size_t(1) << 14, size_t(1) << 19};
    };
    Shard shards_[kShards];
};

// A worker's private front cache in bulk calls (no locking on hits).
class LocalCache : public CacheTable {
   public:
    LocalCache() : CacheTable(size_t(1) << 15, size_t(1) << 20) {}
};

}  // namespace storygpt
