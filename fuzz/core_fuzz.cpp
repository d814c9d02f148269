// Sanitizer and fuzzing driver of the C++ core (csrc/, no Python).
//
// Built with -fsanitize=address,undefined by fuzz/sanitize.sh.  Each case
// makes a random small vocabulary (random merges over a few bytes, with
// ranks that rise from parts to whole, tie, or fall; ids made by several
// merges; ids that stand for the same bytes) or trains one on random text,
// then checks on random chunks that the backtracking encoder, the encoder's
// merge loop and the plain merge loop below (the oracle: lowest rank first,
// leftmost on ties, as storygpt/tokenizers/bpe_reference.py) give the same
// ids, and that encode, encode_batch, encode_file and decode agree.  A
// difference exits 1; a sanitizer report aborts.
//
//   core_fuzz --quick                 the fixed cases scripts/test.sh runs
//   core_fuzz --seconds S [--seed N]  random cases until S seconds have passed
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "encode/encoder.h"
#include "pretokenize/pretokenize.h"
#include "train/train.h"

using namespace storygpt;

namespace {

struct Stats {
    long vocabularies = 0, refused = 0, chunks = 0, backtracked = 0, files = 0;
};

[[noreturn]] void fail(const std::string& what) {
    std::fprintf(stderr, "core_fuzz: MISMATCH: %s\n", what.c_str());
    std::exit(1);
}

// The merge loop of bpe_reference.Encoder on one chunk: the first merge of a
// pair wins; the lowest rank merges first, the leftmost on ties.
std::vector<uint32_t> oracle(const std::vector<MergeRule>& merges, const std::vector<int64_t>& ranks,
                             const std::string& chunk) {
    std::map<std::pair<int64_t, int64_t>, std::pair<int64_t, int64_t>> table;  // pair -> (rank, new id)
    for (size_t i = 0; i < merges.size(); ++i)
        table.emplace(std::make_pair(merges[i].left, merges[i].right),
                      std::make_pair(ranks.empty() ? int64_t(i) : ranks[i], merges[i].new_id));
    std::vector<int64_t> sym;
    for (unsigned char c : chunk) sym.push_back(c);
    for (;;) {
        size_t best = SIZE_MAX;
        int64_t best_rank = 0, best_id = 0;
        for (size_t i = 0; i + 1 < sym.size(); ++i) {
            auto it = table.find({sym[i], sym[i + 1]});
            if (it != table.end() && (best == SIZE_MAX || it->second.first < best_rank)) {
                best = i;
                best_rank = it->second.first;
                best_id = it->second.second;
            }
        }
        if (best == SIZE_MAX) break;
        sym[best] = best_id;
        sym.erase(sym.begin() + static_cast<ptrdiff_t>(best) + 1);
    }
    return std::vector<uint32_t>(sym.begin(), sym.end());
}

std::string ids_text(const std::vector<uint32_t>& ids) {
    std::string s;
    for (size_t i = 0; i < ids.size() && i < 40; ++i) s += std::to_string(ids[i]) + " ";
    return s;
}

// Random merges over `alphabet`: new ids 256 up (sometimes with a gap, an id
// made again, or a pair repeated); ranks by `rank_mode`: 0 none (position),
// 1 rising from parts to whole with ties, 2 random.
void random_vocabulary(std::mt19937_64& rng, const std::string& alphabet, size_t n_merges, int rank_mode,
                       std::vector<MergeRule>& merges, std::vector<int64_t>& ranks) {
    std::vector<int64_t> ids;
    std::map<int64_t, int64_t> level;
    std::map<int64_t, std::string> bytes;
    for (unsigned char c : alphabet) {
        ids.push_back(c);
        level[c] = -1;
        bytes[c] = std::string(1, static_cast<char>(c));
    }
    int64_t next = 256;
    auto pick = [&] { return ids[rng() % ids.size()]; };
    for (size_t k = 0; k < n_merges; ++k) {
        int64_t a = pick(), b = pick(), id;
        if (merges.size() > 0 && rng() % 8 == 0) {  // a pair made again: same bytes, maybe a new id
            const MergeRule& m = merges[rng() % merges.size()];
            a = m.left;
            b = m.right;
        }
        // an id made again from another split of its bytes, when there is one
        const std::string want = bytes[a] + bytes[b];
        id = -1;
        for (const auto& kv : bytes)
            if (kv.second == want && kv.first >= 256 && rng() % 2 == 0) id = kv.first;
        if (id < 0) {
            if (rng() % 16 == 0) next += 1 + static_cast<int64_t>(rng() % 5);  // an unused id
            id = next++;
            ids.push_back(id);
            bytes[id] = want;
        }
        int64_t rank = std::max(level[a], level[b]) + 1 + static_cast<int64_t>(rng() % 2);
        if (rank_mode == 2) rank = static_cast<int64_t>(rng() % (n_merges + 1));
        if (!level.count(id) || level[id] < rank) level[id] = rank;
        merges.push_back({a, b, id});
        ranks.push_back(rank);
    }
    if (rank_mode == 0) ranks.clear();
}

// A chunk over `alphabet`: uniform, runs, or a short period repeated.
std::string random_chunk(std::mt19937_64& rng, const std::string& alphabet, size_t n) {
    std::string s;
    const int mode = static_cast<int>(rng() % 3);
    if (mode == 0) {
        while (s.size() < n) s += alphabet[rng() % alphabet.size()];
    } else if (mode == 1) {
        while (s.size() < n) s.append(1 + rng() % 40, alphabet[rng() % alphabet.size()]);
    } else {
        std::string period;
        for (size_t k = 1 + rng() % 4; k > 0; --k) period += alphabet[rng() % alphabet.size()];
        while (s.size() < n) s += period;
    }
    s.resize(n);
    return s;
}

using Method = Encoder::ChunkMethod;

std::vector<uint32_t> encode_chunk(const Encoder& enc, const std::string& s, Method method) {
    std::vector<uint32_t> out;
    enc.encode_chunk_uncached(reinterpret_cast<const unsigned char*>(s.data()), s.size(), out, method);
    return out;
}

void check_chunks(std::mt19937_64& rng, const Encoder& enc, const std::vector<MergeRule>& merges,
                  const std::vector<int64_t>& ranks, const std::string& alphabet, int n_chunks, Stats& stats) {
    static const size_t kLengths[] = {1, 2, 3, 7, 30, 65, 200, 700};
    for (int c = 0; c < n_chunks; ++c) {
        const std::string chunk = random_chunk(rng, alphabet, kLengths[rng() % 8]);
        const std::vector<uint32_t> expected = oracle(merges, ranks, chunk);
        const std::vector<uint32_t> loop = encode_chunk(enc, chunk, Method::kMergeLoop);
        const std::vector<uint32_t> back = encode_chunk(enc, chunk, Method::kBacktrack);
        if (loop != expected) fail("merge loop " + ids_text(loop) + "!= oracle " + ids_text(expected));
        if (back != expected) fail("backtrack " + ids_text(back) + "!= oracle " + ids_text(expected));
        std::vector<int64_t> ids(back.begin(), back.end());
        if (enc.decode(ids.data(), ids.size()) != chunk) fail("decode of a chunk");
        ++stats.chunks;
        stats.backtracked += enc.backtrack_refusal().empty();
    }
}

// encode (cached, pre-tokenized), encode_batch on 2 threads and encode_file in
// small windows against the chunk-by-chunk oracle.
void check_texts(std::mt19937_64& rng, const Encoder& enc, const std::vector<MergeRule>& merges,
                 const std::vector<int64_t>& ranks, const std::string& alphabet, Stats& stats) {
    std::vector<std::string> texts;
    for (int k = 0; k < 4; ++k) texts.push_back(random_chunk(rng, alphabet + " \n", rng() % 600));
    std::vector<std::string_view> views(texts.begin(), texts.end());
    std::vector<uint32_t> all_expected;
    std::vector<std::vector<uint32_t>> expected;
    for (const std::string& t : texts) {
        std::vector<size_t> ends;
        split_chunks(t, enc.pattern(), ends);
        std::vector<uint32_t> ids;
        size_t start = 0;
        for (size_t end : ends) {
            const std::vector<uint32_t> part = oracle(merges, ranks, t.substr(start, end - start));
            ids.insert(ids.end(), part.begin(), part.end());
            start = end;
        }
        std::vector<uint32_t> got;
        enc.encode(t, got);
        if (got != ids) fail("encode " + ids_text(got) + "!= oracle " + ids_text(ids));
        all_expected.insert(all_expected.end(), ids.begin(), ids.end());
        expected.push_back(std::move(ids));
    }
    std::vector<uint32_t> batch_ids;
    std::vector<int64_t> offsets;
    enc.encode_batch(views, 2, batch_ids, offsets);
    for (size_t k = 0; k < texts.size(); ++k)
        if (std::vector<uint32_t>(batch_ids.begin() + offsets[k], batch_ids.begin() + offsets[k + 1]) != expected[k])
            fail("encode_batch of text " + std::to_string(k));
    // encode_file of the texts joined, in windows of 1-64 bytes
    std::string joined;
    for (const std::string& t : texts) joined += t;
    std::vector<uint32_t> whole;
    enc.encode(joined, whole);
    char path[] = "/tmp/core_fuzz.XXXXXX";
    const int fd = mkstemp(path);
    if (fd < 0 || write(fd, joined.data(), joined.size()) != static_cast<ssize_t>(joined.size())) fail("temp file");
    close(fd);
    std::vector<uint32_t> streamed;
    enc.encode_file(path, 1 + static_cast<int>(rng() % 2), 1 + rng() % 64, streamed);
    unlink(path);
    if (streamed != whole) fail("encode_file " + ids_text(streamed) + "!= encode " + ids_text(whole));
    ++stats.files;
}

void random_case(std::mt19937_64& rng, Stats& stats, int n_chunks) {
    static const std::string kAlphabets[] = {"ab", "abc", "abcd", " a", "\xc3\xa9z", "0123"};
    const std::string& alphabet = kAlphabets[rng() % 6];
    std::vector<MergeRule> merges;
    std::vector<int64_t> ranks;
    const int rank_mode = static_cast<int>(rng() % 4 == 0 ? 2 : rng() % 2);
    random_vocabulary(rng, alphabet, 1 + rng() % 120, rank_mode, merges, ranks);
    const Encoder enc(merges, std::nullopt, Pattern::Simple,
                      ranks.empty() ? std::nullopt : std::optional<std::vector<int64_t>>(ranks));
    ++stats.vocabularies;
    stats.refused += !enc.backtrack_refusal().empty();
    check_chunks(rng, enc, merges, ranks, alphabet, n_chunks, stats);
}

// Texts counted from one padded buffer (TextBatch) count as each text on its own.
void check_text_batch(const std::vector<std::string_view>& texts, Pattern pattern, int threads) {
    ChunkCounter each(pattern, {"\n\n"}, threads), batched(pattern, {"\n\n"}, threads);
    each.add_texts(texts);
    TextBatch batch;
    for (std::string_view t : texts) batch.add(t);
    batched.add_texts(batch);
    auto counts = [](ChunkCounter& c) {
        std::map<std::string, int64_t> m;
        for (const ChunkCounts& shard : c.shards())
            shard.for_each([&](std::string_view chunk, int64_t n) { m[std::string(chunk)] += n; });
        return m;
    };
    if (counts(each) != counts(batched)) fail("TextBatch counts differ from add_texts on the same texts");
}

void trained_case(std::mt19937_64& rng, Stats& stats, int n_chunks) {
    const std::string alphabet = rng() % 2 ? "abc " : "ab\xc3\xa9 \n";
    std::vector<std::string> texts;
    for (int k = 0; k < 20; ++k) texts.push_back(random_chunk(rng, alphabet, 1 + rng() % 300));
    std::vector<std::string_view> views(texts.begin(), texts.end());
    TrainOptions options;
    options.vocab_size = 256 + 20 + static_cast<int64_t>(rng() % 200);
    options.pattern = rng() % 2 ? Pattern::Simple : Pattern::GPT2;
    options.tie_break = rng() % 2 ? TieBreak::SmallestIds : TieBreak::LargestBytes;
    options.num_threads = 1 + static_cast<int>(rng() % 2);
    const std::vector<Merge> learned = train(views, {}, options);
    std::vector<std::string_view> short_views(views);
    for (std::string_view& v : short_views) v = v.substr(0, rng() % 24);  // many ends within 16 bytes
    check_text_batch(short_views, options.pattern, options.num_threads);
    std::vector<MergeRule> merges;
    for (size_t i = 0; i < learned.size(); ++i)
        merges.push_back({learned[i].first, learned[i].second, static_cast<int64_t>(256 + i)});
    const Encoder enc(merges, std::nullopt, options.pattern, std::nullopt);
    ++stats.vocabularies;
    if (!enc.backtrack_refusal().empty()) fail("trained vocabulary refused: " + enc.backtrack_refusal());
    check_chunks(rng, enc, merges, {}, alphabet, n_chunks, stats);
    check_texts(rng, enc, merges, {}, alphabet, stats);
}

// Inputs the constructor must refuse with std::invalid_argument.
void bad_inputs() {
    const std::vector<std::vector<MergeRule>> bad = {
        {{97, 98, int64_t(1) << 40}},  // a huge id
        {{97, 98, 5'000'000}},         // far beyond the vocabulary
        {{97, 300, 256}},              // a part not defined
        {{97, 98, 256}, {98, 97, 256}},
        {{-1, 98, 256}},
    };
    for (const auto& merges : bad) {
        try {
            Encoder enc(merges, std::nullopt, Pattern::Simple, std::nullopt);
            fail("accepted bad merges starting with new id " + std::to_string(merges[0].new_id));
        } catch (const std::invalid_argument&) {
        }
    }
}

// A long token made by two merges (the case that once built in quadratic time).
void long_token_case(Stats& stats) {
    std::vector<MergeRule> merges = {{'a', 'a', 256}};
    int64_t id = 256;
    for (int k = 0; k < 10; ++k, ++id) merges.push_back({id, id, id + 1});  // a * 2**11
    merges.push_back({'b', id, id + 1});                                    // b a^2048
    merges.push_back({'b', 'a', id + 2});
    merges.push_back({id + 2, id, id + 3});  // b a^2049 two ways
    merges.push_back({id + 1, 'a', id + 3});
    const Encoder enc(merges, std::nullopt, Pattern::Simple, std::nullopt);
    std::mt19937_64 rng(1);
    check_chunks(rng, enc, merges, {}, "ab", 20, stats);
}

}  // namespace

int main(int argc, char** argv) {
    double seconds = 0;
    uint64_t seed = 1;
    bool quick = false;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--quick")) {
            quick = true;
        } else if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc) {
            seconds = std::atof(argv[++i]);
        } else if (!std::strcmp(argv[i], "--seed") && i + 1 < argc) {
            seed = std::strtoull(argv[++i], nullptr, 10);
        } else {
            std::fprintf(stderr, "usage: core_fuzz --quick | --seconds S [--seed N]\n");
            return 2;
        }
    }
    if (!quick && seconds <= 0) {
        std::fprintf(stderr, "usage: core_fuzz --quick | --seconds S [--seed N]\n");
        return 2;
    }
    Stats stats;
    bad_inputs();
    long_token_case(stats);
    std::mt19937_64 rng(seed);
    const auto start = std::chrono::steady_clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
    if (quick) {
        for (int k = 0; k < 60; ++k) random_case(rng, stats, 12);
        for (int k = 0; k < 6; ++k) trained_case(rng, stats, 12);
    } else {
        for (long k = 0; elapsed() < seconds; ++k)
            if (k % 8 == 7)
                trained_case(rng, stats, 20);
            else
                random_case(rng, stats, 20);
    }
    std::printf(
        "core_fuzz: %.1f s, %ld vocabularies (%ld refused by the backtracker), %ld chunks (%ld backtracked), %ld "
        "streamed files: no mismatch\n",
        elapsed(), stats.vocabularies, stats.refused, stats.chunks, stats.backtracked, stats.files);
    return 0;
}
