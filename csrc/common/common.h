// Shared utilities of the BPE core: errors, file reading, progress reports,
// hashing, one open-addressing hash map, the thread pool.  Pure C++17 (no Python types).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace storygpt {

// ---------------------------------------------------------------------------
// Errors and files
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

// A file opened for reading, closed on destruction; errors throw FileError
// naming the path.
class InputFile {
   public:
    explicit InputFile(const std::string& path);
    ~InputFile();
    InputFile(const InputFile&) = delete;
    InputFile& operator=(const InputFile&) = delete;
    // Appends up to `n` bytes to `buf`; returns how many were read (fewer than
    // `n` only at the end of the file).
    size_t read_append(std::string& buf, size_t n);
    const std::string& path() const { return path_; }
    // Size in bytes at opening (0 when it cannot be told, e.g. a pipe).
    uint64_t size() const { return size_; }

   private:
    std::string path_;
    std::FILE* file_;
    uint64_t size_ = 0;
};

// ---------------------------------------------------------------------------
// Progress
// ---------------------------------------------------------------------------

// Progress of a long job: called with (stage, done, total) now and then,
// always from the thread that started the job.  `total` is 0 when unknown.
// An exception it throws ends the job.
struct Progress {
    void (*call)(void* context, const char* stage, uint64_t done, uint64_t total) = nullptr;
    void* context = nullptr;
    void operator()(const char* stage, uint64_t done, uint64_t total) const {
        if (call) call(context, stage, done, total);
    }
};

// ---------------------------------------------------------------------------
// Hashing
// ---------------------------------------------------------------------------

// The 64-bit finaliser of MurmurHash3 (a bijection with full avalanche).
inline uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

// A fast non-cryptographic hash of a byte string: 8 bytes per step, then
// mix64 of the state.
inline uint64_t hash_bytes(const unsigned char* p, size_t n) {
    constexpr uint64_t kMul1 = 0x87C37B91114253D5ULL, kMul2 = 0x4CF5AD432745937FULL;
    auto step = [](uint64_t h, uint64_t v) {
        h ^= v * kMul1;
        return ((h << 31) | (h >> 33)) * kMul2;
    };
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (static_cast<uint64_t>(n) * 0xC2B2AE3D27D4EB4FULL);
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t v;
        std::memcpy(&v, p, 8);
        h = step(h, v);
    }
    if (n) {
        uint64_t v = 0;
        std::memcpy(&v, p, n);
        h = step(h, v);
    }
    return mix64(h);
}

inline uint64_t hash_bytes(const char* p, size_t n) { return hash_bytes(reinterpret_cast<const unsigned char*>(p), n); }

// Two token ids as one 64-bit key: left << 32 | right (so keys order like
// (left, right) tuples).
inline uint64_t pair_key(uint32_t left, uint32_t right) { return (static_cast<uint64_t>(left) << 32) | right; }
inline uint32_t pair_left(uint64_t key) { return static_cast<uint32_t>(key >> 32); }
inline uint32_t pair_right(uint64_t key) { return static_cast<uint32_t>(key); }

// ---------------------------------------------------------------------------
// The hash map
// ---------------------------------------------------------------------------

// Open-addressing hash map with linear probing and no deletion: a
// power-of-two table of 4-byte indices into a dense vector of entries, kept
// at most half full.  Entries stay in insertion order, so iterating them
// needs no scan of empty slots, and growing moves only the indices.
// `HashOf` gives an entry's hash (used when the table grows); look-ups take
// the hash and a predicate that recognises the wanted entry.
//
// Measured against the encoder's former merge table, which kept keys and
// values in the slots (interleaved runs, GPT-2 vocabulary): no difference
// beyond noise on 15.7 MB of English; 1.1-1.2x slower on 1 MB of random
// letters, one long chunk where look-ups are most of the work.  One map
// for all four uses was worth that.
template <class Entry, class HashOf>
class HashMap {
   public:
    static constexpr uint32_t kNotFound = UINT32_MAX;

    explicit HashMap(size_t expected = 8) {
        size_t capacity = 16;
        while (capacity < 2 * expected) capacity <<= 1;
        slots_.assign(capacity, kNotFound);
    }

    size_t size() const { return entries_.size(); }
    size_t capacity() const { return slots_.size(); }  // slots; grows past half full
    std::vector<Entry>& entries() { return entries_; }
    const std::vector<Entry>& entries() const { return entries_; }
    Entry& operator[](uint32_t index) { return entries_[index]; }
    const Entry& operator[](uint32_t index) const { return entries_[index]; }

    // Index of the entry for which same(entry) holds, or kNotFound.
    template <class Same>
    uint32_t find(uint64_t hash, Same&& same) const {
        const size_t mask = slots_.size() - 1;
        for (size_t i = hash & mask;; i = (i + 1) & mask) {
            const uint32_t e = slots_[i];
            if (e == kNotFound || same(entries_[e])) return e;
        }
    }

    // Index of the entry for which same(entry) holds; when there is none,
    // appends make() and returns its index with `inserted` set.
    template <class Same, class Make>
    uint32_t find_or_insert(uint64_t hash, Same&& same, Make&& make, bool& inserted) {
        if (2 * (entries_.size() + 1) > slots_.size()) grow();
        const size_t mask = slots_.size() - 1;
        for (size_t i = hash & mask;; i = (i + 1) & mask) {
            const uint32_t e = slots_[i];
            if (e == kNotFound) {
                inserted = true;
                slots_[i] = static_cast<uint32_t>(entries_.size());
                entries_.push_back(make());
                return slots_[i];
            }
            if (same(entries_[e])) {
                inserted = false;
                return e;
            }
        }
    }

    void clear() {
        std::fill(slots_.begin(), slots_.end(), kNotFound);
        entries_.clear();
    }

    size_t memory_bytes() const { return slots_.capacity() * sizeof(uint32_t) + entries_.capacity() * sizeof(Entry); }

   private:
    void grow() {
        if (entries_.size() >= kNotFound / 2) throw std::length_error("hash map: too many entries");
        slots_.assign(slots_.size() * 2, kNotFound);
        const size_t mask = slots_.size() - 1;
        for (uint32_t e = 0; e < entries_.size(); ++e) {
            size_t i = HashOf()(entries_[e]) & mask;
            while (slots_[i] != kNotFound) i = (i + 1) & mask;
            slots_[i] = e;
        }
    }

    std::vector<uint32_t> slots_;
    std::vector<Entry> entries_;
};

// ---------------------------------------------------------------------------
// Threads
// ---------------------------------------------------------------------------

// Number of worker threads for a request: n <= 0 means all hardware threads.
int resolve_threads(int n);

// Runs f(task, worker) for every task in [0, n) on up to `threads` threads
// (the calling thread is worker 0); tasks are handed out in order.  Rethrows
// the first exception after all workers have stopped.
template <class F>
void parallel_for(size_t n, int threads, F&& f) {
    if (n == 0) return;
    const size_t workers = std::min<size_t>(static_cast<size_t>(std::max(threads, 1)), n);
    if (workers == 1) {
        for (size_t i = 0; i < n; ++i) f(i, size_t(0));
        return;
    }
    std::atomic<size_t> next{0};
    std::exception_ptr error;
    std::mutex error_mutex;
    auto work = [&](size_t worker) {
        try {
            for (size_t i; (i = next.fetch_add(1)) < n;) f(i, worker);
        } catch (...) {
            std::lock_guard<std::mutex> lock(error_mutex);
            if (!error) error = std::current_exception();
            next.store(n);
        }
    };
    std::vector<std::thread> pool;
    pool.reserve(workers - 1);
    for (size_t w = 1; w < workers; ++w) pool.emplace_back(work, w);
    work(0);
    for (auto& t : pool) t.join();
    if (error) std::rethrow_exception(error);
}

}  // namespace storygpt
