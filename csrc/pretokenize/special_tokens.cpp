#include "pretokenize/special_tokens.h"

#include <algorithm>

namespace storygpt {

SpecialSplitter::SpecialSplitter(const std::vector<std::string>& specials) {
    for (const auto& s : specials)
        if (!s.empty() && std::find(specials_.begin(), specials_.end(), s) == specials_.end()) specials_.push_back(s);
    std::stable_sort(specials_.begin(), specials_.end(),
                     [](const std::string& x, const std::string& y) { return x.size() > y.size(); });
    for (uint32_t k = 0; k < specials_.size(); ++k) by_first_[static_cast<unsigned char>(specials_[k][0])].push_back(k);
}

SpecialSplitter::Match SpecialSplitter::find(std::string_view data, size_t from) const {
    if (specials_.empty()) return Match{npos, 0, 0};
    const size_t n = data.size();
    for (size_t i = from; i < n; ++i) {
        for (uint32_t k : by_first_[static_cast<unsigned char>(data[i])]) {
            const std::string& s = specials_[k];
            if (s.size() <= n - i && data.compare(i, s.size(), s) == 0) return Match{i, s.size(), k};
        }
    }
    return Match{npos, 0, 0};
}

std::vector<std::string_view> ordinary_pieces(const std::vector<std::string_view>& texts,
                                              const SpecialSplitter& specials) {
    std::vector<std::string_view> pieces;
    for (std::string_view text : texts)
        specials.split(text, [&](std::string_view piece) { pieces.push_back(piece); }, [](uint32_t) {});
    return pieces;
}

}  // namespace storygpt
