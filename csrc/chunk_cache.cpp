#include "chunk_cache.h"

namespace storygpt {

bool CacheTable::get(const unsigned char* p, size_t n, uint64_t h, std::vector<uint32_t>& out) const {
    if (map_.size() == 0) return false;
    const uint32_t index = map_.find(h, same(p, n, h));
    if (index == map_.kNotFound) return false;
    const Entry& e = map_[index];
    out.insert(out.end(), ids_.begin() + e.ids_offset, ids_.begin() + e.ids_offset + e.ids_size);
    return true;
}

void CacheTable::put(const unsigned char* p, size_t n, uint64_t h, const uint32_t* ids, size_t n_ids) {
    if (map_.capacity() < slots_) map_ = HashMap<Entry, HashOf>(slots_ / 2);  // first use
    if (map_.size() + 1 > slots_ / 2 || keys_.size() + n > max_key_bytes_) {
        map_.clear();
        keys_.clear();
        ids_.clear();
    }
    bool inserted;
    auto make = [&]() {
        return Entry{h, static_cast<uint32_t>(keys_.size()), static_cast<uint32_t>(n),
                     static_cast<uint32_t>(ids_.size()), static_cast<uint32_t>(n_ids)};
    };
    map_.find_or_insert(h, same(p, n, h), make, inserted);
    if (!inserted) return;
    keys_.append(reinterpret_cast<const char*>(p), n);
    ids_.insert(ids_.end(), ids, ids + n_ids);
}

bool SharedCache::get(const unsigned char* p, size_t n, uint64_t h, std::vector<uint32_t>& out) {
    Shard& shard = shards_[h >> 58];
    std::lock_guard<std::mutex> lock(shard.mutex);
    return shard.table.get(p, n, h, out);
}

void SharedCache::put(const unsigned char* p, size_t n, uint64_t h, const uint32_t* ids, size_t n_ids) {
    Shard& shard = shards_[h >> 58];
    std::lock_guard<std::mutex> lock(shard.mutex);
    shard.table.put(p, n, h, ids, n_ids);
}

}  // namespace storygpt
