// Encoder's batch calls: many texts on several threads, results handed to the
// calling thread group by group while the other threads keep encoding.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <numeric>
#include <thread>

#include "encode/encoder.h"

namespace storygpt {

namespace {

// Groups of consecutive texts of about `target` bytes (a longer text is a group
// of its own): group g is texts [starts[g], starts[g + 1]).
std::vector<size_t> group_starts(const std::vector<std::string_view>& texts, size_t target) {
    std::vector<size_t> starts{0};
    for (size_t i = 0, bytes = 0; i < texts.size(); ++i) {
        bytes += texts[i].size();
        if (bytes >= target && i + 1 < texts.size()) {
            starts.push_back(i + 1);
            bytes = 0;
        }
    }
    starts.push_back(texts.size());
    return starts;
}

// Finished groups, passed from the workers to the calling thread.
class Mailbox {
   public:
    void post(size_t group) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            ready_.push_back(group);
        }
        wake_.notify_one();
    }
    void fail(std::exception_ptr error) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (!error_) error_ = error;
        }
        wake_.notify_one();
    }
    // The groups finished since the last call; waits for one when `wait`.
    // Rethrows a worker's exception.
    std::vector<size_t> take(bool wait) {
        std::unique_lock<std::mutex> lock(mutex_);
        if (wait) wake_.wait(lock, [&] { return !ready_.empty() || error_; });
        if (error_) std::rethrow_exception(error_);
        std::vector<size_t> out;
        out.swap(ready_);
        return out;
    }

   private:
    std::mutex mutex_;
    std::condition_variable wake_;
    std::vector<size_t> ready_;
    std::exception_ptr error_;
};

// Stops handing out work and joins the workers however the caller leaves.
struct Workers {
    std::atomic<size_t>& next;
    size_t n;
    std::vector<std::thread> threads;
    ~Workers() {
        next.store(n);
        for (auto& t : threads) t.join();
    }
};

}  // namespace

void Encoder::encode_batch(const std::vector<std::string_view>& texts, int num_threads, const BatchSink& sink) const {
    if (texts.empty()) return;
    const size_t threads = static_cast<size_t>(resolve_threads(num_threads));
    size_t total = 0;
    for (auto t : texts) total += t.size();
    // Small groups (1/16 of a thread's share, at least 64 KiB) handed out
    // largest first: the threads end together, and the sink sees early results.
    const std::vector<size_t> starts = group_starts(texts, std::max<size_t>(1 << 16, total / (threads * 16) + 1));
    const size_t n_groups = starts.size() - 1;
    std::vector<int64_t> lengths(texts.size(), 0);
    auto encode_group = [&](size_t g, std::vector<uint32_t>& ids, WorkerCache& cache) {
        for (size_t i = starts[g]; i < starts[g + 1]; ++i) {
            const size_t before = ids.size();
            encode_pieces(texts[i], ids, cache);
            lengths[i] = static_cast<int64_t>(ids.size() - before);
        }
    };
    auto deliver = [&](size_t g, std::vector<uint32_t>& ids) {
        sink(starts[g], starts[g + 1], ids, lengths.data() + starts[g]);
        std::vector<uint32_t>().swap(ids);
    };
    const size_t workers = std::min(threads, n_groups);
    if (workers <= 1) {
        const CachePool::Lease cache = caches_->lend(total);
        std::vector<uint32_t> ids;
        for (size_t g = 0; g < n_groups; ++g) {
            encode_group(g, ids, *cache);
            deliver(g, ids);
        }
        return;
    }
    std::vector<size_t> order(n_groups);
    std::iota(order.begin(), order.end(), size_t(0));
    auto bytes_of = [&](size_t g) {
        size_t b = 0;
        for (size_t i = starts[g]; i < starts[g + 1]; ++i) b += texts[i].size();
        return b;
    };
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return bytes_of(a) > bytes_of(b); });
    std::vector<std::vector<uint32_t>> group_ids(n_groups);
    std::atomic<size_t> next{0};
    Mailbox mailbox;
    Workers pool{next, n_groups, {}};
    pool.threads.reserve(workers - 1);
    for (size_t w = 1; w < workers; ++w) {
        pool.threads.emplace_back([&] {
            try {
                const CachePool::Lease cache = caches_->lend(total);
                for (size_t i; (i = next.fetch_add(1)) < n_groups;) {
                    encode_group(order[i], group_ids[order[i]], *cache);
                    mailbox.post(order[i]);
                }
            } catch (...) {
                next.store(n_groups);
                mailbox.fail(std::current_exception());
            }
        });
    }
    // The calling thread encodes too, and passes on what is finished between its groups.
    size_t delivered = 0;
    auto deliver_ready = [&](bool wait) {
        for (size_t g : mailbox.take(wait)) {
            deliver(g, group_ids[g]);
            ++delivered;
        }
    };
    {
        const CachePool::Lease cache = caches_->lend(total);
        for (size_t i; (i = next.fetch_add(1)) < n_groups;) {
            encode_group(order[i], group_ids[order[i]], *cache);
            deliver(order[i], group_ids[order[i]]);
            ++delivered;
            deliver_ready(false);
        }
    }
    while (delivered < n_groups) deliver_ready(true);
}

void Encoder::encode_batch(const std::vector<std::string_view>& texts, int num_threads, std::vector<uint32_t>& ids,
                           std::vector<int64_t>& offsets) const {
    std::vector<std::vector<uint32_t>> parts(texts.size());  // one per group, at its first text
    offsets.assign(texts.size() + 1, 0);
    encode_batch(texts, num_threads, [&](size_t first, size_t last, std::vector<uint32_t>& group, const int64_t* n) {
        for (size_t k = first; k < last; ++k) offsets[k + 1] = n[k - first];
        parts[first] = std::move(group);
    });
    for (size_t k = 0; k < texts.size(); ++k) offsets[k + 1] += offsets[k];
    ids.clear();
    ids.reserve(static_cast<size_t>(offsets.back()));
    for (auto& part : parts) {
        ids.insert(ids.end(), part.begin(), part.end());
        std::vector<uint32_t>().swap(part);
    }
}

}  // namespace storygpt
