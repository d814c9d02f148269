#include "train/long_word.h"

#include <stdexcept>

namespace storygpt {

template <class Get>
void LongWord::init(size_t n, Get&& symbol_at) {
    if (n >= kNone) throw std::length_error("training: a chunk of 4 GiB or more");
    symbol_.resize(n);
    next_.resize(n);
    prev_.resize(n);
    for (size_t i = 0; i < n; ++i) {
        symbol_[i] = symbol_at(i);
        next_[i] = i + 1 < n ? static_cast<uint32_t>(i + 1) : kNone;
        prev_[i] = i > 0 ? static_cast<uint32_t>(i - 1) : kNone;
    }
    for (uint32_t i = 0; i + 1 < n; ++i) note(pair_key(symbol_[i], symbol_[i + 1]), i);
}

LongWord::LongWord(std::string_view bytes) {
    init(bytes.size(), [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])); });
}

LongWord::LongWord(const uint32_t* ids, size_t n) {
    init(n, [&](size_t i) { return ids[i]; });
}

void LongWord::note(uint64_t pair, uint32_t position) {
    bool inserted;
    const uint32_t index = positions_.find_or_insert(
        mix64(pair), [pair](const Positions& p) { return p.pair == pair; }, [pair]() { return Positions{pair, {}}; },
        inserted);
    positions_[index].at.push_back(position);
}

}  // namespace storygpt
