// Byte-level BPE core: trainer and encoder.  Pure C++17 (no Python types).
//
// Semantics are defined by storygpt/tokenizers/bpe_reference.py (train(),
// Encoder); the tests check this code against it token for token.  The
// algorithms and data structures are described in docs/bpe_core.md.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pretokenize.h"

namespace storygpt {

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

// A file could not be opened or read.  `error_code()` is the errno value (0
// if unknown); what() names the path.  The binding maps it to Python's OSError
// (FileNotFoundError for ENOENT).
class FileError : public std::runtime_error {
   public:
    FileError(const std::string& path, int error_code, const std::string& what);
    const std::string& path() const { return path_; }
    int error_code() const { return error_code_; }

   private:
    std::string path_;
    int error_code_;
};

// Reads a whole file; throws FileError naming the path.
std::string read_file(const std::string& path);

// Number of worker threads for a request: n <= 0 means all hardware threads.
int resolve_threads(int n);

// split_chunks on `threads` threads: the text is cut into segments of about
// `segment_bytes`, each pre-tokenized with some overlap, and the pieces are
// stitched at a boundary both neighbours agree on (falls back to one thread
// when they never agree).  Appends exactly what split_chunks appends.
void split_chunks_parallel(std::string_view data, Pattern pattern, int threads, size_t segment_bytes,
                           std::vector<size_t>& ends);

// ---------------------------------------------------------------------------
// Special tokens
// ---------------------------------------------------------------------------

// Splits text around special tokens exactly like bpe_reference.split_special:
// scanning left to right, at each position the longest special token that
// starts there wins.  Empty special tokens are ignored.
class SpecialSplitter {
   public:
    explicit SpecialSplitter(const std::vector<std::string>& specials);
    bool empty() const { return specials_.empty(); }
    // Calls on_plain(piece) for every non-empty ordinary piece and
    // on_special(index into the constructor's list order after dedup) for
    // every special token found, in order.
    template <class Plain, class Special>
    void split(std::string_view data, Plain&& on_plain, Special&& on_special) const;

   private:
    std::vector<std::string> specials_;             // distinct, longest first
    std::array<std::vector<uint32_t>, 256> by_first_;  // indices into specials_, longest first
};

template <class Plain, class Special>
void SpecialSplitter::split(std::string_view data, Plain&& on_plain, Special&& on_special) const {
    const size_t n = data.size();
    size_t start = 0, i = 0;
    while (i < n) {
        const auto& cands = by_first_[static_cast<unsigned char>(data[i])];
        const std::string* hit = nullptr;
        uint32_t hit_index = 0;
        for (uint32_t k : cands) {
            const std::string& s = specials_[k];
            if (s.size() <= n - i && data.compare(i, s.size(), s) == 0) {
                hit = &s;
                hit_index = k;
                break;
            }
        }
        if (!hit) {
            ++i;
            continue;
        }
        if (i > start) on_plain(data.substr(start, i - start));
        on_special(hit_index);
        i += hit->size();
        start = i;
    }
    if (start < n) on_plain(data.substr(start));
}

// ---------------------------------------------------------------------------
// Training
// ---------------------------------------------------------------------------

enum class TieBreak { SmallestIds, LargestBytes };

// "smallest_ids" | "largest_bytes"; throws std::invalid_argument naming the bad value.
TieBreak parse_tie_break(const std::string& name);

struct TrainOptions {
    int64_t vocab_size = 256;
    Pattern pattern = Pattern::Simple;
    std::vector<std::string> special_tokens;  // split the text; never counted
    int64_t min_frequency = 1;
    TieBreak tie_break = TieBreak::SmallestIds;
    int num_threads = 1;  // <= 0: all hardware threads
};

using Merge = std::pair<uint32_t, uint32_t>;

// Learns merges from `texts` (in memory) and `files` (read here); each text
// and each file is a separate text (chunks never cross texts).  Same result
// as bpe_reference.train(...) for any num_threads: merges[i] = (left, right)
// makes id 256 + i; fewer merges come back when the text runs out of pairs
// with count >= min_frequency.
// Throws std::invalid_argument (bad vocab_size, with the numbers;
// min_frequency < 1) and FileError (unreadable file).
std::vector<Merge> train(const std::vector<std::string_view>& texts,
                         const std::vector<std::string>& files, const TrainOptions& options);

// The distinct chunks and their counts exactly as train() counts them (texts
// split around opt.special_tokens, pre-tokenized with opt.pattern, on
// opt.num_threads threads); in no particular order.  For tests and statistics.
std::vector<std::pair<std::string, int64_t>> chunk_counts(const std::vector<std::string_view>& texts,
                                                          const TrainOptions& opt);

// ---------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------

struct MergeRule {
    int64_t left, right, new_id;
};

class ChunkCache;  // thread-safe bounded chunk -> ids cache (bpe.cpp)
class LocalCache;  // one worker's private front cache in bulk calls (bpe.cpp)

// General-form BPE encoder, exactly bpe_reference.Encoder: inside each chunk
// the adjacent pair with the lowest rank is merged (leftmost on equal ranks),
// again and again.  Thread-safe: all methods are const and may run from
// several threads at once.
class Encoder {
   public:
    // byte_ids: 256 distinct ids (empty -> identity); ranks: one per merge
    // (empty -> position in `merges`).  Throws std::invalid_argument for
    // malformed input (messages as the reference's).
    Encoder(const std::vector<MergeRule>& merges, const std::vector<int64_t>& byte_ids,
            Pattern pattern, const std::vector<int64_t>& ranks);
    ~Encoder();
    Encoder(const Encoder&) = delete;
    Encoder& operator=(const Encoder&) = delete;

    // Appends the ids of `data` (ordinary text, no special tokens) to `out`.
    void encode(std::string_view data, std::vector<uint32_t>& out) const;

    // Encodes every text; ids concatenated into `ids`, offsets[k]..offsets[k+1]
    // are text k's (offsets has texts.size() + 1 entries).
    void encode_batch(const std::vector<std::string_view>& texts, int num_threads,
                      std::vector<uint32_t>& ids, std::vector<int64_t>& offsets) const;

    // Streams a file in windows of `window_bytes` and appends its ids to
    // `out`; equals encode(whole file).  Throws FileError.
    void encode_file(const std::string& path, int num_threads, size_t window_bytes,
                     std::vector<uint32_t>& out) const;

    // Concatenated bytes of the ids; throws std::invalid_argument
    // ("unknown token id N").
    std::string decode(const int64_t* ids, size_t n) const;

    // Bytes of one token; throws std::invalid_argument for an unknown id.
    std::string_view token_bytes(int64_t id) const;
    bool has_token(int64_t id) const;

    // max id + 1
    uint32_t vocab_size() const { return static_cast<uint32_t>(tok_off_.size() - 1); }
    Pattern pattern() const { return pattern_; }
    size_t num_merges() const { return num_merges_; }

    // Encodes one chunk without the cache (for tests and benchmarks).
    void encode_chunk_uncached(const unsigned char* p, size_t n, std::vector<uint32_t>& out) const;

   private:
    void encode_with(std::string_view data, std::vector<uint32_t>& out, LocalCache* local) const;
    void encode_chunk(const unsigned char* p, size_t n, std::vector<uint32_t>& out, LocalCache* local) const;
    void encode_chunks(std::string_view data, const size_t* ends, size_t n_chunks, size_t first_start,
                       std::vector<uint32_t>& out, LocalCache* local) const;
    // rank index << 32 | new id, or kNoMerge
    uint64_t lookup(uint32_t a, uint32_t b) const;
    void encode_small(const unsigned char* p, size_t n, std::vector<uint32_t>& out) const;
    void encode_large(const unsigned char* p, size_t n, std::vector<uint32_t>& out) const;

    Pattern pattern_;
    size_t num_merges_ = 0;
    std::array<uint32_t, 256> byte_ids_{};
    // merge table: open addressing, key = left << 32 | right
    std::vector<uint64_t> mkeys_;
    std::vector<uint64_t> mvals_;
    uint64_t mmask_ = 0;
    // vocabulary: token id -> bytes (tok_blob_[tok_off_[id], tok_off_[id+1])),
    // tok_defined_[id] says whether id exists
    std::vector<uint64_t> tok_off_;
    std::string tok_blob_;
    std::vector<uint8_t> tok_defined_;
    std::unique_ptr<ChunkCache> cache_;
};

}  // namespace storygpt
