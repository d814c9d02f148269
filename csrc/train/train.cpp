#include "train/train.h"

#include <algorithm>
#include <cstdlib>
#include <new>
#include <stdexcept>

#include "train/long_word.h"
#include "train/word_list.h"

namespace storygpt {

TieBreak parse_tie_break(const std::string& name) {
    if (name == "smallest_ids") return TieBreak::SmallestIds;
    if (name == "largest_bytes") return TieBreak::LargestBytes;
    throw std::invalid_argument("unknown tie_break '" + name + "'; expected one of 'smallest_ids', 'largest_bytes'");
}

int64_t TrainOptions::merges_to_learn() const {
    if (min_frequency < 1)
        throw std::invalid_argument("min_frequency must be >= 1, got " + std::to_string(min_frequency));
    const int64_t n_specials = static_cast<int64_t>(special_tokens.size());
    if (vocab_size < 256 + n_specials)
        throw std::invalid_argument(
            "vocab_size=" + std::to_string(vocab_size) + " is too small: it must hold the 256 byte tokens and " +
            std::to_string(n_specials) + " special tokens (at least " + std::to_string(256 + n_specials) + ")");
    return vocab_size - 256 - n_specials;
}

namespace {

// Chunks of this many bytes or more become LongWords.  A short word is
// rewritten whole by each merge that touches it, which costs its length
// each time.
constexpr size_t kLongWordBytes = 256;
constexpr uint32_t kLong = UINT32_MAX;

// A distinct chunk of two or more bytes and how often it occurs.  A short
// one keeps its current symbols (token ids) in Trainer::symbols_ and shrinks
// in place as merges apply; a long one lives in Trainer::long_words_.
struct Word {
    uint32_t start;   // index of the first symbol; for a long word, its index in long_words_
    uint32_t length;  // current number of symbols, or kLong
    int64_t count;
};

// One adjacent pair (left, right) of symbols.
struct PairStats {
    uint64_t key;    // pair_key(left, right)
    int64_t count;   // occurrences in all words, times each word's count
    WordList words;  // words that may hold the pair (stale entries allowed)
};

struct PairHash {
    uint64_t operator()(const PairStats& p) const { return mix64(p.key); }
};

// An entry of the priority queue; stale once `count` differs from the pair's
// live count.
struct Candidate {
    int64_t count;
    uint32_t left, right;
    uint32_t index;  // the pair's entry in Trainer::pairs_ (entries never move)
};

// Symbol: the type of a short word's token ids, uint16_t when the vocabulary
// fits (half the memory of the largest array), else uint32_t.
template <class Symbol>
class Trainer {
   public:
    explicit Trainer(const TrainOptions& options) : options_(options), pairs_(size_t(1) << 16) {
        for (int b = 0; b < 256; ++b) token_bytes_.emplace_back(1, static_cast<char>(b));
    }

    void add_words(std::vector<ChunkCounts>&& shards);
    // Words of token ids made by `merges` (continue_merges).
    void add_token_words(TokenWords&& words, const std::vector<Merge>& merges);
    std::vector<Merge> run(int64_t n_merges, const Progress& progress);

   private:
    void index_pairs();
    uint32_t find_pair(uint64_t key) const {
        return pairs_.find(mix64(key), [key](const PairStats& p) { return p.key == key; });
    }
    uint32_t find_or_add_pair(uint64_t key) {
        bool inserted;
        return pairs_.find_or_insert(
            mix64(key), [key](const PairStats& p) { return p.key == key; },
            [key]() { return PairStats{key, 0, WordList()}; }, inserted);
    }
    static void note_word(PairStats& pair, uint32_t word) {
        if (pair.words.empty() || pair.words.back() != word) pair.words.push_back(word);
    }
    // `count` more occurrences of a pair made by the current merge in word w.
    void add_new_pair(uint64_t key, int64_t count, uint32_t w);
    // `count` fewer occurrences of a pair.  A pair that no word holds any
    // more once the merge is done gives back its word list (all stale); see
    // merge().  Measured on 50 MB of varied text, vocab 32,768: 60% of the
    // list entries were such.
    void remove_occurrences(uint64_t key, int64_t count) {
        const uint32_t index = find_pair(key);
        if ((pairs_[index].count -= count) == 0) emptied_.push_back(index);
    }
    // x ranks below y in the queue
    bool ranks_below(const Candidate& x, const Candidate& y) const;
    Candidate candidate(uint32_t index) const {
        const PairStats& p = pairs_[index];
        return Candidate{p.count, pair_left(p.key), pair_right(p.key), index};
    }
    void push(const Candidate& c) {
        queue_.push_back(c);
        std::push_heap(queue_.begin(), queue_.end(), [this](auto& x, auto& y) { return ranks_below(x, y); });
    }
    bool pop_best(Candidate& best);
    void lower_floor(int64_t floor);
    void merge(uint32_t left, uint32_t right, uint32_t new_id);
    void rewrite(uint32_t word, uint32_t left, uint32_t right, uint32_t new_id);
    void merge_long(uint32_t word, uint32_t left, uint32_t right, uint32_t new_id);

    const TrainOptions& options_;
    std::vector<Symbol> symbols_;  // all short words' symbols, back to back
    std::vector<Word> words_;
    std::vector<LongWord> long_words_;
    HashMap<PairStats, PairHash> pairs_;
    std::vector<Candidate> queue_;  // binary max-heap by ranks_below
    // Every pair with count >= floor_ has an entry in queue_ (those below
    // may not).  Counts only fall once the merge that made the pair is done,
    // so a pair left out stays below the floor until pop_best lowers it.
    // Measured on 800 MB of varied text, vocab 8,192: 2/3 of the pairs
    // stayed below half the best count, and out of the queue.
    int64_t floor_ = 0;
    std::vector<std::string> token_bytes_;
    uint32_t first_id_ = 256;  // the id the first merge of run() makes
    std::vector<Symbol> old_symbols_;
    std::vector<uint32_t> appeared_, emptied_, todo_;
};

// Sizes the arrays exactly first: they are the largest of the trainer, and
// the counts are still held while they fill.
template <class Symbol>
void Trainer<Symbol>::add_words(std::vector<ChunkCounts>&& shards) {
    size_t total = 0, n_words = 0;
    for (const auto& shard : shards)
        shard.for_each([&](std::string_view chunk, int64_t) {
            n_words += chunk.size() >= 2;
            if (chunk.size() >= 2 && chunk.size() < kLongWordBytes) total += chunk.size();
        });
    if (total >= UINT32_MAX) throw std::length_error("training: 4 GiB or more of distinct chunk bytes");
    if (n_words >= UINT32_MAX) throw std::length_error("training: 2**32 or more distinct chunks");
    symbols_.reserve(total);
    words_.reserve(n_words);
    for (auto& shard : shards)
        shard.drain([&](std::string_view chunk, int64_t count) {  // frees as it goes
            if (chunk.size() < 2) return;                         // no pair: never changes any count
            if (chunk.size() >= kLongWordBytes) {
                words_.push_back(Word{static_cast<uint32_t>(long_words_.size()), kLong, count});
                long_words_.emplace_back(chunk);
                return;
            }
            words_.push_back(Word{static_cast<uint32_t>(symbols_.size()), static_cast<uint32_t>(chunk.size()), count});
            for (unsigned char byte : chunk) symbols_.push_back(byte);
        });
    index_pairs();
}

// A word of kLongWordBytes symbols or more becomes a LongWord.
template <class Symbol>
void Trainer<Symbol>::add_token_words(TokenWords&& words, const std::vector<Merge>& merges) {
    for (const Merge& m : merges) token_bytes_.push_back(token_bytes_[m.first] + token_bytes_[m.second]);
    first_id_ = static_cast<uint32_t>(256 + merges.size());
    size_t start = 0;
    for (size_t k = 0; k < words.lengths.size(); ++k) {
        const uint32_t n = words.lengths[k];
        const uint32_t* ids = words.symbols.data() + start;
        start += n;
        if (n < 2) continue;
        if (words_.size() >= UINT32_MAX - 1) throw std::length_error("training: 2**32 or more distinct chunks");
        if (n >= kLongWordBytes) {
            words_.push_back(Word{static_cast<uint32_t>(long_words_.size()), kLong, words.counts[k]});
            long_words_.emplace_back(ids, n);
            continue;
        }
        if (symbols_.size() + n >= UINT32_MAX)
            throw std::length_error("training: 4 GiB or more of distinct chunk symbols");
        words_.push_back(Word{static_cast<uint32_t>(symbols_.size()), n, words.counts[k]});
        for (uint32_t i = 0; i < n; ++i) symbols_.push_back(static_cast<Symbol>(ids[i]));
    }
    words = TokenWords();
    index_pairs();
}

// Counts every pair and lists its words (ascending, as every list stays:
// a merge appends words in the order of the merged pair's list), then
// queues every pair.
template <class Symbol>
void Trainer<Symbol>::index_pairs() {
    for (uint32_t w = 0; w < words_.size(); ++w) {
        const Word& word = words_[w];
        auto add = [&](uint64_t key) {
            PairStats& pair = pairs_[find_or_add_pair(key)];
            pair.count += word.count;
            note_word(pair, w);
        };
        if (word.length == kLong) {
            long_words_[word.start].for_each_pair(add);
            continue;
        }
        const Symbol* s = &symbols_[word.start];
        for (uint32_t i = 0; i + 1 < word.length; ++i) add(pair_key(s[i], s[i + 1]));
    }
    queue_.reserve(pairs_.size());
    for (uint32_t i = 0; i < pairs_.size(); ++i)
        if (pairs_[i].count > 0) queue_.push_back(candidate(i));
    std::make_heap(queue_.begin(), queue_.end(), [this](auto& x, auto& y) { return ranks_below(x, y); });
    floor_ = queue_.empty() ? 0 : queue_.front().count / 2;
}

// By count, then by the tie-break: smallest (left, right) ids, or greatest
// (bytes(left), bytes(right)) and then smallest ids.
template <class Symbol>
bool Trainer<Symbol>::ranks_below(const Candidate& x, const Candidate& y) const {
    if (x.count != y.count) return x.count < y.count;
    if (options_.tie_break == TieBreak::LargestBytes) {
        int c = token_bytes_[x.left].compare(token_bytes_[y.left]);
        if (c == 0) c = token_bytes_[x.right].compare(token_bytes_[y.right]);
        if (c != 0) return c < 0;
    }
    return pair_key(x.left, x.right) > pair_key(y.left, y.right);
}

// Lazy deletion: counts of existing pairs only ever fall during a merge
// (only pairs with the new token gain, and they get fresh entries), so an
// entry whose count is stale goes back with the live count (or out, below
// the floor), and the first entry that matches its live count, at or above
// the floor, is the best pair.  When the best entry is below the floor, the
// floor falls to half of it.
template <class Symbol>
bool Trainer<Symbol>::pop_best(Candidate& best) {
    auto below = [this](auto& x, auto& y) { return ranks_below(x, y); };
    for (;;) {
        if (queue_.empty() || queue_.front().count < floor_) {
            if (floor_ == 0) return false;
            lower_floor(queue_.empty() ? 0 : queue_.front().count / 2);
            continue;
        }
        std::pop_heap(queue_.begin(), queue_.end(), below);
        Candidate c = queue_.back();
        queue_.pop_back();
        const int64_t live = pairs_[c.index].count;
        if (live == c.count) {
            best = c;
            return true;
        }
        if (live > 0 && live >= floor_) push(Candidate{live, c.left, c.right, c.index});
    }
}

// Queues every pair with a count in [floor, floor_): those may be missing.
// (Some may be queued twice; the copy popped second is stale by then.)
template <class Symbol>
void Trainer<Symbol>::lower_floor(int64_t floor) {
    for (uint32_t i = 0; i < pairs_.size(); ++i)
        if (pairs_[i].count > 0 && pairs_[i].count >= floor && pairs_[i].count < floor_) queue_.push_back(candidate(i));
    std::make_heap(queue_.begin(), queue_.end(), [this](auto& x, auto& y) { return ranks_below(x, y); });
    floor_ = floor;
}

template <class Symbol>
std::vector<Merge> Trainer<Symbol>::run(int64_t n_merges, const Progress& progress) {
    std::vector<Merge> merges;
    Candidate best;
    for (int64_t k = 0; k < n_merges && pop_best(best) && best.count >= options_.min_frequency; ++k) {
        merges.emplace_back(best.left, best.right);
        token_bytes_.push_back(token_bytes_[best.left] + token_bytes_[best.right]);
        merge(best.left, best.right, static_cast<uint32_t>(first_id_ + k));
        if ((k & 255) == 255) progress("merge", static_cast<uint64_t>(k + 1), static_cast<uint64_t>(n_merges));
    }
    progress("merge", merges.size(), static_cast<uint64_t>(n_merges));
    return merges;
}

// Applies merge (left, right) -> new_id to every word on the pair's list
// (each once: the list is strictly ascending), then queues each pair that
// appeared with its new count.  The words are visited in list order with
// their entries and symbols prefetched some words ahead: the list is sparse
// in big arrays, so nearly every word is a cache miss otherwise.
template <class Symbol>
void Trainer<Symbol>::merge(uint32_t left, uint32_t right, uint32_t new_id) {
    constexpr size_t kWordAhead = 16, kSymbolsAhead = 8;
    appeared_.clear();
    PairStats& merged = pairs_[find_pair(pair_key(left, right))];
    const WordList where = std::move(merged.words);
    // Every occurrence goes (merged, or overlapping a merged one): no word
    // holds the pair afterwards.
    merged.count = 0;
    todo_.clear();
    where.for_each([&](uint32_t w) { todo_.push_back(w); });
    const size_t n = todo_.size();
    auto prefetch_symbols = [&](uint32_t w) {
        if (words_[w].length != kLong) __builtin_prefetch(&symbols_[words_[w].start]);
    };
    for (size_t k = 0; k < std::min(n, kWordAhead); ++k) __builtin_prefetch(&words_[todo_[k]]);
    for (size_t k = 0; k < std::min(n, kSymbolsAhead); ++k) prefetch_symbols(todo_[k]);
    for (size_t k = 0; k < n; ++k) {
        if (k + kWordAhead < n) __builtin_prefetch(&words_[todo_[k + kWordAhead]]);
        if (k + kSymbolsAhead < n) prefetch_symbols(todo_[k + kSymbolsAhead]);
        const uint32_t w = todo_[k];
        if (words_[w].length != kLong)
            rewrite(w, left, right, new_id);
        else
            merge_long(w, left, right, new_id);
    }
    for (uint32_t index : appeared_) {
        const PairStats& p = pairs_[index];
        if (p.count > 0 && p.count >= floor_) push(candidate(index));
    }
    for (uint32_t index : emptied_)
        if (pairs_[index].count == 0) pairs_[index].words = WordList();
    emptied_.clear();
}

// Rewrites one word left to right, merging non-overlapping occurrences (as
// the reference's _merge_word), and moves the word's count from the old
// pairs next to a merged occurrence to the new pairs that hold new_id.  The
// other pairs are the same before and after, one for one, so their counts
// stay; (left, right) itself is left to merge(), which zeroes it.  Same
// counts as taking the word's count from all old pairs and giving it to all
// new ones, overlapping cases ("aaa") included.
template <class Symbol>
void Trainer<Symbol>::rewrite(uint32_t w, uint32_t left, uint32_t right, uint32_t new_id) {
    Word& word = words_[w];
    Symbol* s = &symbols_[word.start];
    const uint32_t n = word.length;
    uint32_t i = 0;
    while (i + 1 < n && !(s[i] == left && s[i + 1] == right)) ++i;
    if (i + 1 >= n) return;  // a stale entry of the list
    old_symbols_.assign(s, s + n);
    const Symbol* old = old_symbols_.data();
    const uint64_t merged_key = pair_key(left, right);
    const int64_t count = word.count;
    // Old pair k is (old[k], old[k + 1]); each touched one is removed once.
    uint32_t next_unremoved = 0;  // old pairs before this one are done
    auto remove = [&](uint32_t k) {
        if (k < next_unremoved || k + 1 >= n) return;
        next_unremoved = k + 1;
        const uint64_t key = pair_key(old[k], old[k + 1]);
        if (key != merged_key) remove_occurrences(key, count);
    };
    uint32_t j = i;
    while (i < n) {
        if (i + 1 < n && old[i] == left && old[i + 1] == right) {
            if (i > 0) remove(i - 1);
            next_unremoved = std::max(next_unremoved, i + 1);  // pair i is (left, right)
            remove(i + 1);
            s[j++] = static_cast<Symbol>(new_id);
            i += 2;
        } else {
            s[j++] = old[i++];
        }
    }
    word.length = j;
    for (i = 0; i + 1 < j; ++i)
        if (s[i] == new_id || s[i + 1] == new_id) add_new_pair(pair_key(s[i], s[i + 1]), count, w);
}

template <class Symbol>
void Trainer<Symbol>::add_new_pair(uint64_t key, int64_t count, uint32_t w) {
    const uint32_t index = find_or_add_pair(key);
    PairStats& pair = pairs_[index];
    pair.count += count;
    if (pair.words.empty()) appeared_.push_back(index);  // once: the pair holds new_id, so it is new
    note_word(pair, w);
}

// A long word changes only where the pair occurs (LongWord::merge); pairs
// that gain occurrences there all hold the new id.
template <class Symbol>
void Trainer<Symbol>::merge_long(uint32_t w, uint32_t left, uint32_t right, uint32_t new_id) {
    const int64_t count = words_[w].count;
    long_words_[words_[w].start].merge(left, right, new_id, [&](uint64_t key, int delta) {
        if (delta < 0)
            remove_occurrences(key, count);
        else
            add_new_pair(key, count, w);
    });
}

template <class Symbol>
std::vector<Merge> learn_with(std::vector<ChunkCounts>&& counts, const TrainOptions& options, int64_t n_merges,
                              const Progress& progress) {
    Trainer<Symbol> trainer(options);
    trainer.add_words(std::move(counts));
    return trainer.run(n_merges, progress);
}

template <class Symbol>
std::vector<Merge> continue_with(TokenWords&& words, const std::vector<Merge>& merges, const TrainOptions& options,
                                 int64_t n_merges, const Progress& progress) {
    Trainer<Symbol> trainer(options);
    trainer.add_token_words(std::move(words), merges);
    return trainer.run(n_merges, progress);
}

}  // namespace

std::vector<Merge> continue_merges(TokenWords&& words, const std::vector<Merge>& merges, int64_t n_merges,
                                   const TrainOptions& options, const Progress& progress) {
    if (n_merges <= 0) return {};
    if (256 + static_cast<int64_t>(merges.size()) + n_merges <= 65536)
        return continue_with<uint16_t>(std::move(words), merges, options, n_merges, progress);
    return continue_with<uint32_t>(std::move(words), merges, options, n_merges, progress);
}

std::vector<Merge> learn_merges(std::vector<ChunkCounts>&& counts, const TrainOptions& options,
                                const Progress& progress) {
    const int64_t n_merges = options.merges_to_learn();
    if (n_merges == 0) return {};
    // Token ids are below vocab_size.
    if (options.vocab_size <= 65536) return learn_with<uint16_t>(std::move(counts), options, n_merges, progress);
    return learn_with<uint32_t>(std::move(counts), options, n_merges, progress);
}

std::vector<Merge> train(const std::vector<std::string_view>& texts, const std::vector<std::string>& files,
                         const TrainOptions& options, const Progress& progress) {
    options.merges_to_learn();  // checks first, before any reading
    ChunkCounter counter(options.pattern, options.special_tokens, options.num_threads);
    if (!texts.empty()) counter.add_texts(texts, progress);
    for (const auto& path : files) counter.add_file(path, progress);
    return learn_merges(std::move(counter.shards()), options, progress);
}

std::vector<std::pair<std::string, int64_t>> chunk_counts(const std::vector<std::string_view>& texts,
                                                          const TrainOptions& options) {
    ChunkCounter counter(options.pattern, options.special_tokens, options.num_threads);
    counter.add_texts(texts);
    std::vector<std::pair<std::string, int64_t>> out;
    for (const ChunkCounts& shard : counter.shards())
        shard.for_each([&](std::string_view chunk, int64_t count) { out.emplace_back(std::string(chunk), count); });
    return out;
}

}  // namespace storygpt
