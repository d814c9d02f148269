// Byte-level BPE core: trainer and encoder.  Pure C++17 (no Python types).
// See bpe.h for the contracts and docs/bpe_core.md for the algorithms.
#include "bpe.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
#include <queue>
#include <thread>

namespace storygpt {

// ---------------------------------------------------------------------------
// Small utilities
// ---------------------------------------------------------------------------

FileError::FileError(const std::string& path, int error_code, const std::string& what)
    : std::runtime_error(what), path_(path), error_code_(error_code) {}

std::string read_file(const std::string& path) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) {
        int e = errno;
        throw FileError(path, e, "cannot open file '" + path + "': " + std::strerror(e));
    }
    std::string out;
    char buf[1 << 16];
    for (;;) {
        size_t got = std::fread(buf, 1, sizeof buf, f);
        out.append(buf, got);
        if (got < sizeof buf) break;
    }
    bool failed = std::ferror(f) != 0;
    int e = errno;
    std::fclose(f);
    if (failed) throw FileError(path, e, "cannot read file '" + path + "': " + std::strerror(e));
    return out;
}

int resolve_threads(int n) {
    if (n > 0) return n;
    unsigned hc = std::thread::hardware_concurrency();
    return hc == 0 ? 1 : static_cast<int>(hc);
}

namespace {

constexpr uint64_t kEmptyKey = ~uint64_t(0);

inline uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

// A fast non-cryptographic hash of a byte string (8 bytes per step, then a
// full avalanche of the state).
inline uint64_t hash_bytes(const unsigned char* p, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (static_cast<uint64_t>(n) * 0xC2B2AE3D27D4EB4FULL);
    while (n >= 8) {
        uint64_t v;
        std::memcpy(&v, p, 8);
        h = rotl(h ^ (v * 0x87C37B91114253D5ULL), 31) * 0x4CF5AD432745937FULL;
        p += 8;
        n -= 8;
    }
    if (n) {
        uint64_t v = 0;
        std::memcpy(&v, p, n);
        h = rotl(h ^ (v * 0x87C37B91114253D5ULL), 31) * 0x4CF5AD432745937FULL;
    }
    return mix64(h);
}

inline uint64_t pair_key(uint32_t a, uint32_t b) { return (static_cast<uint64_t>(a) << 32) | b; }

// Runs f(task, worker) for task in [0, n) on up to `threads` threads (the
// calling thread included); rethrows the first exception.
template <class F>
void parallel_for(size_t n, int threads, F&& f) {
    if (n == 0) return;
    size_t t = std::min<size_t>(static_cast<size_t>(std::max(threads, 1)), n);
    if (t <= 1) {
        for (size_t i = 0; i < n; ++i) f(i, size_t(0));
        return;
    }
    std::atomic<size_t> next{0};
    std::exception_ptr error;
    std::mutex error_mu;
    auto worker = [&](size_t w) {
        try {
            for (;;) {
                size_t i = next.fetch_add(1);
                if (i >= n) break;
                f(i, w);
            }
        } catch (...) {
            std::lock_guard<std::mutex> lock(error_mu);
            if (!error) error = std::current_exception();
            next.store(n);
        }
    };
    std::vector<std::thread> pool;
    pool.reserve(t - 1);
    for (size_t w = 1; w < t; ++w) pool.emplace_back(worker, w);
    worker(0);
    for (auto& th : pool) th.join();
    if (error) std::rethrow_exception(error);
}

// Open-addressing map uint64 -> uint32 (linear probing, no deletion).
class U64Map {
   public:
    explicit U64Map(size_t expected = 16) { rehash(expected * 2); }
    size_t size() const { return size_; }
    // value or UINT32_MAX
    uint32_t find(uint64_t key) const {
        size_t i = mix64(key) & mask_;
        for (;;) {
            uint64_t k = keys_[i];
            if (k == key) return vals_[i];
            if (k == kEmptyKey) return UINT32_MAX;
            i = (i + 1) & mask_;
        }
    }
    // Returns the value for key, inserting `value_if_new` if absent.
    uint32_t get_or_insert(uint64_t key, uint32_t value_if_new, bool& inserted) {
        if ((size_ + 1) * 2 > keys_.size()) rehash(keys_.size() * 2);
        size_t i = mix64(key) & mask_;
        for (;;) {
            uint64_t k = keys_[i];
            if (k == key) {
                inserted = false;
                return vals_[i];
            }
            if (k == kEmptyKey) {
                keys_[i] = key;
                vals_[i] = value_if_new;
                ++size_;
                inserted = true;
                return value_if_new;
            }
            i = (i + 1) & mask_;
        }
    }

   private:
    void rehash(size_t want) {
        size_t cap = 16;
        while (cap < want) cap <<= 1;
        std::vector<uint64_t> ok = std::move(keys_);
        std::vector<uint32_t> ov = std::move(vals_);
        keys_.assign(cap, kEmptyKey);
        vals_.assign(cap, 0);
        mask_ = cap - 1;
        for (size_t j = 0; j < ok.size(); ++j) {
            if (ok[j] == kEmptyKey) continue;
            size_t i = mix64(ok[j]) & mask_;
            while (keys_[i] != kEmptyKey) i = (i + 1) & mask_;
            keys_[i] = ok[j];
            vals_[i] = ov[j];
        }
    }
    std::vector<uint64_t> keys_;
    std::vector<uint32_t> vals_;
    size_t mask_ = 0;
    size_t size_ = 0;
};

// Open-addressing multiset of byte strings (views into caller-owned memory)
// with an int64 count each.
class ChunkCounts {
   public:
    struct Entry {
        uint64_t hash;
        const char* data;
        size_t size;
        int64_t count;
    };
    ChunkCounts() { table_.assign(1024, UINT32_MAX); }

    void add(std::string_view s, uint64_t h, int64_t c) {
        if ((entries_.size() + 1) * 2 > table_.size()) grow();
        size_t mask = table_.size() - 1;
        size_t i = h & mask;
        for (;;) {
            uint32_t e = table_[i];
            if (e == UINT32_MAX) {
                table_[i] = static_cast<uint32_t>(entries_.size());
                entries_.push_back(Entry{h, s.data(), s.size(), c});
                return;
            }
            Entry& en = entries_[e];
            if (en.hash == h && en.size == s.size() && std::memcmp(en.data, s.data(), s.size()) == 0) {
                en.count += c;
                return;
            }
            i = (i + 1) & mask;
        }
    }
    void add(std::string_view s) {
        add(s, hash_bytes(reinterpret_cast<const unsigned char*>(s.data()), s.size()), 1);
    }
    const std::vector<Entry>& entries() const { return entries_; }

   private:
    void grow() {
        table_.assign(table_.size() * 2, UINT32_MAX);
        size_t mask = table_.size() - 1;
        for (uint32_t k = 0; k < entries_.size(); ++k) {
            size_t i = entries_[k].hash & mask;
            while (table_[i] != UINT32_MAX) i = (i + 1) & mask;
            table_[i] = k;
        }
    }
    std::vector<uint32_t> table_;
    std::vector<Entry> entries_;
};

}  // namespace

// ---------------------------------------------------------------------------
// Special tokens
// ---------------------------------------------------------------------------

SpecialSplitter::SpecialSplitter(const std::vector<std::string>& specials) {
    for (const auto& s : specials)
        if (!s.empty() && std::find(specials_.begin(), specials_.end(), s) == specials_.end())
            specials_.push_back(s);
    std::stable_sort(specials_.begin(), specials_.end(),
                     [](const std::string& x, const std::string& y) { return x.size() > y.size(); });
    for (uint32_t k = 0; k < specials_.size(); ++k)
        by_first_[static_cast<unsigned char>(specials_[k][0])].push_back(k);
}

// ---------------------------------------------------------------------------
// Training
// ---------------------------------------------------------------------------

TieBreak parse_tie_break(const std::string& name) {
    if (name == "smallest_ids") return TieBreak::SmallestIds;
    if (name == "largest_bytes") return TieBreak::LargestBytes;
    throw std::invalid_argument("unknown tie_break '" + name +
                                "'; expected one of 'smallest_ids', 'largest_bytes'");
}


void split_chunks_parallel(std::string_view data, Pattern pattern, int threads, size_t segment_bytes,
                           std::vector<size_t>& ends) {
    const size_t n = data.size();
    segment_bytes = std::max<size_t>(segment_bytes, 16);
    if (threads <= 1 || n < 2 * segment_bytes) {
        split_chunks(data, pattern, ends);
        return;
    }
    constexpr size_t kMargin = 64;  // as in Encoder::encode_file
    const size_t overlap = std::min<size_t>(size_t(1) << 16, segment_bytes / 4);
    const size_t nseg = std::min<size_t>(n / segment_bytes, static_cast<size_t>(threads) * 4);
    std::vector<size_t> seg_start(nseg + 1), view_end(nseg);
    for (size_t k = 0; k <= nseg; ++k) seg_start[k] = n * k / nseg;
    std::vector<std::vector<size_t>> part(nseg);
    parallel_for(nseg, threads, [&](size_t k, size_t) {
        const size_t s = seg_start[k];
        const size_t ve = k + 1 == nseg ? n : std::min(n, seg_start[k + 1] + overlap);
        view_end[k] = ve;
        split_chunks(data.substr(s, ve - s), pattern, part[k]);
        for (auto& e : part[k]) e += s;
    });
    // Stitch: segment k's chunks are exact from a true boundary `start` up to
    // kMargin before its view's end; the first of them at or after the next
    // segment's origin that is also a boundary of the next segment is a true
    // boundary from which the next segment's chunks are exact.
    const size_t first = ends.size();
    size_t start = 0;
    for (size_t k = 0; k < nseg; ++k) {
        const std::vector<size_t>& a = part[k];
        size_t i = std::upper_bound(a.begin(), a.end(), start) - a.begin();
        if (k + 1 == nseg) {
            ends.insert(ends.end(), a.begin() + i, a.end());
            break;
        }
        const size_t next = seg_start[k + 1];
        const size_t reliable = view_end[k] - kMargin;
        const std::vector<size_t>& b = part[k + 1];
        size_t sync = SIZE_MAX;
        size_t j = 0;  // b's boundaries: next, then b[0], b[1], ...
        for (size_t ia = std::lower_bound(a.begin(), a.end(), next) - a.begin();
             ia < a.size() && a[ia] <= reliable; ++ia) {
            if (a[ia] == next) {
                sync = next;
                break;
            }
            while (j < b.size() && b[j] < a[ia]) ++j;
            if (j < b.size() && b[j] == a[ia]) {
                sync = a[ia];
                break;
            }
        }
        if (sync == SIZE_MAX) {  // no common boundary in the overlap: do it serially
            ends.resize(first);
            split_chunks(data, pattern, ends);
            return;
        }
        while (i < a.size() && a[i] <= sync) ends.push_back(a[i++]);
        start = sync;
    }
}

namespace {

struct HeapEntry {
    int64_t count;
    uint32_t left, right;
};

// Counts the distinct chunks of all pieces (ordinary text between special
// tokens) on `threads` threads; the counts do not depend on the thread count.
// Memory beyond the text stays bounded: small pieces are split and counted
// one per task; a big piece is streamed in windows (as Encoder::encode_file
// does), each pre-tokenized by split_chunks_parallel and counted in parallel.
std::vector<ChunkCounts::Entry> count_chunks(const std::vector<std::string_view>& pieces,
                                             Pattern pattern, int threads) {
    constexpr size_t kSegment = size_t(1) << 20;  // parallel pre-tokenization unit
    constexpr size_t kBig = size_t(4) << 20;      // pieces above this are streamed
    constexpr size_t kWindow = size_t(32) << 20;  // streaming window
    constexpr size_t kMargin = 64;                // see Encoder::encode_file
    constexpr size_t kTask = size_t(1) << 15;     // chunks per counting task
    const size_t workers = static_cast<size_t>(std::max(threads, 1));
    std::vector<ChunkCounts> maps(workers);

    std::vector<size_t> small;
    std::vector<size_t> ends;
    for (size_t p = 0; p < pieces.size(); ++p) {
        std::string_view piece = pieces[p];
        if (piece.size() <= kBig) {
            small.push_back(p);
            continue;
        }
        size_t pos = 0, window = kWindow;
        while (pos < piece.size()) {
            const size_t view_end = std::min(piece.size(), pos + window);
            std::string_view view = piece.substr(pos, view_end - pos);
            ends.clear();
            split_chunks_parallel(view, pattern, threads, kSegment, ends);
            size_t cut = ends.size();
            if (view_end < piece.size()) {
                const size_t limit = view.size() > kMargin ? view.size() - kMargin : 0;
                while (cut > 0 && ends[cut - 1] > limit) --cut;
            }
            if (cut == 0) {  // one chunk longer than the window: widen it
                window *= 2;
                continue;
            }
            const size_t n_tasks = (cut + kTask - 1) / kTask;
            parallel_for(n_tasks, threads, [&](size_t t, size_t w) {
                const size_t lo = t * kTask, hi = std::min(cut, lo + kTask);
                size_t start = lo == 0 ? 0 : ends[lo - 1];
                for (size_t k = lo; k < hi; ++k) {
                    maps[w].add(view.substr(start, ends[k] - start));
                    start = ends[k];
                }
            });
            pos += ends[cut - 1];
            window = kWindow;
        }
    }
    parallel_for(small.size(), threads, [&](size_t i, size_t w) {
        std::string_view piece = pieces[small[i]];
        std::vector<size_t> e;
        split_chunks(piece, pattern, e);
        size_t start = 0;
        for (size_t k : e) {
            maps[w].add(piece.substr(start, k - start));
            start = k;
        }
    });
    for (size_t w = 1; w < maps.size(); ++w)
        for (const auto& en : maps[w].entries())
            maps[0].add(std::string_view(en.data, en.size), en.hash, en.count);
    return maps[0].entries();
}

}  // namespace

namespace {
std::vector<std::string_view> split_pieces(const std::vector<std::string_view>& texts,
                                           const std::vector<std::string>& special_tokens) {
    std::vector<std::string_view> pieces;
    SpecialSplitter splitter(special_tokens);
    for (std::string_view t : texts) {
        if (splitter.empty()) {
            if (!t.empty()) pieces.push_back(t);
        } else {
            splitter.split(t, [&](std::string_view p) { pieces.push_back(p); }, [](uint32_t) {});
        }
    }
    return pieces;
}
}  // namespace

std::vector<std::pair<std::string, int64_t>> chunk_counts(const std::vector<std::string_view>& texts,
                                                          const TrainOptions& opt) {
    std::vector<std::string_view> pieces = split_pieces(texts, opt.special_tokens);
    std::vector<std::pair<std::string, int64_t>> out;
    for (const auto& e : count_chunks(pieces, opt.pattern, resolve_threads(opt.num_threads)))
        out.emplace_back(std::string(e.data, e.size), e.count);
    return out;
}

std::vector<Merge> train(const std::vector<std::string_view>& texts,
                         const std::vector<std::string>& files, const TrainOptions& opt) {
    if (opt.min_frequency < 1)
        throw std::invalid_argument("min_frequency must be >= 1, got " +
                                    std::to_string(opt.min_frequency));
    const int64_t n_specials = static_cast<int64_t>(opt.special_tokens.size());
    const int64_t n_merges = opt.vocab_size - 256 - n_specials;
    if (n_merges < 0)
        throw std::invalid_argument(
            "vocab_size=" + std::to_string(opt.vocab_size) +
            " is too small: it must hold the 256 byte tokens and " + std::to_string(n_specials) +
            " special tokens (at least " + std::to_string(256 + n_specials) + ")");
    const int threads = resolve_threads(opt.num_threads);

    // Texts: in-memory ones and file contents; split around special tokens.
    std::vector<std::string> contents(files.size());
    parallel_for(files.size(), threads, [&](size_t i, size_t) { contents[i] = read_file(files[i]); });
    std::vector<std::string_view> all(texts);
    for (const auto& c : contents) all.emplace_back(c);
    std::vector<std::string_view> pieces = split_pieces(all, opt.special_tokens);

    std::vector<Merge> merges;
    if (n_merges == 0) return merges;

    // Distinct chunks -> words (symbol sequences stored back to back).
    std::vector<uint32_t> syms;
    std::vector<size_t> wstart;
    std::vector<uint32_t> wlen;
    std::vector<int64_t> wcount;
    {
        std::vector<ChunkCounts::Entry> chunks = count_chunks(pieces, opt.pattern, threads);
        size_t total = 0;
        for (const auto& c : chunks)
            if (c.size >= 2) total += c.size;
        syms.reserve(total);
        for (const auto& c : chunks) {
            if (c.size < 2) continue;  // no pair: never changes any count
            wstart.push_back(syms.size());
            wlen.push_back(static_cast<uint32_t>(c.size));
            wcount.push_back(c.count);
            for (size_t i = 0; i < c.size; ++i) syms.push_back(static_cast<unsigned char>(c.data[i]));
        }
    }
    contents.clear();  // chunk views are no longer needed
    const size_t n_words = wcount.size();

    // Pair statistics: pair key -> slot; per slot the live count (64-bit) and
    // the words that may contain it (a word id appears once per addition; the
    // list may hold words that no longer contain the pair).
    U64Map slot_of(1 << 16);
    std::vector<uint64_t> slot_key;
    std::vector<int64_t> slot_count;
    std::vector<std::vector<uint32_t>> slot_words;
    std::vector<uint32_t> slot_stamp;
    auto get_slot = [&](uint64_t key) -> uint32_t {
        bool inserted;
        uint32_t s = slot_of.get_or_insert(key, static_cast<uint32_t>(slot_key.size()), inserted);
        if (inserted) {
            slot_key.push_back(key);
            slot_count.push_back(0);
            slot_words.emplace_back();
            slot_stamp.push_back(0);
        }
        return s;
    };
    for (uint32_t w = 0; w < n_words; ++w) {
        const uint32_t* s = &syms[wstart[w]];
        for (uint32_t i = 0; i + 1 < wlen[w]; ++i) {
            uint32_t slot = get_slot(pair_key(s[i], s[i + 1]));
            slot_count[slot] += wcount[w];
            auto& lst = slot_words[slot];
            if (lst.empty() || lst.back() != w) lst.push_back(w);
        }
    }

    // Priority queue of (count, pair) with lazy deletion.
    std::vector<std::string> tok_bytes(256);
    for (int b = 0; b < 256; ++b) tok_bytes[b] = std::string(1, static_cast<char>(b));
    const bool by_bytes = opt.tie_break == TieBreak::LargestBytes;
    // less(x, y): x has lower priority than y
    auto less = [&](const HeapEntry& x, const HeapEntry& y) {
        if (x.count != y.count) return x.count < y.count;
        if (by_bytes) {
            int c = tok_bytes[x.left].compare(tok_bytes[y.left]);
            if (c != 0) return c < 0;
            c = tok_bytes[x.right].compare(tok_bytes[y.right]);
            if (c != 0) return c < 0;
        }
        return pair_key(x.left, x.right) > pair_key(y.left, y.right);
    };
    std::vector<HeapEntry> heap;
    heap.reserve(slot_key.size());
    for (size_t s = 0; s < slot_key.size(); ++s)
        if (slot_count[s] > 0)
            heap.push_back(HeapEntry{slot_count[s], static_cast<uint32_t>(slot_key[s] >> 32),
                                     static_cast<uint32_t>(slot_key[s])});
    std::make_heap(heap.begin(), heap.end(), less);
    auto heap_push = [&](const HeapEntry& e) {
        heap.push_back(e);
        std::push_heap(heap.begin(), heap.end(), less);
    };

    std::vector<uint32_t> word_stamp(n_words, 0);
    std::vector<uint32_t> old;
    std::vector<uint32_t> touched;
    for (int64_t k = 0; k < n_merges; ++k) {
        // Pop until an entry matches its pair's live count.
        bool found = false;
        HeapEntry best{};
        while (!heap.empty()) {
            std::pop_heap(heap.begin(), heap.end(), less);
            HeapEntry e = heap.back();
            heap.pop_back();
            int64_t live = slot_count[slot_of.find(pair_key(e.left, e.right))];
            if (live == e.count) {
                found = true;
                best = e;
                break;
            }
            if (live > 0) heap_push(HeapEntry{live, e.left, e.right});
        }
        if (!found || best.count < opt.min_frequency) break;

        const uint32_t a = best.left, b = best.right;
        const uint32_t z = static_cast<uint32_t>(256 + k);
        merges.emplace_back(a, b);
        tok_bytes.push_back(tok_bytes[a] + tok_bytes[b]);
        const uint32_t stamp = static_cast<uint32_t>(k + 1);

        uint32_t pslot = slot_of.find(pair_key(a, b));
        std::vector<uint32_t> where = std::move(slot_words[pslot]);
        slot_words[pslot] = std::vector<uint32_t>();
        touched.clear();
        for (uint32_t w : where) {
            if (word_stamp[w] == stamp) continue;
            word_stamp[w] = stamp;
            uint32_t* s = &syms[wstart[w]];
            const uint32_t n = wlen[w];
            bool has = false;
            for (uint32_t i = 0; i + 1 < n; ++i)
                if (s[i] == a && s[i + 1] == b) {
                    has = true;
                    break;
                }
            if (!has) continue;
            old.assign(s, s + n);
            uint32_t j = 0;
            for (uint32_t i = 0; i < n;) {
                if (i + 1 < n && old[i] == a && old[i + 1] == b) {
                    s[j++] = z;
                    i += 2;
                } else {
                    s[j++] = old[i++];
                }
            }
            wlen[w] = j;
            const int64_t c = wcount[w];
            for (uint32_t i = 0; i + 1 < n; ++i) slot_count[slot_of.find(pair_key(old[i], old[i + 1]))] -= c;
            for (uint32_t i = 0; i + 1 < j; ++i) {
                uint64_t key = pair_key(s[i], s[i + 1]);
                if (s[i] == z || s[i + 1] == z) {
                    uint32_t slot = get_slot(key);
                    slot_count[slot] += c;
                    auto& lst = slot_words[slot];
                    if (lst.empty() || lst.back() != w) lst.push_back(w);
                    if (slot_stamp[slot] != stamp) {
                        slot_stamp[slot] = stamp;
                        touched.push_back(slot);
                    }
                } else {
                    slot_count[slot_of.find(key)] += c;
                }
            }
        }
        for (uint32_t slot : touched)
            if (slot_count[slot] > 0)
                heap_push(HeapEntry{slot_count[slot], static_cast<uint32_t>(slot_key[slot] >> 32),
                                    static_cast<uint32_t>(slot_key[slot])});
    }
    return merges;
}

// ---------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------

namespace {
constexpr uint64_t kNoMerge = ~uint64_t(0);
constexpr int64_t kMaxTokenId = (int64_t(1) << 26) - 1;
constexpr size_t kSmallChunk = 64;     // quadratic scan below, heap above
constexpr size_t kMaxCachedChunk = 256;  // longer chunks are not cached
constexpr size_t kFileMargin = 64;    // see encode_file
}  // namespace

// Bounded map chunk bytes -> ids (not synchronised): an open-addressing table
// over two arenas (key bytes, ids); when full it is cleared.
class CacheTable {
   public:
    CacheTable(size_t slots, size_t max_key_bytes) : slots_n_(slots), max_key_bytes_(max_key_bytes) {}

    bool get(const unsigned char* p, size_t n, uint64_t h, std::vector<uint32_t>& out) const {
        if (slots_.empty()) return false;
        size_t i = h & (slots_n_ - 1);
        for (;;) {
            uint32_t e = slots_[i];
            if (e == UINT32_MAX) return false;
            const Entry& en = entries_[e];
            if (en.hash == h && en.key_len == n && std::memcmp(keys_.data() + en.key_off, p, n) == 0) {
                out.insert(out.end(), ids_.begin() + en.ids_off, ids_.begin() + en.ids_off + en.ids_len);
                return true;
            }
            i = (i + 1) & (slots_n_ - 1);
        }
    }

    void put(const unsigned char* p, size_t n, uint64_t h, const uint32_t* ids, size_t m) {
        if (slots_.empty()) slots_.assign(slots_n_, UINT32_MAX);
        if (entries_.size() >= slots_n_ / 2 || keys_.size() + n > max_key_bytes_) {
            std::fill(slots_.begin(), slots_.end(), UINT32_MAX);
            entries_.clear();
            keys_.clear();
            ids_.clear();
        }
        size_t i = h & (slots_n_ - 1);
        for (;;) {
            uint32_t e = slots_[i];
            if (e == UINT32_MAX) break;
            const Entry& en = entries_[e];
            if (en.hash == h && en.key_len == n && std::memcmp(keys_.data() + en.key_off, p, n) == 0)
                return;  // already there
            i = (i + 1) & (slots_n_ - 1);
        }
        slots_[i] = static_cast<uint32_t>(entries_.size());
        entries_.push_back(Entry{h, static_cast<uint32_t>(keys_.size()), static_cast<uint32_t>(n),
                                 static_cast<uint32_t>(ids_.size()), static_cast<uint32_t>(m)});
        keys_.append(reinterpret_cast<const char*>(p), n);
        ids_.insert(ids_.end(), ids, ids + m);
    }

   private:
    struct Entry {
        uint64_t hash;
        uint32_t key_off, key_len, ids_off, ids_len;
    };
    size_t slots_n_;  // power of two
    size_t max_key_bytes_;
    std::vector<uint32_t> slots_;
    std::vector<Entry> entries_;
    std::string keys_;
    std::vector<uint32_t> ids_;
};

// Thread-safe bounded cache shared by all users of one Encoder: 64 shards
// chosen by the chunk hash, each a mutex and a CacheTable.
class ChunkCache {
   public:
    static constexpr size_t kShards = 64;
    bool get(const unsigned char* p, size_t n, uint64_t h, std::vector<uint32_t>& out) {
        Shard& sh = shards_[h >> 58];
        std::lock_guard<std::mutex> lock(sh.mu);
        return sh.table.get(p, n, h, out);
    }
    void put(const unsigned char* p, size_t n, uint64_t h, const uint32_t* ids, size_t m) {
        Shard& sh = shards_[h >> 58];
        std::lock_guard<std::mutex> lock(sh.mu);
        sh.table.put(p, n, h, ids, m);
    }

   private:
    struct Shard {
        std::mutex mu;
        CacheTable table{size_t(1) << 14, size_t(1) << 19};
    };
    Shard shards_[kShards];
};

// A worker's private front cache for bulk calls (no locking on hits).
class LocalCache : public CacheTable {
   public:
    LocalCache() : CacheTable(size_t(1) << 15, size_t(1) << 20) {}
};

Encoder::~Encoder() = default;

Encoder::Encoder(const std::vector<MergeRule>& merges, const std::vector<int64_t>& byte_ids,
                 Pattern pattern, const std::vector<int64_t>& ranks)
    : pattern_(pattern), num_merges_(merges.size()), cache_(new ChunkCache()) {
    auto check_id = [](int64_t id, const char* what) {
        if (id < 0 || id > kMaxTokenId)
            throw std::invalid_argument(std::string(what) + " " + std::to_string(id) +
                                        " is out of range [0, " + std::to_string(kMaxTokenId) + "]");
    };
    if (!byte_ids.empty() && byte_ids.size() != 256)
        throw std::invalid_argument("byte_ids must hold 256 distinct ids");
    if (!ranks.empty() && ranks.size() != merges.size())
        throw std::invalid_argument("ranks has " + std::to_string(ranks.size()) + " entries for " +
                                    std::to_string(merges.size()) + " merges");
    std::vector<std::string> vocab;
    std::vector<uint8_t> defined;
    auto ensure = [&](int64_t id) {
        if (static_cast<size_t>(id) >= vocab.size()) {
            vocab.resize(id + 1);
            defined.resize(id + 1, 0);
        }
    };
    for (int b = 0; b < 256; ++b) {
        int64_t id = byte_ids.empty() ? b : byte_ids[b];
        check_id(id, "byte id");
        ensure(id);
        if (defined[id]) throw std::invalid_argument("byte_ids must hold 256 distinct ids");
        defined[id] = 1;
        vocab[id] = std::string(1, static_cast<char>(b));
        byte_ids_[b] = static_cast<uint32_t>(id);
    }
    // First occurrence of a pair wins (as the reference's dict.setdefault).
    struct Rule {
        uint64_t key;
        int64_t rank;
        uint32_t new_id;
    };
    std::vector<Rule> rules;
    U64Map seen(merges.size() + 16);
    for (size_t i = 0; i < merges.size(); ++i) {
        const MergeRule& m = merges[i];
        auto is_def = [&](int64_t id) {
            return id >= 0 && static_cast<size_t>(id) < defined.size() && defined[id];
        };
        if (!is_def(m.left) || !is_def(m.right))
            throw std::invalid_argument("merge " + std::to_string(i) + " (" + std::to_string(m.left) +
                                        ", " + std::to_string(m.right) + ") -> " +
                                        std::to_string(m.new_id) + " uses an id not defined before it");
        check_id(m.new_id, "new id");
        ensure(m.new_id);
        if (!defined[m.new_id]) {
            defined[m.new_id] = 1;
            vocab[m.new_id] = vocab[m.left] + vocab[m.right];
        } else if (vocab[m.new_id] != vocab[m.left] + vocab[m.right]) {
            // Several merges may make the same token (rank files), never different bytes.
            throw std::invalid_argument("merge " + std::to_string(i) + " (" + std::to_string(m.left) +
                                        ", " + std::to_string(m.right) + ") -> " +
                                        std::to_string(m.new_id) + " makes an id that already stands for other bytes");
        }
        uint64_t key = pair_key(static_cast<uint32_t>(m.left), static_cast<uint32_t>(m.right));
        bool inserted;
        seen.get_or_insert(key, 0, inserted);
        if (inserted)
            rules.push_back(Rule{key, ranks.empty() ? static_cast<int64_t>(i) : ranks[i],
                                 static_cast<uint32_t>(m.new_id)});
    }
    // Dense rank indices preserve order and ties.
    std::vector<int64_t> distinct;
    distinct.reserve(rules.size());
    for (const auto& r : rules) distinct.push_back(r.rank);
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    size_t cap = 16;
    while (cap < rules.size() * 2 + 2) cap <<= 1;
    mkeys_.assign(cap, kEmptyKey);
    mvals_.assign(cap, kNoMerge);
    mmask_ = cap - 1;
    for (const auto& r : rules) {
        uint64_t ri = std::lower_bound(distinct.begin(), distinct.end(), r.rank) - distinct.begin();
        size_t i = mix64(r.key) & mmask_;
        while (mkeys_[i] != kEmptyKey) i = (i + 1) & mmask_;
        mkeys_[i] = r.key;
        mvals_[i] = (ri << 32) | r.new_id;
    }
    tok_off_.assign(vocab.size() + 1, 0);
    for (size_t id = 0; id < vocab.size(); ++id) tok_off_[id + 1] = tok_off_[id] + vocab[id].size();
    tok_blob_.reserve(tok_off_.back());
    for (const auto& v : vocab) tok_blob_ += v;
    tok_defined_ = std::move(defined);
}

inline uint64_t Encoder::lookup(uint32_t a, uint32_t b) const {
    const uint64_t key = pair_key(a, b);
    size_t i = mix64(key) & mmask_;
    for (;;) {
        uint64_t k = mkeys_[i];
        if (k == key) return mvals_[i];
        if (k == kEmptyKey) return kNoMerge;
        i = (i + 1) & mmask_;
    }
}

// Short chunks: keep the rank of every adjacent pair in an array and scan it
// for the lowest (first on ties); each merge does two table look-ups.
void Encoder::encode_small(const unsigned char* p, size_t n, std::vector<uint32_t>& out) const {
    uint32_t sym[kSmallChunk];
    uint64_t r[kSmallChunk];
    size_t m = n;
    for (size_t i = 0; i < m; ++i) sym[i] = byte_ids_[p[i]];
    for (size_t i = 0; i + 1 < m; ++i) r[i] = lookup(sym[i], sym[i + 1]);
    while (m > 1) {
        uint32_t best_rank = UINT32_MAX;
        size_t bi = 0;
        for (size_t i = 0; i + 1 < m; ++i) {
            uint32_t rr = static_cast<uint32_t>(r[i] >> 32);
            if (rr < best_rank) {
                best_rank = rr;
                bi = i;
            }
        }
        if (best_rank == UINT32_MAX) break;
        sym[bi] = static_cast<uint32_t>(r[bi]);
        // drop symbol bi+1 and pair bi+1
        std::memmove(sym + bi + 1, sym + bi + 2, (m - bi - 2) * sizeof(uint32_t));
        if (m >= bi + 3) std::memmove(r + bi + 1, r + bi + 2, (m - bi - 3) * sizeof(uint64_t));
        --m;
        if (bi > 0) r[bi - 1] = lookup(sym[bi - 1], sym[bi]);
        if (bi + 1 < m) r[bi] = lookup(sym[bi], sym[bi + 1]);
    }
    out.insert(out.end(), sym, sym + m);
}

// Long chunks: doubly linked list over the symbols and a priority queue of
// rank << 32 | position over mergeable adjacent pairs; stale entries are
// recognised by re-checking the pair at that position.  The queue is a set
// of sorted runs with a min-heap over the runs' heads, plus an unsorted
// buffer of new entries (with its minimum): the pairs of the input are sorted
// once into the first run, and the buffer becomes a new sorted run only when
// its minimum is the next key to pop.  Merges that make pairs of higher rank
// than everything pending (the usual case: a run of equal bytes merges level
// by level) thus cost a sort instead of heap operations; in the worst case
// every run holds one entry and this is a binary heap.  O(n log n).
void Encoder::encode_large(const unsigned char* p, size_t n, std::vector<uint32_t>& out) const {
    constexpr uint32_t kNone = UINT32_MAX;
    constexpr uint64_t kRankMask = 0xFFFFFFFF00000000ULL;
    if (n >= kNone) throw std::length_error("a pre-tokenization chunk of 4 GiB or more cannot be encoded");
    std::vector<uint32_t> sym(n), nxt(n), prv(n);
    std::vector<uint8_t> dead(n, 0);
    std::vector<uint64_t> store;  // the sorted runs, back to back
    store.reserve(n);
    for (size_t i = 0; i < n; ++i) {
        sym[i] = byte_ids_[p[i]];
        nxt[i] = i + 1 < n ? static_cast<uint32_t>(i + 1) : kNone;
        prv[i] = i > 0 ? static_cast<uint32_t>(i - 1) : kNone;
    }
    for (size_t i = 0; i + 1 < n; ++i) {
        uint64_t v = lookup(sym[i], sym[i + 1]);
        if (v != kNoMerge) store.push_back((v & kRankMask) | i);
    }
    if (!std::is_sorted(store.begin(), store.end())) std::sort(store.begin(), store.end());

    struct Run {
        uint64_t head;     // store[cur]
        size_t cur, end;   // remaining entries store[cur, end)
    };
    std::vector<Run> runs;  // min-heap by head
    auto sift_down = [&runs](size_t i) {
        const size_t m = runs.size();
        Run x = runs[i];
        for (;;) {
            size_t c = 2 * i + 1;
            if (c >= m) break;
            if (c + 1 < m && runs[c + 1].head < runs[c].head) ++c;
            if (runs[c].head >= x.head) break;
            runs[i] = runs[c];
            i = c;
        }
        runs[i] = x;
    };
    auto push_run = [&runs](Run r) {
        size_t i = runs.size();
        runs.push_back(r);
        while (i > 0) {
            size_t parent = (i - 1) / 2;
            if (runs[parent].head <= r.head) break;
            runs[i] = runs[parent];
            i = parent;
        }
        runs[i] = r;
    };
    if (!store.empty()) runs.push_back(Run{store[0], 0, store.size()});
    std::vector<uint64_t> pending;
    uint64_t pending_min = UINT64_MAX;
    auto add = [&](uint64_t key) {
        pending.push_back(key);
        if (key < pending_min) pending_min = key;
    };
    for (;;) {
        if (!pending.empty() && (runs.empty() || pending_min < runs[0].head)) {
            if (runs.empty()) store.clear();  // every earlier run is used up
            std::sort(pending.begin(), pending.end());
            const size_t b = store.size();
            store.insert(store.end(), pending.begin(), pending.end());
            push_run(Run{store[b], b, store.size()});
            pending.clear();
            pending_min = UINT64_MAX;
        }
        if (runs.empty()) break;
        const uint64_t e = runs[0].head;
        if (++runs[0].cur == runs[0].end) {
            runs[0] = runs.back();
            runs.pop_back();
            if (runs.size() > 1) sift_down(0);
        } else {
            runs[0].head = store[runs[0].cur];
            if (runs.size() > 1) sift_down(0);
        }
        const uint32_t pos = static_cast<uint32_t>(e);
        if (dead[pos]) continue;
        const uint32_t j = nxt[pos];
        if (j == kNone) continue;
        const uint64_t v = lookup(sym[pos], sym[j]);
        if (v == kNoMerge || (v >> 32) != (e >> 32)) continue;
        sym[pos] = static_cast<uint32_t>(v);
        dead[j] = 1;
        nxt[pos] = nxt[j];
        if (nxt[j] != kNone) prv[nxt[j]] = pos;
        if (prv[pos] != kNone) {
            const uint64_t v2 = lookup(sym[prv[pos]], sym[pos]);
            if (v2 != kNoMerge) add((v2 & kRankMask) | prv[pos]);
        }
        if (nxt[pos] != kNone) {
            const uint64_t v3 = lookup(sym[pos], sym[nxt[pos]]);
            if (v3 != kNoMerge) add((v3 & kRankMask) | pos);
        }
    }
    for (uint32_t i = 0; i != kNone; i = nxt[i]) out.push_back(sym[i]);
}

void Encoder::encode_chunk_uncached(const unsigned char* p, size_t n, std::vector<uint32_t>& out) const {
    if (n == 0) return;
    if (n <= kSmallChunk)
        encode_small(p, n, out);
    else
        encode_large(p, n, out);
}

void Encoder::encode_chunk(const unsigned char* p, size_t n, std::vector<uint32_t>& out, LocalCache* local) const {
    if (n == 1) {
        out.push_back(byte_ids_[p[0]]);
        return;
    }
    if (n > kMaxCachedChunk) {
        encode_chunk_uncached(p, n, out);
        return;
    }
    const uint64_t h = hash_bytes(p, n);
    if (local && local->get(p, n, h, out)) return;
    const size_t before = out.size();
    if (!cache_->get(p, n, h, out)) {
        encode_chunk_uncached(p, n, out);
        cache_->put(p, n, h, out.data() + before, out.size() - before);
    }
    if (local) local->put(p, n, h, out.data() + before, out.size() - before);
}

void Encoder::encode_chunks(std::string_view data, const size_t* ends, size_t n_chunks, size_t first_start,
                            std::vector<uint32_t>& out, LocalCache* local) const {
    const auto* base = reinterpret_cast<const unsigned char*>(data.data());
    size_t start = first_start;
    for (size_t k = 0; k < n_chunks; ++k) {
        encode_chunk(base + start, ends[k] - start, out, local);
        start = ends[k];
    }
}

void Encoder::encode(std::string_view data, std::vector<uint32_t>& out) const {
    if (data.size() >= (size_t(1) << 16)) {  // big enough to pay for a private front cache
        LocalCache local;
        encode_with(data, out, &local);
    } else {
        encode_with(data, out, nullptr);
    }
}

void Encoder::encode_with(std::string_view data, std::vector<uint32_t>& out, LocalCache* local) const {
    std::vector<size_t> ends;
    split_chunks(data, pattern_, ends);
    out.reserve(out.size() + data.size() / 3);
    encode_chunks(data, ends.data(), ends.size(), 0, out, local);
}

void Encoder::encode_batch(const std::vector<std::string_view>& texts, int num_threads,
                           std::vector<uint32_t>& ids, std::vector<int64_t>& offsets) const {
    const int threads = resolve_threads(num_threads);
    // Groups of consecutive texts of roughly equal byte size.
    size_t total = 0;
    for (auto t : texts) total += t.size();
    const size_t target = std::max<size_t>(1 << 16, total / (static_cast<size_t>(threads) * 8) + 1);
    std::vector<size_t> group_start{0};
    size_t acc = 0;
    for (size_t i = 0; i < texts.size(); ++i) {
        acc += texts[i].size();
        if (acc >= target && i + 1 < texts.size()) {
            group_start.push_back(i + 1);
            acc = 0;
        }
    }
    group_start.push_back(texts.size());
    const size_t n_groups = group_start.size() - 1;
    std::vector<std::vector<uint32_t>> group_ids(n_groups);
    std::vector<int64_t> lens(texts.size(), 0);
    std::vector<std::unique_ptr<LocalCache>> locals(static_cast<size_t>(threads));
    parallel_for(n_groups, threads, [&](size_t g, size_t w) {
        if (!locals[w]) locals[w].reset(new LocalCache());
        auto& out = group_ids[g];
        for (size_t i = group_start[g]; i < group_start[g + 1]; ++i) {
            size_t before = out.size();
            encode_with(texts[i], out, locals[w].get());
            lens[i] = static_cast<int64_t>(out.size() - before);
        }
    });
    offsets.assign(texts.size() + 1, 0);
    for (size_t i = 0; i < texts.size(); ++i) offsets[i + 1] = offsets[i] + lens[i];
    ids.clear();
    ids.reserve(static_cast<size_t>(offsets.back()));
    for (auto& g : group_ids) {
        ids.insert(ids.end(), g.begin(), g.end());
        std::vector<uint32_t>().swap(g);
    }
}

// Streams the file: pre-tokenize the buffer (carry + next window), encode the
// chunks that end at least kFileMargin bytes before the buffer's end, carry
// the rest (always including the last chunk, which the window end may cut)
// to the next round.  The margin covers every way the patterns look past a
// chunk's end (contractions, `(?!\S)`, `$`, a UTF-8 sequence cut in two), so
// the emitted chunks are exactly those of the whole file.  When nothing could
// be emitted the next read is as large as the buffer, so one huge chunk costs
// linear time.
void Encoder::encode_file(const std::string& path, int num_threads, size_t window_bytes,
                          std::vector<uint32_t>& out) const {
    const int threads = resolve_threads(num_threads);
    if (window_bytes == 0) window_bytes = 1;
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) {
        int e = errno;
        throw FileError(path, e, "cannot open file '" + path + "': " + std::strerror(e));
    }
    struct Closer {
        std::FILE* f;
        ~Closer() { std::fclose(f); }
    } closer{f};
    std::string buf;
    std::vector<size_t> ends;
    size_t want = window_bytes;
    std::vector<std::unique_ptr<LocalCache>> locals(static_cast<size_t>(threads));
    for (auto& l : locals) l.reset(new LocalCache());
    for (;;) {
        size_t old = buf.size();
        buf.resize(old + want);
        size_t got = std::fread(&buf[old], 1, want, f);
        buf.resize(old + got);
        if (std::ferror(f)) {
            int e = errno;
            throw FileError(path, e, "cannot read file '" + path + "': " + std::strerror(e));
        }
        const bool eof = got < want;
        ends.clear();
        split_chunks(buf, pattern_, ends);
        size_t cut = ends.size();
        if (!eof) {
            size_t limit = buf.size() > kFileMargin ? buf.size() - kFileMargin : 0;
            while (cut > 0 && ends[cut - 1] > limit) --cut;
        }
        if (cut > 0) {
            std::string_view view(buf);
            const size_t t = std::min<size_t>(static_cast<size_t>(threads), (cut + 4095) / 4096);
            if (t <= 1) {
                encode_chunks(view, ends.data(), cut, 0, out, locals[0].get());
            } else {
                std::vector<std::vector<uint32_t>> parts(t);
                parallel_for(t, static_cast<int>(t), [&](size_t part, size_t w) {
                    size_t lo = cut * part / t, hi = cut * (part + 1) / t;
                    encode_chunks(view, ends.data() + lo, hi - lo, lo == 0 ? 0 : ends[lo - 1], parts[part],
                                  locals[w].get());
                });
                for (auto& pv : parts) out.insert(out.end(), pv.begin(), pv.end());
            }
        }
        const size_t consumed = cut > 0 ? ends[cut - 1] : 0;
        buf.erase(0, consumed);
        if (eof) break;
        want = cut == 0 ? std::max(window_bytes, buf.size()) : window_bytes;
    }
}

bool Encoder::has_token(int64_t id) const {
    return id >= 0 && static_cast<uint64_t>(id) < tok_defined_.size() && tok_defined_[id];
}

std::string_view Encoder::token_bytes(int64_t id) const {
    if (!has_token(id)) throw std::invalid_argument("unknown token id " + std::to_string(id));
    return std::string_view(tok_blob_.data() + tok_off_[id], tok_off_[id + 1] - tok_off_[id]);
}

std::string Encoder::decode(const int64_t* ids, size_t n) const {
    size_t total = 0;
    for (size_t i = 0; i < n; ++i) {
        if (!has_token(ids[i])) throw std::invalid_argument("unknown token id " + std::to_string(ids[i]));
        total += tok_off_[ids[i] + 1] - tok_off_[ids[i]];
    }
    std::string out;
    out.resize(total);
    char* dst = &out[0];
    for (size_t i = 0; i < n; ++i) {
        size_t len = tok_off_[ids[i] + 1] - tok_off_[ids[i]];
        std::memcpy(dst, tok_blob_.data() + tok_off_[ids[i]], len);
        dst += len;
    }
    return out;
}

}  // namespace storygpt
