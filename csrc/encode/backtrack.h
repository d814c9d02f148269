// Pays on: benchmarks/long_chunks.py, Chinese/Russian text cut in 65 B-100 kB chunks: 2.1-5.8x the merge loop;
// whole texts: within noise; runs of one byte: up to 310x (docs/performance.md, "What the special paths earn").
// Linear-time encoding of long chunks: the backtracking BPE encoder (the idea
// of GitHub's `bpe` crate).  Pure C++17.
//
// Why it gives the merge loop's ids.  Call a token *reachable* when the merge
// loop on its own bytes gives that token back, and a pair of tokens (a, b)
// *valid* when the merge loop on bytes(a) + bytes(b) gives [a, b].  The merge
// loop's output on any text is the one sequence of reachable tokens that
// spells the text with every adjacent pair valid (a merge never crosses the
// border between two output tokens, so every prefix of the output is the
// output of its own bytes; appending a token to a prefix's output keeps it the
// output exactly when the new adjacent pair is valid).  So any search for such
// a sequence finds the merge loop's ids.  The search here: at each position
// the longest reachable token first, then ever shorter prefixes of it; a
// token is accepted when it forms a valid pair with the previous one; when
// none fits, the previous token is taken back.  The tokens before a position
// are always that position's prefix output (unique), so a position from which
// no token worked can never start a token: a bitset marks it and the search
// skips tokens that end there, which keeps it linear in practice.
//
// Deciding a pair without re-encoding needs every merge of a token's merge
// tree (the merges that build it from its bytes) to rank strictly above the
// merges of its two parts; then each side's merges happen in rank order and
// the pair's two trees can be unwound from the top (see valid_pair).  build()
// checks this for every reachable token and refuses vocabularies without it
// (random or tied ranks); the merge loop then stays in use.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/common.h"
#include "encode/merge_table.h"

namespace storygpt {

class Backtracker {
   public:
    // The encoder's vocabulary: its merges (the rules, and the pair table,
    // kept by reference: it must outlive the Backtracker), byte_ids[b] = the
    // id of byte b, vocab[id] = the bytes of id (empty for an undefined id).
    // Returns nullptr and sets *why when a reachable token's merge ranks no
    // higher than one of its parts' merges, or the vocabulary and its bytes
    // come to 2**24 or more.
    static std::unique_ptr<Backtracker> build(const MergeTable& table, const std::vector<MergeRule>& merges,
                                              const std::array<uint32_t, 256>& byte_ids,
                                              const std::vector<std::string_view>& vocab, std::string* why);

    // Appends the merge loop's ids of the chunk p[0, n) to `out`.
    void encode(const unsigned char* p, size_t n, std::vector<uint32_t>& out) const;

    // True when the merge loop on bytes(a) + bytes(b) gives [a, b]; a and b
    // must be reachable tokens.
    bool valid_pair(uint32_t a, uint32_t b) const { return valid(int_[a], int_[b]); }

   private:
    static constexpr uint32_t kNone = UINT32_MAX;

    struct Token {                             // 16 bytes: never split across two cache lines
        uint32_t left = kNone, right = kNone;  // the last merge of its merge tree (kNone for a byte)
        uint32_t order = 0;                    // that merge's rank + 1; 0 for a byte
        uint32_t length = 0;                   // bytes; 0 for an unreachable or undefined id
    };

    Backtracker(const MergeTable& table, const std::array<uint32_t, 256>& byte_ids, size_t vocab_size);
    // Fills tokens_[id] for the reachable ids; false (and *why) when the
    // merge trees are not ranked bottom-up.  Linear in the merges and ids
    // (plus the spines of merge trees that border_holds walks).
    bool find_trees(const std::vector<MergeRule>& merges, const std::vector<std::string_view>& vocab, std::string* why);
    void build_trie(const std::vector<std::string_view>& vocab);

    // merges_.find, behind a blocked Bloom filter of the merged pairs: one
    // 64-bit word per pair (the top bits of one hash), two bits in it (the
    // top bits of another); 16 bits per pair, 512 KiB for cl100k's 233k merges.
    // Most pairs that the search asks about do not merge.  Two bits in one
    // word instead of one bit (same size, same one load): fewer false hits,
    // hence fewer probes of the 8 MiB merge table; 100,000 random letters
    // with cl100k ~8% faster (docs/performance.md, "Pathological inputs").
    // Takes the Backtracker's own ids (see renumber).
    uint64_t find(uint32_t left, uint32_t right) const {
        const uint64_t key = pair_key(ext_[left], ext_[right]);
        const uint64_t mask = filter_mask(key);
        if ((pair_filter_[filter_word(key)] & mask) != mask) return MergeTable::kNoMerge;
        return merges_.find(key);
    }
    size_t filter_word(uint64_t key) const { return (key * 0xD6E8FEB86659FD93ULL) >> filter_shift_; }
    static uint64_t filter_mask(uint64_t key) {
        const uint64_t h = key * 0xC2B2AE3D27D4EB4FULL;  // bits 52-63 only: they depend on all of key
        return uint64_t(1) << (h >> 58) | uint64_t(1) << (h >> 52 & 63);
    }
    void build_pair_filter(const std::vector<MergeRule>& merges);

    // valid_pair on the Backtracker's own ids.
    bool valid(uint32_t a, uint32_t b) const { return find(a, b) == MergeTable::kNoMerge && border_holds(a, b); }
    // Gives the tokens ids of their own, in order of length and then bytes,
    // so that the tokens a text uses lie together in tokens_ and shorter_
    // (the short ones of random letters in some 100 KiB instead of spread
    // over the vocabulary's 1.6 MiB); encode maps them back (ext_).
    void renumber(const std::vector<std::string_view>& vocab);
    // True when the merge loop on bytes(a) + bytes(b) never merges across
    // their border before it has made a and b.
    bool border_holds(uint32_t a, uint32_t b) const;
    // The longest reachable token that p[0, n) starts with (n >= 1).  When p
    // starts with `hint` (the previous answer, in runs the same again) and it
    // is long, a comparison replaces the walk down to it.
    uint32_t longest_match(const unsigned char* p, size_t n, uint32_t hint) const;
    static constexpr uint32_t kLongToken = 6;  // bytes; from here on tokens keep their bytes for the hint

    const MergeTable& merges_;
    std::array<uint32_t, 256> byte_ids_;
    std::vector<uint32_t> ext_, int_;   // own id -> the vocabulary's, and back
    std::vector<Token> tokens_;         // by (own) id
    std::vector<uint32_t> shorter_;     // by id: the longest reachable token that is a proper prefix
    std::vector<uint32_t> long_start_;  // by id, tokens of kLongToken bytes or more: where long_bytes_ holds them
    std::string long_bytes_;
    std::vector<uint64_t> pair_filter_;
    unsigned filter_shift_ = 0;
    // A byte trie of the reachable tokens.  The nodes of one byte are the
    // byte ids, those of two bytes in an array (two_bytes_), deeper ones in a
    // double array (Aoe 1989): node s's child for byte c is slot
    // nodes_[s].base + c when that slot's check is s.  Slots are given out
    // level by level (breadth first), so the few thousand nodes of three to
    // five bytes that most look-ups pass lie together in some 100 KiB instead
    // of spread over a hash table of 8 MiB: the walk's loads hit L2 (random
    // letters with cl100k: docs/performance.md, "Pathological inputs").
    struct Node {
        uint32_t check = kNone;  // the parent's slot; kNone: free; kTop: a node of two bytes (or slots 0-255)
        uint32_t base = 0;       // 0: no children (slots 0-255 are never children)
        uint32_t token = kNone;  // the reachable token this node spells, or kNone
    };
    static constexpr uint32_t kTop = UINT32_MAX - 1;
    uint32_t child(uint32_t node, unsigned char byte) const {
        const uint32_t slot = nodes_[node].base + byte;
        return nodes_[slot].check == node ? slot : kNone;
    }
    // Gives the children (bytes `codes`, ascending, k >= 1) slots that are
    // free; returns their base.  `next_free`: where the search starts (first
    // fit from the lowest free slot, moved on past dense stretches).
    uint32_t place_children(const unsigned char* codes, size_t k, size_t& next_free);
    std::vector<Node> nodes_;           // at least base + 256 slots for every base
    std::vector<uint32_t> two_bytes_;   // [b0 << 8 | b1] -> slot, or kNone
    std::vector<uint32_t> token_node_;  // by id, tokens of kLongToken bytes or more: their slot
};

}  // namespace storygpt
