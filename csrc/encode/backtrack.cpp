#include "encode/backtrack.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "common/common.h"

namespace storygpt {

Backtracker::Backtracker(const MergeTable& table, const std::array<uint32_t, 256>& byte_ids, size_t vocab_size)
    : merges_(table), byte_ids_(byte_ids), ext_(vocab_size), int_(vocab_size), tokens_(vocab_size) {
    for (uint32_t id : byte_ids) tokens_[id].length = 1;
    for (size_t id = 0; id < vocab_size; ++id) ext_[id] = int_[id] = static_cast<uint32_t>(id);
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
    bt->renumber(vocab);
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

// Level by level over the tokens sorted by their bytes: at each length the
// tokens that go on past it are grouped by their node (a node's tokens lie
// together), and each group's next bytes, ascending, are the node's children.
uint32_t Backtracker::place_children(const unsigned char* codes, size_t k, size_t& next_free) {
    size_t pos = std::max<size_t>(next_free, codes[0]), used = 0;
    bool first = true;
    for (;; ++pos) {
        if (nodes_.size() < pos + 257) nodes_.resize(std::max(pos + 257, nodes_.size() * 2));
        if (nodes_[pos].check != kNone) {
            ++used;
            continue;
        }
        if (first) {
            next_free = pos;
            first = false;
        }
        const size_t base = pos - codes[0];
        size_t i = 1;
        while (i < k && nodes_[base + codes[i]].check == kNone) ++i;
        if (i < k) continue;
        if (used * 20 >= (pos - next_free + 1) * 19) next_free = pos;  // a dense stretch: start after it next time
        return static_cast<uint32_t>(base);
    }
}

void Backtracker::build_trie(const std::vector<std::string_view>& vocab) {
    const size_t n = tokens_.size();
    shorter_.assign(n, kNone);
    long_start_.assign(n, 0);
    token_node_.assign(n, kNone);
    two_bytes_.assign(size_t(1) << 16, kNone);
    nodes_.assign(256, Node{kTop, 0, kNone});
    std::vector<uint32_t> ids;  // the reachable tokens of two bytes or more, by bytes
    for (size_t id = 0; id < n; ++id) {
        if (tokens_[id].length < 2) continue;
        ids.push_back(static_cast<uint32_t>(id));
        const auto* p = reinterpret_cast<const unsigned char*>(vocab[id].data());
        shorter_[id] = byte_ids_[p[0]];
        if (vocab[id].size() >= kLongToken) {
            long_start_[id] = static_cast<uint32_t>(long_bytes_.size());
            long_bytes_.append(vocab[id]);
        }
    }
    std::sort(ids.begin(), ids.end(),
              [&](uint32_t a, uint32_t b) { return vocab[a] < vocab[b] || (vocab[a] == vocab[b] && a < b); });
    auto byte_at = [&](uint32_t id, size_t i) { return static_cast<unsigned char>(vocab[id][i]); };
    std::vector<uint32_t> at(ids.size());  // at[k]: the node of ids[k]'s first `len` bytes
    for (size_t k = 0; k < ids.size(); ++k) {
        uint32_t& slot = two_bytes_[byte_at(ids[k], 0) << 8 | byte_at(ids[k], 1)];
        if (slot == kNone) {
            slot = static_cast<uint32_t>(nodes_.size());
            nodes_.push_back(Node{kTop, 0, kNone});
        }
        at[k] = slot;
    }
    size_t next_free = nodes_.size();
    std::vector<unsigned char> codes;
    for (size_t len = 2; !ids.empty(); ++len) {
        for (size_t k = 0; k < ids.size(); ++k)  // the tokens of len bytes name their nodes
            if (vocab[ids[k]].size() == len) {
                Node& node = nodes_[at[k]];
                if (node.token == kNone) node.token = ids[k];  // first id of these bytes (as the merge loop's table)
                token_node_[ids[k]] = at[k];
            }
        size_t kept = 0;
        for (size_t k = 0; k < ids.size(); ++k) {
            if (vocab[ids[k]].size() == len) continue;
            if (nodes_[at[k]].token != kNone) shorter_[ids[k]] = nodes_[at[k]].token;
            ids[kept] = ids[k];
            at[kept++] = at[k];
        }
        ids.resize(kept);
        at.resize(kept);
        for (size_t k = 0; k < ids.size();) {  // one parent's group: its children's bytes, then their slots
            size_t end = k;
            codes.clear();
            for (; end < ids.size() && at[end] == at[k]; ++end)
                if (codes.empty() || codes.back() != byte_at(ids[end], len)) codes.push_back(byte_at(ids[end], len));
            const uint32_t parent = at[k];
            const uint32_t base = place_children(codes.data(), codes.size(), next_free);
            nodes_[parent].base = base;
            for (unsigned char c : codes) nodes_[base + c] = Node{parent, 0, kNone};
            for (; k < end; ++k) at[k] = base + byte_at(ids[k], len);
        }
    }
}

void Backtracker::renumber(const std::vector<std::string_view>& vocab) {
    const size_t n = tokens_.size();
    std::vector<uint32_t> order(n);  // own id -> vocabulary id: reachable ones by length and bytes, the rest after
    for (size_t id = 0; id < n; ++id) order[id] = static_cast<uint32_t>(id);
    auto length = [&](uint32_t id) { return tokens_[id].length == 0 ? SIZE_MAX : vocab[id].size(); };
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
        const size_t la = length(a), lb = length(b);
        if (la != lb) return la < lb;
        return la != SIZE_MAX && vocab[a] != vocab[b] ? vocab[a] < vocab[b] : a < b;
    });
    std::vector<uint32_t> own(n);
    for (size_t k = 0; k < n; ++k) own[order[k]] = static_cast<uint32_t>(k);
    auto map = [&](uint32_t id) { return id == kNone ? kNone : own[id]; };
    std::vector<Token> tokens(n);
    std::vector<uint32_t> shorter(n), long_start(n), token_node(n);
    for (size_t id = 0; id < n; ++id) {
        Token t = tokens_[id];
        t.left = map(t.left);
        t.right = map(t.right);
        tokens[own[id]] = t;
        shorter[own[id]] = map(shorter_[id]);
        long_start[own[id]] = long_start_[id];
        token_node[own[id]] = token_node_[id];
    }
    tokens_.swap(tokens);
    shorter_.swap(shorter);
    long_start_.swap(long_start);
    token_node_.swap(token_node);
    for (Node& node : nodes_) node.token = map(node.token);
    for (uint32_t& id : byte_ids_) id = own[id];
    ext_.swap(order);
    int_.swap(own);
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
        best = hint;
        node = token_node_[hint];
        i = tokens_[hint].length;
    } else {
        if (n == 1) return best;
        node = two_bytes_[p[0] << 8 | p[1]];
        if (node == kNone) return best;
        if (nodes_[node].token != kNone) best = nodes_[node].token;
        i = 2;
    }
    for (; i < n; ++i) {
        node = child(node, p[i]);
        if (node == kNone) break;
        if (nodes_[node].token != kNone) best = nodes_[node].token;
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
        if ((open[end >> 6] >> (end & 63) & 1) && (out.size() == base || valid(out.back(), token))) {
            out.push_back(token);
            pos = end;
            if (pos < n) token = match = longest_match(p + pos, n - pos, match);
        } else {
            token = shorter_[token];
        }
    }
    for (size_t k = base; k < out.size(); ++k) out[k] = ext_[out[k]];  // the vocabulary's ids
}

}  // namespace storygpt
