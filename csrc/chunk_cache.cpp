#include "chunk_cache.h"

#include <algorithm>
#include <new>

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

ShortChunkCache::ShortChunkCache(unsigned log2_sets)
    : sets_(new Set[size_t(1) << log2_sets]()), mask_((size_t(1) << log2_sets) - 1) {}

void ShortChunkCache::put(const ShortKey& key, const uint32_t* ids, size_t n_ids) {
    if (n_ids == 0 || n_ids > kMaxBytes) return;
    if (n_ids > kInlineIds && arena_.size() + n_ids > kMaxArenaIds) {  // drop everything, arena offsets included
        std::fill(sets_.get(), sets_.get() + mask_ + 1, Set());
        arena_.clear();
    }
    Set& set = sets_[set_index(key)];
    set.way[1] = set.way[0];
    Entry& e = set.way[0];
    e.lo = key.lo;
    e.hi = key.hi;
    e.size = static_cast<uint8_t>(key.size);
    e.count = static_cast<uint8_t>(n_ids);
    if (n_ids <= kInlineIds) {
        std::copy(ids, ids + n_ids, e.ids);
    } else {
        e.ids[0] = static_cast<uint32_t>(arena_.size());
        arena_.insert(arena_.end(), ids, ids + n_ids);
    }
}

CachePool::Lease CachePool::lend() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!idle_.empty()) {
            std::unique_ptr<WorkerCache> cache = std::move(idle_.back());
            idle_.pop_back();
            return Lease(*this, std::move(cache));
        }
    }
    return Lease(*this, std::unique_ptr<WorkerCache>(new WorkerCache()));
}

void CachePool::give_back(std::unique_ptr<WorkerCache> cache) {
    std::lock_guard<std::mutex> lock(mutex_);
    try {
        idle_.push_back(std::move(cache));
    } catch (const std::bad_alloc&) {  // the cache is dropped instead
    }
}

}  // namespace storygpt
