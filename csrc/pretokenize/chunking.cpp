#include "pretokenize/chunking.h"

#include <algorithm>

namespace storygpt {

void split_chunks_parallel(std::string_view data, Pattern pattern, int threads, size_t segment_bytes,
                           std::vector<size_t>& ends) {
    const size_t n = data.size();
    segment_bytes = std::max<size_t>(segment_bytes, 16);
    if (threads <= 1 || n < 2 * segment_bytes) {
        split_chunks(data, pattern, ends);
        return;
    }
    // Each segment's view runs `overlap` bytes into the next segment; more
    // than the margin, so a stitching point can always be trusted.
    const size_t overlap = std::max<size_t>(4 * kWindowMargin, std::min<size_t>(size_t(1) << 16, segment_bytes / 4));
    const size_t n_segments = std::min<size_t>(n / segment_bytes, static_cast<size_t>(threads) * 4);
    std::vector<size_t> segment_start(n_segments + 1), view_end(n_segments);
    for (size_t k = 0; k <= n_segments; ++k) segment_start[k] = n * k / n_segments;
    std::vector<std::vector<size_t>> part(n_segments);
    parallel_for(n_segments, threads, [&](size_t k, size_t) {
        const size_t s = segment_start[k];
        view_end[k] = k + 1 == n_segments ? n : std::min(n, segment_start[k + 1] + overlap);
        split_chunks(data.substr(s, view_end[k] - s), pattern, part[k]);
        for (auto& e : part[k]) e += s;
    });
    // Stitch: segment k's chunks are exact from a true boundary `start` up to
    // kWindowMargin before its view's end (all of them if the view reaches
    // the end of the text); the first of them at or after both `start` and
    // the next segment's start that is also a boundary of the next segment
    // (or that start itself) is a true boundary from which the next
    // segment's chunks are exact. With small segments `start` can lie past
    // the next segment's start: searching from there keeps `start` from
    // moving backwards (which wrote chunk ends twice).
    const size_t first = ends.size();
    size_t start = 0;
    for (size_t k = 0; k < n_segments; ++k) {
        const std::vector<size_t>& here = part[k];
        size_t i = std::upper_bound(here.begin(), here.end(), start) - here.begin();
        if (k + 1 == n_segments) {
            ends.insert(ends.end(), here.begin() + i, here.end());
            break;
        }
        const size_t next_start = segment_start[k + 1];
        const size_t exact_until = view_end[k] == n ? n : view_end[k] - kWindowMargin;
        const std::vector<size_t>& next = part[k + 1];
        size_t sync = SIZE_MAX;
        size_t j = 0;  // next's boundaries: next_start, then next[0], next[1], ...
        for (size_t h = std::lower_bound(here.begin(), here.end(), std::max(start, next_start)) - here.begin();
             h < here.size() && here[h] <= exact_until; ++h) {
            if (here[h] == next_start) {
                sync = next_start;
                break;
            }
            while (j < next.size() && next[j] < here[h]) ++j;
            if (j < next.size() && next[j] == here[h]) {
                sync = here[h];
                break;
            }
        }
        if (sync == SIZE_MAX) {  // no common boundary in the overlap: one thread
            ends.resize(first);
            split_chunks(data, pattern, ends);
            return;
        }
        while (i < here.size() && here[i] <= sync) ends.push_back(here[i++]);
        start = sync;
    }
}

std::vector<ChunkRun> ChunkBatch::tasks(size_t max_chunks) const {
    std::vector<ChunkRun> out;
    for (const ChunkRun& run : runs)
        for (size_t k = run.begin; k < run.end; k += max_chunks)
            out.push_back(ChunkRun{run.data, k == run.begin ? run.first_start : ends[k - 1], k,
                                   std::min(run.end, k + max_chunks)});
    return out;
}

// Ends are appended to batch.ends directly where one thread makes them (no
// copy); small pieces on several threads go through one vector per group.
void pretokenize_pieces(const std::vector<std::string_view>& pieces, Pattern pattern, int threads, ChunkBatch& batch) {
    constexpr size_t kGroupBytes = size_t(1) << 16;  // small pieces per task
    auto is_long = [&](std::string_view piece) { return threads > 1 && piece.size() >= 2 * kSegmentBytes; };
    auto end_run = [&](std::string_view piece, size_t begin) {
        if (batch.ends.size() > begin) batch.runs.push_back(ChunkRun{piece.data(), 0, begin, batch.ends.size()});
    };
    for (size_t i = 0; i < pieces.size();) {
        const size_t begin = batch.ends.size();
        if (is_long(pieces[i])) {
            split_chunks_parallel(pieces[i], pattern, threads, kSegmentBytes, batch.ends);
            end_run(pieces[i], begin);
            ++i;
            continue;
        }
        // consecutive short pieces [i, j), in groups of about kGroupBytes
        std::vector<size_t> group_first{i};
        size_t bytes = 0, j = i;
        for (; j < pieces.size() && !is_long(pieces[j]); ++j) {
            if (bytes >= kGroupBytes) {
                group_first.push_back(j);
                bytes = 0;
            }
            bytes += pieces[j].size();
        }
        group_first.push_back(j);
        const size_t n_groups = group_first.size() - 1;
        if (threads <= 1 || n_groups == 1) {
            for (size_t p = i; p < j; ++p) {
                const size_t first = batch.ends.size();
                split_chunks(pieces[p], pattern, batch.ends);
                end_run(pieces[p], first);
            }
            i = j;
            continue;
        }
        std::vector<std::vector<size_t>> group_ends(n_groups), piece_chunks(n_groups);
        parallel_for(n_groups, threads, [&](size_t g, size_t) {
            for (size_t p = group_first[g]; p < group_first[g + 1]; ++p) {
                const size_t before = group_ends[g].size();
                split_chunks(pieces[p], pattern, group_ends[g]);
                piece_chunks[g].push_back(group_ends[g].size() - before);
            }
        });
        for (size_t g = 0; g < n_groups; ++g) {
            const size_t* e = group_ends[g].data();
            for (size_t p = group_first[g]; p < group_first[g + 1]; ++p) {
                const size_t n = piece_chunks[g][p - group_first[g]], first = batch.ends.size();
                batch.ends.insert(batch.ends.end(), e, e + n);
                end_run(pieces[p], first);
                e += n;
            }
            std::vector<size_t>().swap(group_ends[g]);
        }
        i = j;
    }
}

size_t window_bytes_for(int threads) {
    return std::max<size_t>(size_t(1) << 20, 8 * kSegmentBytes * static_cast<size_t>(std::max(threads, 1)));
}

}  // namespace storygpt
