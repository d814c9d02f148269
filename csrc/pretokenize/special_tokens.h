// Special tokens: cutting a text into the ordinary pieces between them.
// Pure C++17 (no Python types).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace storygpt {

// Splits text around special tokens exactly like bpe_reference.split_special:
// scanning left to right, at each position the longest special token that
// starts there wins.  Empty and repeated special tokens are ignored.
class SpecialSplitter {
   public:
    struct Match {
        size_t start;    // offset of the special token; npos if none
        size_t length;   // its length in bytes
        uint32_t index;  // which special token (order of the distinct, longest-first list)
    };
    static constexpr size_t npos = static_cast<size_t>(-1);

    explicit SpecialSplitter(const std::vector<std::string>& specials);
    bool empty() const { return specials_.empty(); }
    // Length of the longest special token (0 when there is none).
    size_t max_length() const { return specials_.empty() ? 0 : specials_.front().size(); }

    // The first special token that starts at or after `from`.  A match at
    // `start` is final only if start + max_length() <= data.size() or
    // `data` is the whole text (a longer token might continue past the end).
    Match find(std::string_view data, size_t from) const;

    // Calls on_plain(piece) for every non-empty ordinary piece and
    // on_special(index) for every special token, in order.
    template <class Plain, class Special>
    void split(std::string_view data, Plain&& on_plain, Special&& on_special) const {
        size_t start = 0;
        for (Match m = find(data, 0); m.start != npos; m = find(data, start)) {
            if (m.start > start) on_plain(data.substr(start, m.start - start));
            on_special(m.index);
            start = m.start + m.length;
        }
        if (start < data.size()) on_plain(data.substr(start));
    }

   private:
    std::vector<std::string> specials_;                // distinct, longest first
    std::array<std::vector<uint32_t>, 256> by_first_;  // indices into specials_, longest first
};

// The non-empty ordinary pieces of `texts` (views into them): each text is
// split around the special tokens, which are dropped.
std::vector<std::string_view> ordinary_pieces(const std::vector<std::string_view>& texts,
                                              const SpecialSplitter& specials);

}  // namespace storygpt
