// Pays on: training on 20 MB of varied text, vocab 32,768: 1.19-1.24x the time without it (200 MB, one run: 0.95x);
// one 2 M-byte chunk 3.2 -> 0.36 s (docs/performance.md, "What the special paths earn").
// A long word of the trainer, with an index of where each pair occurs, so
// that a merge touches only the places where its pair occurs.  Pure C++17.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "common/common.h"

namespace storygpt {

// One distinct chunk of many bytes (DNA, minified JSON, a run of spaces).
// Rewriting such a word for every merge that touches it would cost its
// length each time; here the symbols stay in place in a doubly linked list
// and each pair keeps the positions (index of its left symbol) where it has
// occurred, so a merge costs the number of its occurrences.  A position
// stays in a list after its pair is gone; merge() skips it.
class LongWord {
   public:
    static constexpr uint32_t kNone = UINT32_MAX;

    explicit LongWord(std::string_view bytes);
    // A word of token ids (SuperBPE's stage 2 starts from tokens).
    LongWord(const uint32_t* ids, size_t n);

    // Calls f(pair key) for every adjacent pair, in order.
    template <class F>
    void for_each_pair(F&& f) const {
        for (uint32_t i = 0; next_[i] != kNone; i = next_[i]) f(pair_key(symbol_[i], symbol_[next_[i]]));
    }

    // Merges every non-overlapping occurrence of (left, right), left to
    // right, into new_id, and reports each change of an adjacent pair's
    // occurrences by calling change(pair key, +1 or -1).
    template <class Change>
    void merge(uint32_t left, uint32_t right, uint32_t new_id, Change&& change);

   private:
    struct Positions {
        uint64_t pair;
        std::vector<uint32_t> at;
    };
    struct PositionsHash {
        uint64_t operator()(const Positions& p) const { return mix64(p.pair); }
    };
    void note(uint64_t pair, uint32_t position);
    template <class Get>
    void init(size_t n, Get&& symbol_at);

    std::vector<uint32_t> symbol_;  // kNone once merged into its left neighbour
    std::vector<uint32_t> next_, prev_;
    HashMap<Positions, PositionsHash> positions_;
    std::vector<uint32_t> work_;
};

template <class Change>
void LongWord::merge(uint32_t left, uint32_t right, uint32_t new_id, Change&& change) {
    const uint64_t key = pair_key(left, right);
    const uint32_t index = positions_.find(mix64(key), [key](const Positions& p) { return p.pair == key; });
    if (index == positions_.kNotFound) return;
    work_.swap(positions_[index].at);
    positions_[index].at.clear();
    // Positions are appended as pairs appear, so later ones may be out of order.
    if (!std::is_sorted(work_.begin(), work_.end())) std::sort(work_.begin(), work_.end());
    for (uint32_t p : work_) {
        const uint32_t q = next_[p];
        if (symbol_[p] != left || q == kNone || symbol_[q] != right) continue;  // gone
        const uint32_t before = prev_[p], after = next_[q];
        if (before != kNone) change(pair_key(symbol_[before], left), -1);
        if (after != kNone) change(pair_key(right, symbol_[after]), -1);
        change(key, -1);
        symbol_[p] = new_id;
        symbol_[q] = kNone;
        next_[p] = after;
        if (after != kNone) prev_[after] = p;
        if (before != kNone) {
            change(pair_key(symbol_[before], new_id), +1);
            note(pair_key(symbol_[before], new_id), before);
        }
        if (after != kNone) {
            change(pair_key(new_id, symbol_[after]), +1);
            note(pair_key(new_id, symbol_[after]), p);
        }
    }
    work_.clear();
}

}  // namespace storygpt
