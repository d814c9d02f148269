// Pre-tokenizing big inputs: on several threads, in batches of pieces, and
// window by window from a stream.  Every path gives exactly the chunks that
// split_chunks gives on each whole ordinary piece.  Pure C++17.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/common.h"
#include "pretokenize/pretokenize.h"
#include "pretokenize/special_tokens.h"

namespace storygpt {

// How far the patterns look past a chunk's end (contractions, `(?!\S)`, `$`,
// a UTF-8 sequence cut in two) is far less than this, so a chunk that ends at
// least kWindowMargin bytes before the end of the text seen so far is final:
// more text cannot change it.  Used by split_chunks_parallel's stitching and
// by stream_chunks.
constexpr size_t kWindowMargin = 64;

// Pre-tokenization unit of split_chunks_parallel within one piece.
constexpr size_t kSegmentBytes = size_t(1) << 16;

// split_chunks on `threads` threads: the text is cut into segments of about
// `segment_bytes` (at least 16), each pre-tokenized with some overlap into the
// next, and neighbours are stitched at a boundary both agree on (one thread
// when they never agree).  Appends exactly what split_chunks appends.
void split_chunks_parallel(std::string_view data, Pattern pattern, int threads, size_t segment_bytes,
                           std::vector<size_t>& ends);

// Consecutive chunks of one ordinary piece: chunk k (for k in [begin, end))
// spans data[k == begin ? first_start : ends[k - 1], ends[k]) of the batch's
// `ends` (offsets relative to the piece's start `data`).
struct ChunkRun {
    const char* data;
    size_t first_start;
    size_t begin, end;
};

// The chunks of some pieces, as runs over one array of chunk ends.
struct ChunkBatch {
    std::vector<ChunkRun> runs;
    std::vector<size_t> ends;
    size_t bytes = 0;  // text bytes consumed to make the runs (special tokens included)

    void clear() {
        runs.clear();
        ends.clear();
        bytes = 0;
    }
    // The runs cut into tasks of at most `max_chunks` chunks each, in order.
    std::vector<ChunkRun> tasks(size_t max_chunks) const;
    // Calls f(chunk) for every chunk of `run` (a run or a task), in order.
    template <class F>
    void for_each_chunk(const ChunkRun& run, F&& f) const {
        size_t start = run.first_start;
        for (size_t k = run.begin; k < run.end; ++k) {
            f(std::string_view(run.data + start, ends[k] - start));
            start = ends[k];
        }
    }
};

// Appends to `batch` one run per non-empty piece with all its chunks; pieces
// are pre-tokenized in parallel, long ones with split_chunks_parallel.
void pretokenize_pieces(const std::vector<std::string_view>& pieces, Pattern pattern, int threads, ChunkBatch& batch);

// Bytes of text per window or batch: enough to keep `threads` threads busy
// (8 segments each, 1 MiB at least), and no more: the chunk ends of a window
// take 8 bytes per chunk, about twice the text.  Measured on 5 MB of
// Shakespeare: 4 MiB windows made the chunk ends most of training's peak
// memory (23 of 43 MB); 1 MiB windows were as fast.
size_t window_bytes_for(int threads);

// Streams a text that arrives in windows: `read(buf, n)` appends up to n bytes
// to buf and returns how many (fewer only at the end).  The text is split
// around the special tokens and pre-tokenized window by window;
// `on_batch(batch)` gets every chunk exactly once, in order, with the chunks
// of a whole-text split: a chunk (or special token) that a window's end may
// cut waits for the next window.  When nothing in a window is final the next
// read doubles it, so one huge chunk costs linear time.  Returns the number
// of bytes read.
template <class Read, class OnBatch>
size_t stream_chunks(Read&& read, const SpecialSplitter& specials, Pattern pattern, int threads, size_t window_bytes,
                     OnBatch&& on_batch) {
    std::string buf;
    ChunkBatch batch;
    std::vector<std::string_view> pieces;
    const size_t longest_special = specials.max_length();
    size_t want = window_bytes, total = 0;
    for (;;) {
        const size_t got = read(buf, want);
        total += got;
        const bool last = got < want;
        const std::string_view text(buf);
        // Ordinary pieces between the special tokens that are final: no
        // longer token starting at the same place can run past the end.
        pieces.clear();
        size_t open = 0;  // start of the piece that may go on in the next window
        for (auto m = specials.find(text, 0); m.start != SpecialSplitter::npos; m = specials.find(text, open)) {
            if (!last && m.start + longest_special > text.size()) break;
            if (m.start > open) pieces.push_back(text.substr(open, m.start - open));
            open = m.start + m.length;
        }
        if (open < text.size()) pieces.push_back(text.substr(open));
        batch.clear();
        pretokenize_pieces(pieces, pattern, threads, batch);
        // The open piece keeps only its final chunks; the rest is read again.
        size_t consumed = last ? text.size() : open;
        if (!last && open < text.size()) {
            ChunkRun& tail = batch.runs.back();
            const size_t hold = kWindowMargin + longest_special, tail_size = text.size() - open;
            const size_t limit = tail_size > hold ? tail_size - hold : 0;
            while (tail.end > tail.begin && batch.ends[tail.end - 1] > limit) --tail.end;
            batch.ends.resize(tail.end);
            if (tail.end > tail.begin) consumed = open + batch.ends[tail.end - 1];
            if (tail.end == tail.begin) batch.runs.pop_back();
        }
        batch.bytes = consumed;
        if (!batch.runs.empty()) on_batch(batch);
        buf.erase(0, consumed);
        if (last) return total;
        want = consumed == 0 ? std::max(window_bytes, buf.size()) : window_bytes;
    }
}

// Calls on_batch(batch) with the chunks of every piece, in order, about
// window_bytes_for(threads) of text at a time; a piece longer than that is
// streamed in windows so that the chunk ends never take more memory than a
// window's.
template <class OnBatch>
void chunk_pieces(const std::vector<std::string_view>& pieces, Pattern pattern, int threads, OnBatch&& on_batch) {
    const size_t window = window_bytes_for(threads);
    const SpecialSplitter none({});
    std::vector<std::string_view> group;
    size_t group_bytes = 0;
    ChunkBatch batch;
    auto flush = [&]() {
        if (group.empty()) return;
        batch.clear();
        pretokenize_pieces(group, pattern, threads, batch);
        batch.bytes = group_bytes;
        on_batch(batch);
        group.clear();
        group_bytes = 0;
    };
    for (std::string_view piece : pieces) {
        if (piece.size() <= window) {
            if (group_bytes + piece.size() > window) flush();
            group.push_back(piece);
            group_bytes += piece.size();
            continue;
        }
        flush();
        size_t pos = 0;
        auto read = [&](std::string& buf, size_t n) {
            const size_t k = std::min(n, piece.size() - pos);
            buf.append(piece.data() + pos, k);
            pos += k;
            return k;
        };
        stream_chunks(read, none, pattern, threads, window, on_batch);
    }
    flush();
}

}  // namespace storygpt
