// A merge, and the pair -> merge table of the encoder.  Pure C++17.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace storygpt {

// One merge of a vocabulary: (left, right) -> new_id.
struct MergeRule {
    int64_t left, right, new_id;
};

// pair_key(left, right) -> its merge (rank index << 32 | new id), with the
// pair and its merge inline in the slots (linear probing, at most half
// full): a look-up reads one slot, usually one cache line.  The encoder's
// innermost operation; measured against HashMap (slot -> index -> entry, two
// dependent reads) in the loop of encode_short: see docs/performance.md.
class MergeTable {
   public:
    static constexpr uint64_t kNoMerge = ~uint64_t(0);  // what find() returns for a pair that does not merge

    explicit MergeTable(size_t pairs) {
        unsigned bits = 4;
        while ((size_t(1) << bits) < 2 * pairs) ++bits;
        slots_.assign(size_t(1) << bits, Slot{kEmpty, kNoMerge});
        mask_ = slots_.size() - 1;
        shift_ = 64 - bits;
    }

    // Adds pair -> merge unless the pair is there: the first merge of a pair
    // wins, as in the reference (dict.setdefault).
    void insert_first(uint64_t pair, uint64_t merge) {
        size_t i = index(pair);
        while (slots_[i].pair != kEmpty && slots_[i].pair != pair) i = (i + 1) & mask_;
        if (slots_[i].pair == kEmpty) slots_[i] = Slot{pair, merge};
    }

    uint64_t find(uint64_t pair) const {
        for (size_t i = index(pair);; i = (i + 1) & mask_) {
            const Slot& s = slots_[i];
            if (s.pair == pair || s.pair == kEmpty) return s.merge;  // kNoMerge in empty slots
        }
    }

   private:
    static constexpr uint64_t kEmpty = ~uint64_t(0);  // no pair: ids are below 2**26
    struct Slot {
        uint64_t pair, merge;
    };
    size_t index(uint64_t pair) const { return (pair * 0x9E3779B97F4A7C15ULL) >> shift_; }
    std::vector<Slot> slots_;
    size_t mask_;
    unsigned shift_;
};

}  // namespace storygpt
