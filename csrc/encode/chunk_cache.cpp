#include "encode/chunk_cache.h"

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
    if (map_.size() + 1 > allowed_slots_ / 2 || keys_.size() + n > allowed_key_bytes_) {
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

ShortChunkCache::ShortChunkCache(unsigned max_log2_sets) {
    const unsigned log2_sets = std::min(kFirstLog2Sets, max_log2_sets);
    sets_.reset(new Set[size_t(1) << log2_sets]());
    mask_ = (size_t(1) << log2_sets) - 1;
    allowed_sets_ = mask_ + 1;
    max_sets_ = size_t(1) << max_log2_sets;
}

// Twice the sets; every entry moves to its set in the new table (older ways
// first, so that each set keeps its newest entry in way[0]).
void ShortChunkCache::grow() {
    const size_t old_sets = mask_ + 1;
    std::unique_ptr<Set[]> old(new Set[2 * old_sets]());
    std::swap(old, sets_);
    mask_ = 2 * old_sets - 1;
    for (int w = 1; w >= 0; --w)
        for (size_t i = 0; i < old_sets; ++i)
            if (old[i].way[w].size != 0) insert(old[i].way[w]);
    puts_ = 0;
}

void ShortChunkCache::put(const ShortKey& key, const uint32_t* ids, size_t n_ids) {
    if (n_ids == 0 || n_ids > kMaxBytes) return;
    // the arena holds up to 4 ids per set allowed (at most 1M ids); then drop everything
    if (n_ids > kInlineIds && arena_.size() + n_ids > std::min(kMaxArenaIds, kArenaIdsPerSet * allowed_sets_)) {
        std::fill(sets_.get(), sets_.get() + mask_ + 1, Set());
        arena_.clear();
    }
    if (++puts_ > 2 * (mask_ + 1) && mask_ + 1 < allowed_sets_) grow();
    Entry e{};
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
    insert(e);
}

CachePool::Lease CachePool::lend(size_t input_bytes) {
    std::unique_ptr<WorkerCache> cache;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!idle_.empty()) {
            cache = std::move(idle_.back());
            idle_.pop_back();
        }
    }
    if (!cache) cache.reset(new WorkerCache());
    cache->allow(input_bytes);
    return Lease(*this, std::move(cache));
}

void CachePool::give_back(std::unique_ptr<WorkerCache> cache) {
    std::lock_guard<std::mutex> lock(mutex_);
    try {
        idle_.push_back(std::move(cache));
    } catch (const std::bad_alloc&) {  // the cache is dropped instead
    }
}

}  // namespace storygpt
