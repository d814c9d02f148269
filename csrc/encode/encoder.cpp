#include "encode/encoder.h"

#include <algorithm>
#include <stdexcept>

#include "pretokenize/chunking.h"

namespace storygpt {

namespace {
constexpr int64_t kMaxTokenId = (int64_t(1) << 26) - 1;
constexpr size_t kShortChunk = 64;       // encode_short up to here, encode_long above
constexpr size_t kBacktrackChunk = 64;   // the backtracking encoder above this (when the vocabulary allows it)
constexpr size_t kMaxCachedChunk = 256;  // longer chunks are not cached

// Ids may leave gaps (unused ids), but the tables sized by the largest id
// stay within the input's size: every id is below 256 + merges + kMaxIdGap.
constexpr int64_t kMaxIdGap = int64_t(1) << 16;

void check_id(int64_t id, const char* what, size_t n_merges) {
    const int64_t limit = std::min<int64_t>(kMaxTokenId, 256 + static_cast<int64_t>(n_merges) + kMaxIdGap - 1);
    if (id < 0 || id > limit)
        throw std::invalid_argument(std::string(what) + " " + std::to_string(id) + " is out of range [0, " +
                                    std::to_string(limit) + "] (256 + " + std::to_string(n_merges) +
                                    " merges + a gap of " + std::to_string(kMaxIdGap) + " unused ids at most)");
}

std::string describe(size_t i, const MergeRule& m) {
    return "merge " + std::to_string(i) + " (" + std::to_string(m.left) + ", " + std::to_string(m.right) + ") -> " +
           std::to_string(m.new_id);
}
}  // namespace

Encoder::Encoder(const std::vector<MergeRule>& merges, const std::optional<std::vector<int64_t>>& byte_ids,
                 Pattern pattern, const std::optional<std::vector<int64_t>>& ranks)
    : pattern_(pattern), num_merges_(merges.size()), merges_(merges.size()), caches_(new CachePool()) {
    if (byte_ids && byte_ids->size() != 256)
        throw std::invalid_argument("byte_ids must hold 256 distinct ids, got " + std::to_string(byte_ids->size()));
    if (ranks && ranks->size() != merges.size())
        throw std::invalid_argument("ranks has " + std::to_string(ranks->size()) + " entries for " +
                                    std::to_string(merges.size()) + " merges");
    std::vector<std::string> vocab;
    auto define = [&](int64_t id, std::string bytes) {
        if (static_cast<size_t>(id) >= vocab.size()) {
            vocab.resize(id + 1);
            token_defined_.resize(id + 1, 0);
        }
        token_defined_[id] = 1;
        vocab[id] = std::move(bytes);
    };
    for (int b = 0; b < 256; ++b) {
        const int64_t id = byte_ids ? (*byte_ids)[b] : b;
        check_id(id, "byte id", merges.size());
        if (has_token(id)) throw std::invalid_argument("byte_ids must hold 256 distinct ids");
        define(id, std::string(1, static_cast<char>(b)));
        byte_ids_[b] = static_cast<uint32_t>(id);
    }
    // Ranks as dense indices, preserving order and ties.
    std::vector<int64_t> distinct_ranks = ranks ? *ranks : std::vector<int64_t>();
    std::sort(distinct_ranks.begin(), distinct_ranks.end());
    distinct_ranks.erase(std::unique(distinct_ranks.begin(), distinct_ranks.end()), distinct_ranks.end());
    for (size_t i = 0; i < merges.size(); ++i) {
        const MergeRule& m = merges[i];
        if (!has_token(m.left) || !has_token(m.right))
            throw std::invalid_argument(describe(i, m) + " uses an id not defined before it");
        check_id(m.new_id, (describe(i, m) + ": new id").c_str(), merges.size());
        std::string bytes = vocab[m.left] + vocab[m.right];
        if (has_token(m.new_id) || (ranks && i > 0 && (*ranks)[i] <= (*ranks)[i - 1])) merges_in_order_ = false;
        if (!has_token(m.new_id))
            define(m.new_id, bytes);
        else if (vocab[m.new_id] != bytes)  // several merges may make one token (rank files), never other bytes
            throw std::invalid_argument(describe(i, m) + " makes an id that already stands for other bytes");
        const uint64_t rank =
            ranks ? std::lower_bound(distinct_ranks.begin(), distinct_ranks.end(), (*ranks)[i]) - distinct_ranks.begin()
                  : i;
        merges_.insert_first(pair_key(static_cast<uint32_t>(m.left), static_cast<uint32_t>(m.right)),
                             (rank << 32) | static_cast<uint64_t>(m.new_id));
    }
    token_offset_.assign(vocab.size() + 1, 0);
    for (size_t id = 0; id < vocab.size(); ++id) token_offset_[id + 1] = token_offset_[id] + vocab[id].size();
    token_blob_.reserve(token_offset_.back());
    for (const auto& v : vocab) token_blob_ += v;
    std::vector<std::string_view> views(vocab.size());
    for (size_t id = 0; id < vocab.size(); ++id) views[id] = token_bytes_unchecked(id);
    backtracker_ = Backtracker::build(merges_, merges, byte_ids_, views, &backtrack_refusal_);
}

void Encoder::encode_chunk_uncached(const unsigned char* p, size_t n, std::vector<uint32_t>& out,
                                    ChunkMethod method) const {
    if (n == 0) return;
    if (method == ChunkMethod::kAuto) {
        if (n <= kShortChunk) {
            encode_short(p, n, out);
            return;
        }
        method = n > kBacktrackChunk ? ChunkMethod::kBacktrack : ChunkMethod::kMergeLoop;
    }
    const Backtracker* bt = method == ChunkMethod::kBacktrack ? backtracker_.get() : nullptr;
    if (bt)
        bt->encode(p, n, out);
    else if (n <= kShortChunk)
        encode_short(p, n, out);
    else
        encode_long(p, n, out);
}

// The usual case inline (a byte, or a short chunk found in the cache); the
// rest in encode_chunk_miss, out of line, so that the loops calling this one
// keep their registers.
inline void Encoder::encode_chunk(const unsigned char* p, size_t n, const unsigned char* end,
                                  std::vector<uint32_t>& out, WorkerCache& cache) const {
    if (n == 1) {
        out.push_back(byte_ids_[p[0]]);
        return;
    }
    if (stage1_) {
        encode_staged(p, n, end, out, cache);
        return;
    }
    if (n <= ShortChunkCache::kMaxBytes && cache.short_chunks.get(make_short_key(p, n, end), out)) return;
    encode_chunk_miss(p, n, end, out, cache);
}

void Encoder::encode_chunk_miss(const unsigned char* p, size_t n, const unsigned char* end, std::vector<uint32_t>& out,
                                WorkerCache& cache) const {
    const size_t before = out.size();
    if (n <= ShortChunkCache::kMaxBytes) {
        encode_short(p, n, out);
        cache.short_chunks.put(make_short_key(p, n, end), out.data() + before, out.size() - before);
        return;
    }
    if (n > kMaxCachedChunk) {
        encode_chunk_uncached(p, n, out);
        return;
    }
    const uint64_t h = hash_bytes(p, n);
    if (cache.long_chunks.get(p, n, h, out)) return;
    encode_chunk_uncached(p, n, out);
    cache.long_chunks.put(p, n, h, out.data() + before, out.size() - before);
}

namespace {
bool valid_pair(uint32_t a, uint32_t b, const Backtracker& pairs, PairAnswers& answers) {
    const uint64_t key = pair_key(a, b);
    const int known = answers.get(key);
    if (known >= 0) return known != 0;
    const bool valid = pairs.valid_pair(a, b);
    answers.put(key, valid);
    return valid;
}
}  // namespace

// Why this gives the merge loop's ids.  split_stages checked that every merge
// makes a new token and ranks above those before it, so the merge loop is
// one pass per merge in rank order, and a stage-2 merge makes a token that
// no stage-1 merge uses: the loop on a chunk is the stage-1 loop and then
// the stage-2 merges over its ids (merge_ids).  The stage-1 loop on bytes
// A + B gives ids(A) + ids(B) when the pair across the border, the last id
// a of A and the first id b of B, stays [a, b] on bytes(a) + bytes(b)
// (Backtracker::valid_pair; no pass can merge across the border before the
// same pass does on those bytes alone).  So the chunk's stage-1 ids are its
// segments' ids, each segment's from the cache, as long as every border
// between segments holds.  A segment is a stage-1 piece, or the last
// segment and the next piece joined when their border does not hold (as in
// indented verse: "  Athens" is "  " "A"..., not " " " Athens").  A border
// between two bytes that no stage-1 merge joins (a letter and a space: most
// borders) holds without asking, since a merge across it would join them.
// When the joined segment does not hold against the one before it, or grows
// beyond what the cache keeps, the stage-1 loop runs over the whole chunk.
// The chunks themselves are not cached: clauses rarely repeat.
void Encoder::encode_staged(const unsigned char* p, size_t n, const unsigned char* end, std::vector<uint32_t>& out,
                            WorkerCache& cache) const {
    const Encoder& stage1 = *stage1_;
    const Backtracker& pairs = *stage1.backtracker_;
    const std::string_view chunk(reinterpret_cast<const char*>(p), n);
    const size_t first = out.size();
    size_t segment_byte = 0, segment_id = first;  // where the last segment starts
    for (size_t start = 0, stop; start < n; start = stop) {
        stop = chunk_end(chunk, start, stage1_pattern_);
        const size_t border = out.size();
        stage1.encode_chunk(p + start, stop - start, end, out, cache);
        if (border == first || !may_join(p[start - 1], p[start]) ||
            valid_pair(out[border - 1], out[border], pairs, cache.valid_pairs)) {
            segment_byte = start;
            segment_id = border;
            continue;
        }
        out.resize(segment_id);
        if (stop - segment_byte <= kMaxCachedChunk) {
            stage1.encode_chunk(p + segment_byte, stop - segment_byte, end, out, cache);
            if (segment_id == first || valid_pair(out[segment_id - 1], out[segment_id], pairs, cache.valid_pairs))
                continue;
        }
        out.resize(first);
        stage1.encode_chunk_uncached(p, n, out);
        break;
    }
    merge_ids(out, first);
}

std::string Encoder::split_stages(const std::vector<MergeRule>& stage1_merges, Pattern stage1_pattern) {
    if (!merges_in_order_) return "some merge makes a token made before, or ranks below a merge listed before it";
    if (stage1_merges.size() > num_merges_) return "more stage-1 merges than merges";
    for (size_t i = 0; i < stage1_merges.size(); ++i) {
        const MergeRule& m = stage1_merges[i];
        const bool same = has_token(m.left) && has_token(m.right) && has_token(m.new_id) &&
                          lookup(static_cast<uint32_t>(m.left), static_cast<uint32_t>(m.right)) ==
                              (uint64_t(i) << 32 | static_cast<uint64_t>(m.new_id));
        if (!same) return "stage-1 merge " + std::to_string(i) + " is not merge " + std::to_string(i);
    }
    std::unique_ptr<Encoder> stage1;
    try {
        stage1.reset(new Encoder(stage1_merges, std::vector<int64_t>(byte_ids_.begin(), byte_ids_.end()),
                                 stage1_pattern, std::nullopt));
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    if (!stage1->backtracker_) return "stage 1 cannot decide pairs: " + stage1->backtrack_refusal_;
    stage1_joins_.assign(65536 / 64, 0);
    for (const MergeRule& m : stage1_merges) {
        const unsigned join = static_cast<unsigned char>(token_bytes_unchecked(m.left).back()) << 8 |
                              static_cast<unsigned char>(token_bytes_unchecked(m.right).front());
        stage1_joins_[join / 64] |= uint64_t(1) << (join % 64);
    }
    stage1_ = std::move(stage1);
    stage1_pattern_ = stage1_pattern;
    caches_.reset(new CachePool());  // the caches now hold stage-1 pieces, not whole chunks
    return "";
}

void Encoder::encode_pieces(std::string_view data, std::vector<uint32_t>& out, WorkerCache& cache, size_t from) const {
    out.reserve(out.size() + (data.size() - from) / 3);
    const auto* base = reinterpret_cast<const unsigned char*>(data.data());
    const unsigned char* end_of_data = base + data.size();
    // Chunk by chunk, without a vector of all chunk ends (8 bytes per chunk).
    for (size_t start = from, end; start < data.size(); start = end) {
        end = chunk_end(data, start, pattern_);
        encode_chunk(base + start, end - start, end_of_data, out, cache);
    }
}

void Encoder::encode(std::string_view data, std::vector<uint32_t>& out) const {
    // The chunks that no cache would keep (single bytes, chunks over
    // kMaxCachedChunk) before the first that one would, without a cache: a
    // text of one long chunk (a run of spaces, a line of letters) borrows
    // none (a fresh cache costs its tables first touched).
    const auto* base = reinterpret_cast<const unsigned char*>(data.data());
    size_t start = 0;
    for (size_t end; start < data.size() && !stage1_; start = end) {
        end = chunk_end(data, start, pattern_);
        const size_t n = end - start;
        if (n == 1)
            out.push_back(byte_ids_[base[start]]);
        else if (n > kMaxCachedChunk)
            encode_chunk_uncached(base + start, n, out);
        else
            break;
    }
    if (start == data.size()) return;
    const CachePool::Lease cache = caches_->lend(data.size());
    encode_pieces(data, out, *cache, start);
}

void Encoder::encode_file(const std::string& path, int num_threads, size_t window_bytes,
                          std::vector<uint32_t>& out) const {
    constexpr size_t kTaskChunks = 4096;
    const int threads = resolve_threads(num_threads);
    InputFile file(path);
    std::vector<std::unique_ptr<CachePool::Lease>> caches(static_cast<size_t>(threads));
    std::vector<std::vector<uint32_t>> parts;
    auto encode_run = [&](const ChunkBatch& batch, const ChunkRun& run, std::vector<uint32_t>& ids, size_t w) {
        if (!caches[w])
            caches[w].reset(new CachePool::Lease(caches_->lend(std::max<size_t>(window_bytes, file.size()))));
        batch.for_each_chunk(run, [&](std::string_view chunk) {
            const auto* p = reinterpret_cast<const unsigned char*>(chunk.data());
            encode_chunk(p, chunk.size(), p + chunk.size(), ids, **caches[w]);
        });
    };
    auto on_batch = [&](const ChunkBatch& batch) {
        const std::vector<ChunkRun> tasks = batch.tasks(kTaskChunks);
        if (threads == 1 || tasks.size() == 1) {
            for (const ChunkRun& task : tasks) encode_run(batch, task, out, 0);
            return;
        }
        parts.assign(tasks.size(), {});
        parallel_for(tasks.size(), threads, [&](size_t t, size_t w) { encode_run(batch, tasks[t], parts[t], w); });
        for (const auto& part : parts) out.insert(out.end(), part.begin(), part.end());
    };
    stream_chunks([&](std::string& buf, size_t n) { return file.read_append(buf, n); }, SpecialSplitter({}), pattern_,
                  threads, std::max<size_t>(window_bytes, 1), on_batch);
}

std::string_view Encoder::token_bytes(int64_t id) const {
    if (!has_token(id)) throw std::invalid_argument("unknown token id " + std::to_string(id));
    return token_bytes_unchecked(static_cast<size_t>(id));
}

std::string Encoder::decode(const int64_t* ids, size_t n) const {
    size_t total = 0;
    for (size_t i = 0; i < n; ++i) total += token_bytes(ids[i]).size();
    std::string out;
    out.reserve(total);
    for (size_t i = 0; i < n; ++i) out += token_bytes(ids[i]);
    return out;
}

}  // namespace storygpt
