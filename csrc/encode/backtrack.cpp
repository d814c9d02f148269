#include "encode/backtrack.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "common/common.h"

namespace storygpt {

Backtracker::Backtracker(const MergeTable& table, const std::array<uint32_t, 256>& byte_ids, size_t vocab_size)
    : merges_(table), byte_ids_(byte_ids), tokens_(vocab_size) {
    for (uint32_t id : byte_ids) tokens_[id].length = 1;
}

std::unique_ptr<Backtracker> Backtracker::build(const MergeTable& table, const std::vector<MergeRule>& merges,
                                                const std::array<uint32_t, 256>& byte_ids,
                                                const std::vector<std::string_view>& vocab, std::string* why) {
    size_t total_bytes = 0;
    for (auto v : vocab) total_bytes += v.size();
    if (vocab.size() + total_bytes + 2 >= (size_t(1) << 24)) {
        *why = "the vocabulary's ids and bytes come to 2**24 or more";
        return nullptr;
    }
    std::unique_ptr<Backtracker> bt(new Backtracker(table, byte_ids, vocab.size()));
    bt->build_pair_filter(merges);
    if (!bt->find_trees(merges, vocab, why)) return nullptr;
    bt->build_trie(vocab);
    return bt;
}

void Backtracker::build_pair_filter(const std::vector<MergeRule>& merges) {
    unsigned bits = 12;
    while ((size_t(1) << bits) < 16 * merges.size()) ++bits;
    pair_filter_.assign((size_t(1) << bits) / 64, 0);
    filter_shift_ = 64 - (bits - 6);  // filter_word: the top bits - 6 bits of its hash
    for (const MergeRule& m : merges) {
        const uint64_t key = pair_key(static_cast<uint32_t>(m.left), static_cast<uint32_t>(m.right));
        pair_filter_[filter_word(key)] |= filter_mask(key);
    }
}

// The merge loop on a token's bytes ends in that token exactly when one of
// the merges that make it, (left, right), has reachable parts, is the merge
// of its pair in the table, and the loop on the two parts' bytes never merges
// across their border (border_holds; the loop then makes left and right and
// merges them last).  The loop is deterministic, so at most one merge of a
// token passes.  Tokens go in order of length, so that their parts are
// decided first; each merge is looked at once, and border_holds walks two
// spines of merge trees: no merge loop on any token's bytes, so a long token
// (or one made by several merges, as in rank files) costs no more than the
// depth of its parts' trees.
bool Backtracker::find_trees(const std::vector<MergeRule>& merges, const std::vector<std::string_view>& vocab,
                             std::string* why) {
    const size_t n = tokens_.size();
    // merges_of[first[id], first[id + 1]): the merges that make id, in list order (counting sort)
    std::vector<uint32_t> first(n + 1, 0), merges_of(merges.size());
    for (const MergeRule& m : merges) ++first[m.new_id + 1];
    for (size_t id = 0; id < n; ++id) first[id + 1] += first[id];
    {
        std::vector<uint32_t> next(first.begin(), first.end() - 1);
        for (size_t k = 0; k < merges.size(); ++k) merges_of[next[merges[k].new_id]++] = static_cast<uint32_t>(k);
    }
    // the ids of two bytes or more, shortest first (counting sort by length)
    size_t longest = 0;
    for (const auto& v : vocab) longest = std::max(longest, v.size());
    std::vector<uint32_t> start(longest + 2, 0), by_length;
    for (size_t id = 0; id < n; ++id)
        if (first[id + 1] > first[id]) ++start[vocab[id].size() + 1];
    for (size_t len = 0; len <= longest; ++len) start[len + 1] += start[len];
    by_length.resize(start[longest + 1]);
    for (size_t id = 0; id < n; ++id)
        if (first[id + 1] > first[id]) by_length[start[vocab[id].size()]++] = static_cast<uint32_t>(id);
    for (uint32_t id : by_length) {
        for (uint32_t k = first[id]; k < first[id + 1]; ++k) {
            const MergeRule& m = merges[merges_of[k]];
            const auto left = static_cast<uint32_t>(m.left), right = static_cast<uint32_t>(m.right);
            if (tokens_[left].length == 0 || tokens_[right].length == 0) continue;
            const uint64_t merge = find(left, right);
            if (static_cast<uint32_t>(merge) != id || !border_holds(left, right)) continue;
            const uint32_t order = static_cast<uint32_t>(merge >> 32) + 1;
            if (order <= tokens_[left].order || order <= tokens_[right].order) {
                *why = "token " + std::to_string(id) + " is merged at a rank not above its parts' ranks";
                return false;
            }
            tokens_[id] = Token{left, right, order, tokens_[left].length + tokens_[right].length};
            break;
        }
    }
    return true;
}

// Tokens in order of length, so that a token's prefixes that are tokens are
// nodes already (numbered with their ids) when it is added.
void Backtracker::build_trie(const std::vector<std::string_view>& vocab) {
    std::vector<std::vector<uint32_t>> by_length;
    size_t deep_edges = 0;
    for (size_t id = 0; id < tokens_.size(); ++id) {
        const uint32_t len = tokens_[id].length;
        if (len < 2) continue;
        if (by_length.size() <= len) by_length.resize(len + 1);
        by_length[len].push_back(static_cast<uint32_t>(id));
        deep_edges += len - 2;
    }
    first_inner_node_ = static_cast<uint32_t>(tokens_.size());
    shorter_.assign(tokens_.size(), kNone);
    long_start_.assign(tokens_.size(), 0);
    two_bytes_.assign(size_t(1) << 16, kNone);
    unsigned bits = 4;
    while ((size_t(1) << bits) < 2 * deep_edges + 2) ++bits;
    edges_.assign(size_t(1) << bits, Edge{kNoEdge, kNone});
    edge_mask_ = edges_.size() - 1;
    edge_shift_ = 32 - bits;
    uint32_t next_inner = first_inner_node_;
    for (const auto& ids : by_length) {
        for (uint32_t id : ids) {
            const auto* p = reinterpret_cast<const unsigned char*>(vocab[id].data());
            const size_t len = vocab[id].size();
            if (len >= kLongToken) {
                long_start_[id] = static_cast<uint32_t>(long_bytes_.size());
                long_bytes_.append(vocab[id]);
            }
            uint32_t& shorter = shorter_[id];
            shorter = byte_ids_[p[0]];
            uint32_t& second = two_bytes_[p[0] << 8 | p[1]];
            if (len == 2) {
                second = id;
                continue;
            }
            if (second == kNone) second = next_inner++;
            uint32_t node = second;
            for (size_t i = 2; i < len; ++i) {
                if (node < first_inner_node_) shorter = node;
                const uint32_t key = node << 8 | p[i];
                size_t slot = edge_index(node, p[i]);
                while (edges_[slot].key != kNoEdge && edges_[slot].key != key) slot = (slot + 1) & edge_mask_;
                if (edges_[slot].key == kNoEdge) edges_[slot] = Edge{key, i + 1 == len ? id : next_inner++};
                node = edges_[slot].child;
            }
        }
    }
}

// Unwinds the two merge trees from the top, in the reverse of the order in
// which the merge loop on bytes(a) + bytes(b) would build them, keeping the
// pair (x, y) that meets at the border.  Each side's merges come in rank
// order (the trees are ranked bottom-up), ties going to the left side first,
// so the merge that made whichever of x and y has the higher rank (y on a
// tie) was the later one.  Just before it, the pair (x, y) of that moment
// would have merged instead if its rank were lower than that merge's (x's
// side: it would be the lowest pair of the text), or lower or equal (y's
// side: it lies left of y's parts).
bool Backtracker::border_holds(uint32_t a, uint32_t b) const {
    uint32_t x = a, y = b;
    for (;;) {
        const uint32_t ox = tokens_[x].order, oy = tokens_[y].order;
        if (ox > oy) {
            x = tokens_[x].right;
            const uint64_t m = find(x, y);
            if (m != MergeTable::kNoMerge && (m >> 32) + 1 < ox) return false;
        } else if (oy > 0) {
            y = tokens_[y].left;
            const uint64_t m = find(x, y);
            if (m != MergeTable::kNoMerge && (m >> 32) + 1 <= oy) return false;
        } else {
            return true;  // down to two bytes
        }
    }
}

uint32_t Backtracker::longest_match(const unsigned char* p, size_t n, uint32_t hint) const {
    uint32_t best = byte_ids_[p[0]], node;
    size_t i;
    if (hint != kNone && tokens_[hint].length >= kLongToken && tokens_[hint].length <= n &&
        std::memcmp(p, long_bytes_.data() + long_start_[hint], tokens_[hint].length) == 0) {
        best = node = hint;
        i = tokens_[hint].length;
    } else {
        if (n == 1) return best;
        node = two_bytes_[p[0] << 8 | p[1]];
        if (node == kNone) return best;
        if (node < first_inner_node_) best = node;
        i = 2;
    }
    for (; i < n; ++i) {
        node = deep_child(node, p[i]);
        if (node == kNone) break;
        if (node < first_inner_node_) best = node;
    }
    return best;
}

void Backtracker::encode(const unsigned char* p, size_t n, std::vector<uint32_t>& out) const {
    const size_t base = out.size();
    std::vector<uint64_t> open((n >> 6) + 1, ~uint64_t(0));  // bit i: a token may start at i
    size_t pos = 0;
    uint32_t match = n > 0 ? longest_match(p, n, kNone) : kNone, token = match;
    while (pos < n) {
        if (token == kNone) {  // nothing fits at pos: close it, take the previous token back
            if (out.size() == base) throw std::logic_error("backtracking encoder: no encoding found");
            open[pos >> 6] &= ~(uint64_t(1) << (pos & 63));
            const uint32_t last = out.back();
            out.pop_back();
            pos -= tokens_[last].length;
            token = shorter_[last];
            continue;
        }
        const size_t end = pos + tokens_[token].length;
        if ((open[end >> 6] >> (end & 63) & 1) && (out.size() == base || valid_pair(out.back(), token))) {
            out.push_back(token);
            pos = end;
            if (pos < n) token = match = longest_match(p + pos, n - pos, match);
        } else {
            token = shorter_[token];
        }
    }
}

}  // namespace storygpt
