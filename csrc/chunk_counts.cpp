#include "chunk_counts.h"

#include <algorithm>
#include <stdexcept>

namespace storygpt {

void ChunkCounts::add(std::string_view chunk, uint64_t hash, int64_t count) {
    if (chunk.size() >= UINT32_MAX) throw std::length_error("training: a chunk of 4 GiB or more");
    bool inserted = false;
    const auto hash32 = static_cast<uint32_t>(hash);  // the map looks at fewer than 32 bits
    auto same = [&](const Entry& e) {
        return e.hash == hash32 && e.size == chunk.size() &&
               std::memcmp(bytes_.data() + e.offset, chunk.data(), chunk.size()) == 0;
    };
    auto make = [&]() { return Entry{bytes_.size(), hash32, static_cast<uint32_t>(chunk.size()), 0}; };
    const uint32_t index = map_.find_or_insert(hash, same, make, inserted);
    if (inserted) bytes_.append(chunk.data(), chunk.size());
    map_[index].count += count;
}

ChunkCounter::ChunkCounter(Pattern pattern, const std::vector<std::string>& special_tokens, int threads)
    : pattern_(pattern),
      specials_(special_tokens),
      threads_(resolve_threads(threads)),
      shards_(static_cast<size_t>(threads_)) {}

// Each thread walks all chunks of the batch and counts those of its shard.
// Hashing every chunk once per thread is cheap next to pre-tokenizing; a
// shard per thread (instead of a map per thread, summed at the end) keeps
// the memory of one map.
void ChunkCounter::add_batch(const ChunkBatch& batch) {
    parallel_for(shards_.size(), threads_, [&](size_t shard, size_t) {
        ChunkCounts& counts = shards_[shard];
        for (const ChunkRun& run : batch.runs)
            batch.for_each_chunk(run, [&](std::string_view chunk) {
                const uint64_t hash = hash_bytes(chunk.data(), chunk.size());
                if (shard_of(hash) == shard) counts.add(chunk, hash, 1);
            });
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
    const uint64_t hash = hash_bytes(chunk.data(), chunk.size());
    shards_[shard_of(hash)].add(chunk, hash, count);
}

}  // namespace storygpt
