#include "train/chunk_counts.h"

#include <algorithm>
#include <functional>
#include <stdexcept>

namespace storygpt {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "short chunk keys assume a little-endian machine");

ChunkKey chunk_key(const char* data, size_t size, const char* readable_end) {
    constexpr uint64_t kMul1 = 0x9E3779B97F4A7C15ULL, kMul2 = 0xC2B2AE3D27D4EB4FULL;
    if (size > kShortChunkBytes) {
        const uint64_t hash = hash_bytes(data, size);
        return ChunkKey{data, size, 0, hash, hash};
    }
    uint64_t k0 = 0, k1 = 0;
    if (readable_end - data >= 16) {
        // Two fixed loads, then the bytes past the chunk masked off.
        std::memcpy(&k0, data, 8);
        std::memcpy(&k1, data + 8, 8);
        const unsigned keep0 = static_cast<unsigned>(std::min<size_t>(size, 8)) * 8;
        const unsigned keep1 = static_cast<unsigned>(size > 8 ? size - 8 : 0) * 8;
        k0 &= keep0 == 64 ? ~uint64_t(0) : (uint64_t(1) << keep0) - 1;
        k1 &= keep1 == 64 ? ~uint64_t(0) : (uint64_t(1) << keep1) - 1;
    } else {
        unsigned char bytes[16] = {};
        std::memcpy(bytes, data, size);
        std::memcpy(&k0, bytes, 8);
        std::memcpy(&k1, bytes + 8, 8);
    }
    return ChunkKey{data, size, k0, k1, mix64(k0 * kMul1 ^ (k1 + size) * kMul2)};
}

ChunkCounts::ChunkCounts() : parts_(kParts) {
    for (Part& part : parts_) grow(part);
}

void ChunkCounts::insert(Part& part, size_t i, const ChunkKey& key, int64_t count) {
    if (key.size >= UINT32_MAX) throw std::length_error("training: a chunk of 4 GiB or more");
    if (10 * (part.used + 1) > 7 * part.capacity) {
        grow(part);
        return add(key, count);
    }
    Slot& s = part.slots[i];
    s.k0 = key.size <= kShortChunkBytes ? key.k0 : store_long(key.data, key.size);
    s.k1 = key.k1;
    s.count = count;
    s.size = static_cast<uint32_t>(key.size);
    s.hash = static_cast<uint32_t>(key.hash);
    ++part.used;
    ++size_;
}

// Long chunks go into blocks of at least 1 MiB (a longer chunk gets its own),
// so the bytes are never copied again; k0 = block << 32 | offset.
uint64_t ChunkCounts::store_long(const char* data, size_t size) {
    constexpr size_t kBlock = size_t(1) << 20;
    if (long_.empty() || long_.back().capacity() - long_.back().size() < size) {
        long_.emplace_back();
        long_.back().reserve(std::max(kBlock, size));
    }
    std::string& block = long_.back();
    const uint64_t place = (static_cast<uint64_t>(long_.size() - 1) << 32) | block.size();
    block.append(data, size);
    return place;
}

void ChunkCounts::grow(Part& part) {
    const size_t capacity = part.capacity == 0 ? 16 : 2 * part.capacity;
    if (capacity > (size_t(1) << kPartShift)) throw std::length_error("training: too many distinct chunks");
    std::unique_ptr<Slot[]> slots(new Slot[capacity]());
    const size_t mask = capacity - 1;
    for (size_t k = 0; k < part.capacity; ++k) {
        const Slot& s = part.slots[k];
        if (s.count == 0) continue;
        size_t i = s.hash & mask;
        while (slots[i].count != 0) i = (i + 1) & mask;
        slots[i] = s;
    }
    part.slots = std::move(slots);
    part.capacity = capacity;
}

size_t ChunkCounts::memory_bytes() const {
    size_t bytes = parts_.capacity() * sizeof(Part);
    for (const Part& part : parts_) bytes += part.capacity * sizeof(Slot);
    for (const std::string& block : long_) bytes += block.capacity();
    return bytes;
}

ChunkCounter::ChunkCounter(Pattern pattern, const std::vector<std::string>& special_tokens, int threads)
    : pattern_(pattern),
      specials_(special_tokens),
      threads_(resolve_threads(threads)),
      shards_(static_cast<size_t>(threads_)) {}

// Each thread walks all chunks of the batch and counts those of its shard (a
// shard per thread, instead of a map per thread summed at the end, keeps the
// memory of one map).  Keys are made kAhead chunks before they are counted
// and their slots prefetched, so the look-ups' cache misses overlap.
void ChunkCounter::add_batch(const ChunkBatch& batch, const char* readable_begin, const char* readable_end) {
    const std::less<const char*> before;
    constexpr size_t kAhead = 8;
    parallel_for(shards_.size(), threads_, [&](size_t shard, size_t) {
        ChunkCounts& counts = shards_[shard];
        ChunkKey ring[kAhead];
        size_t pending = 0;  // keys in the ring; the oldest at ring[next % kAhead]
        size_t next = 0;
        for (const ChunkRun& run : batch.runs) {
            if (run.end == run.begin) continue;
            const bool padded =
                readable_end != nullptr && !before(run.data, readable_begin) && before(run.data, readable_end);
            const char* run_end = padded ? readable_end : run.data + batch.ends[run.end - 1];
            batch.for_each_chunk(run, [&](std::string_view chunk) {
                const ChunkKey key = chunk_key(chunk.data(), chunk.size(), run_end);
                if (shards_.size() > 1 && shard_of(key.hash) != shard) return;
                counts.prefetch(key);
                ChunkKey& place = ring[next % kAhead];
                if (pending == kAhead)
                    counts.add(place, 1);
                else
                    ++pending;
                place = key;
                ++next;
            });
        }
        for (size_t k = next - pending; k < next; ++k) counts.add(ring[k % kAhead], 1);
    });
}
void ChunkCounter::add_texts(const std::vector<std::string_view>& texts, const Progress& progress) {
    uint64_t total = 0, done = 0;
    for (std::string_view t : texts) total += t.size();
    chunk_pieces(ordinary_pieces(texts, specials_), pattern_, threads_, [&](const ChunkBatch& batch) {
        add_batch(batch);
        done += batch.bytes;
        progress("count", std::min(done, total), total);
    });
    progress("count", total, total);
}

void ChunkCounter::add_texts(TextBatch& texts) {
    const size_t size = texts.bytes.size();
    texts.bytes.append(kShortChunkBytes, '\0');  // every short key read with two loads
    const char* data = texts.bytes.data();
    const char* readable_end = data + texts.bytes.size();
    std::vector<std::string_view> pieces;
    pieces.reserve(texts.size());
    size_t start = 0;
    for (size_t end : texts.ends) {
        specials_.split(
            std::string_view(data + start, end - start), [&](std::string_view piece) { pieces.push_back(piece); },
            [](uint32_t) {});
        start = end;
    }
    // A piece longer than a window is streamed through a buffer of its own:
    // add_batch pads only the runs inside `texts`.
    chunk_pieces(pieces, pattern_, threads_, [&](const ChunkBatch& batch) { add_batch(batch, data, readable_end); });
    texts.bytes.resize(size);
}

void ChunkCounter::add_file(const std::string& path, const Progress& progress, size_t window_bytes) {
    InputFile file(path);
    uint64_t done = 0;
    auto read = [&](std::string& buf, size_t n) {
        const size_t got = file.read_append(buf, n);
        done += got;
        progress("count", done, std::max(done, file.size()));
        return got;
    };
    stream_chunks(read, specials_, pattern_, threads_, window_bytes > 0 ? window_bytes : window_bytes_for(threads_),
                  [&](const ChunkBatch& batch) { add_batch(batch); });
}

void ChunkCounter::add_chunk(std::string_view chunk, int64_t count) {
    if (count < 1) throw std::invalid_argument("a chunk count must be >= 1, got " + std::to_string(count));
    const ChunkKey key = chunk_key(chunk);
    shards_[shard_of(key.hash)].add(key, count);
}

}  // namespace storygpt
