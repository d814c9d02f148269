// pybind11 binding of the trainer: train, ChunkCounter, chunk_counts (thin:
// conversions, GIL release, progress callbacks).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "pretokenize/chunking.h"
#include "python/bind_util.h"
#include "train/train.h"

namespace py = pybind11;
using namespace storygpt_bind;

namespace {

// Calls a Python progress(stage, done, total) from the core, taking the GIL
// only for the call.  An exception the callback raises ends the job: it is
// kept here and raised again once the binding holds the GIL.
class ProgressBridge {
   public:
    explicit ProgressBridge(py::object callback) : callback_(std::move(callback)) {}

    storygpt::Progress progress() {
        storygpt::Progress p;
        if (!callback_.is_none()) {
            p.call = &ProgressBridge::call;
            p.context = this;
        }
        return p;
    }

    // Runs `job` with the GIL released; re-raises the callback's exception.
    template <class Job>
    auto run(Job&& job) {
        try {
            py::gil_scoped_release release;
            return job();
        } catch (const Aborted&) {
            error_->restore();
            throw py::error_already_set();
        }
    }

   private:
    struct Aborted {};
    static void call(void* context, const char* stage, uint64_t done, uint64_t total) {
        auto* self = static_cast<ProgressBridge*>(context);
        py::gil_scoped_acquire gil;
        try {
            self->callback_(stage, done, total);
        } catch (py::error_already_set& e) {
            self->error_.emplace(std::move(e));
            throw Aborted();
        }
    }
    py::object callback_;
    std::optional<py::error_already_set> error_;
};

storygpt::TrainOptions train_options(int64_t vocab_size, const std::string& pattern, const py::object& special_tokens,
                                     int64_t min_frequency, const std::string& tie_break, int num_threads) {
    storygpt::TrainOptions options;
    options.vocab_size = vocab_size;
    options.pattern = storygpt::parse_pattern(pattern);
    options.tie_break = storygpt::parse_tie_break(tie_break);
    options.min_frequency = min_frequency;
    options.num_threads = num_threads;
    if (!special_tokens.is_none())
        for (auto s : special_tokens) options.special_tokens.push_back(to_bytes(s, "special token"));
    return options;
}

py::list merges_to_list(const std::vector<storygpt::Merge>& merges) {
    py::list out(merges.size());
    for (size_t i = 0; i < merges.size(); ++i) out[i] = py::make_tuple(merges[i].first, merges[i].second);
    return out;
}

py::list train(const py::object& data, const py::object& files, int64_t vocab_size, const std::string& pattern,
               const py::object& special_tokens, int64_t min_frequency, const std::string& tie_break, int num_threads,
               const py::object& progress) {
    const storygpt::TrainOptions options =
        train_options(vocab_size, pattern, special_tokens, min_frequency, tie_break, num_threads);
    std::vector<std::string> paths;
    if (!files.is_none()) {
        if (py::isinstance<py::str>(files) || py::isinstance<py::bytes>(files))
            throw py::type_error("files must be a list of paths, not a single path");
        for (auto f : files) paths.push_back(path_of(f));
    }
    std::string owned;  // str / bytearray input
    std::vector<std::string_view> texts;
    if (py::isinstance<py::bytes>(data)) {
        texts.push_back(view_of(py::reinterpret_borrow<py::bytes>(data)));
    } else if (!data.is_none()) {
        owned = to_bytes(data, "data");
        texts.push_back(owned);
    }
    ProgressBridge bridge(progress);
    return merges_to_list(bridge.run([&] { return storygpt::train(texts, paths, options, bridge.progress()); }));
}

// The code units s[0, n) appended to `out` as UTF-8, a surrogate pair as its
// character and a lone surrogate as U+FFFD: the bytes of
// storygpt.tokenizers.base.clean_text(text).encode("utf-8").
template <class Unit>
void append_utf8(const Unit* s, size_t n, std::string& out) {
    const size_t at = out.size();
    out.resize(at + (sizeof(Unit) + 1) * n);  // the most a unit (or a pair of UCS-2 units) takes
    auto* p = reinterpret_cast<unsigned char*>(&out[at]);
    for (size_t i = 0; i < n; ++i) {
        uint32_t c = s[i];
        if (c < 0x80) {
            *p++ = static_cast<unsigned char>(c);
            continue;
        }
        if (c < 0x800) {
            *p++ = static_cast<unsigned char>(0xC0 | (c >> 6));
            *p++ = static_cast<unsigned char>(0x80 | (c & 0x3F));
            continue;
        }
        if (c >= 0xD800 && c <= 0xDFFF) {
            const bool pair = c < 0xDC00 && i + 1 < n && s[i + 1] >= 0xDC00 && s[i + 1] <= 0xDFFF;
            c = pair ? 0x10000 + ((c - 0xD800) << 10) + (s[++i] - 0xDC00) : 0xFFFD;
        }
        if (c < 0x10000) {
            *p++ = static_cast<unsigned char>(0xE0 | (c >> 12));
        } else {
            *p++ = static_cast<unsigned char>(0xF0 | (c >> 18));
            *p++ = static_cast<unsigned char>(0x80 | ((c >> 12) & 0x3F));
        }
        *p++ = static_cast<unsigned char>(0x80 | ((c >> 6) & 0x3F));
        *p++ = static_cast<unsigned char>(0x80 | (c & 0x3F));
    }
    out.resize(static_cast<size_t>(reinterpret_cast<char*>(p) - &out[0]));
}

// Appends one text of an iterable to the batch: str as UTF-8 (lone surrogates
// as U+FFFD, an ASCII str copied as is), bytes, bytearray or memoryview as
// their bytes.  TypeError "<label>: item <index> is <type>, not str or bytes".
void append_text(storygpt::TextBatch& batch, py::handle item, size_t index, const std::string& label) {
    PyObject* o = item.ptr();
    std::string& out = batch.bytes;
    if (PyUnicode_Check(o)) {
        const size_t n = static_cast<size_t>(PyUnicode_GET_LENGTH(o));
        if (PyUnicode_IS_ASCII(o))
            out.append(reinterpret_cast<const char*>(PyUnicode_1BYTE_DATA(o)), n);
        else if (PyUnicode_KIND(o) == PyUnicode_1BYTE_KIND)
            append_utf8(PyUnicode_1BYTE_DATA(o), n, out);
        else if (PyUnicode_KIND(o) == PyUnicode_2BYTE_KIND)
            append_utf8(PyUnicode_2BYTE_DATA(o), n, out);
        else
            append_utf8(PyUnicode_4BYTE_DATA(o), n, out);
    } else if (PyBytes_Check(o)) {
        out.append(PyBytes_AS_STRING(o), static_cast<size_t>(PyBytes_GET_SIZE(o)));
    } else if (PyByteArray_Check(o)) {
        out.append(PyByteArray_AS_STRING(o), static_cast<size_t>(PyByteArray_GET_SIZE(o)));
    } else if (PyMemoryView_Check(o)) {
        const py::bytes b = py::reinterpret_steal<py::bytes>(PyObject_Bytes(o));  // any layout
        if (!b) throw py::error_already_set();
        out.append(view_of(b));
    } else {
        throw py::type_error(label + ": item " + std::to_string(index) + " is " + Py_TYPE(o)->tp_name +
                             ", not str or bytes");
    }
    batch.end_text();
}

// storygpt::ChunkCounter with the options it was made with.  Not safe to
// use from several Python threads at once.
struct Counter {
    storygpt::TrainOptions options;
    storygpt::ChunkCounter counter;
    bool used = false;

    Counter(const std::string& pattern, const py::object& special_tokens, int num_threads)
        : options(train_options(256, pattern, special_tokens, 1, "smallest_ids", num_threads)),
          counter(options.pattern, options.special_tokens, options.num_threads) {}

    void check_unused() const {
        if (used) throw py::value_error("this ChunkCounter's counts were used by learn_merges already");
    }

    // Pulls the texts one by one, counting them a batch of about batch_bytes
    // at a time with the GIL released; memory: one batch.  Returns the bytes
    // counted.
    // (py::object, not py::iterable: the latter's type check calls __iter__ once more.)
    uint64_t add_texts(const py::object& texts, size_t batch_bytes, const py::object& progress,
                       const std::string& label) {
        check_unused();
        storygpt::TextBatch batch;
        uint64_t done = 0;
        bool reported = false;  // progress has seen every text taken so far
        auto count = [&] {
            if (batch.size() > 0) {
                py::gil_scoped_release release;
                counter.add_texts(batch);
            }
            done += batch.bytes.size();
            batch.clear();
            if (!progress.is_none()) progress("count", done, 0);
            reported = true;
        };
        size_t index = 0;
        for (py::handle item : py::iter(texts)) {
            append_text(batch, item, index++, label);
            reported = false;
            if (batch.bytes.size() >= batch_bytes) count();
        }
        if (!reported) count();  // the last batch; an empty iterable reports 0
        return done;
    }

    void add_file(const py::object& path, const py::object& progress, size_t window_bytes) {
        check_unused();
        const std::string p = path_of(path);
        ProgressBridge bridge(progress);
        bridge.run([&] { counter.add_file(p, bridge.progress(), window_bytes); });
    }

    void add_counts(const py::dict& counts) {
        check_unused();
        for (auto item : counts) {
            const std::string chunk = to_bytes(item.first, "chunk");
            counter.add_chunk(chunk, item.second.cast<int64_t>());
        }
    }

    py::dict counts() const {
        py::dict out;
        for (const storygpt::ChunkCounts& shard : const_cast<storygpt::ChunkCounter&>(counter).shards())
            shard.for_each([&](std::string_view chunk, int64_t count) { out[py::bytes(std::string(chunk))] = count; });
        return out;
    }

    py::list learn_merges(int64_t vocab_size, int64_t min_frequency, const std::string& tie_break,
                          const py::object& progress) {
        check_unused();
        storygpt::TrainOptions o = options;
        o.vocab_size = vocab_size;
        o.min_frequency = min_frequency;
        o.tie_break = storygpt::parse_tie_break(tie_break);
        o.merges_to_learn();  // checks before the counts are given up
        used = true;
        ProgressBridge bridge(progress);
        return merges_to_list(
            bridge.run([&] { return storygpt::learn_merges(std::move(counter.shards()), o, bridge.progress()); }));
    }
};

}  // namespace

void bind_train(py::module_& m) {
    m.def("train", &train, py::arg("data") = py::none(), py::arg("files") = py::none(), py::kw_only(),
          py::arg("vocab_size"), py::arg("pattern") = "simple", py::arg("special_tokens") = py::list(),
          py::arg("min_frequency") = 1, py::arg("tie_break") = "smallest_ids", py::arg("num_threads") = 1,
          py::arg("progress") = py::none(),
          R"doc(Learn byte-level BPE merges; same result as bpe_reference.train for any num_threads.

Args:
    data: training bytes (str is encoded as UTF-8), or None.
    files: paths of further training texts, streamed in windows in C++ (never
        read whole); each file and `data` are separate texts (chunks never
        cross texts).
    vocab_size: 256 + number of merges + len(special_tokens).
    pattern: "simple" | "gpt2" | "gpt4" (pre-tokenization).
    special_tokens: bytes that split the text; never counted, never merged.
    min_frequency: stop (without error) when the best pair occurs fewer times.
    tie_break: "smallest_ids" | "largest_bytes".
    num_threads: threads for chunk counting (0 = all cores); merges never depend on it.
    progress: None or callable(stage: str, done: int, total: int), called now
        and then with the GIL held only for the call: stage "count" (bytes)
        and "merge" (merges); total 0 when unknown.  An exception it raises
        ends training and is raised again.

Returns:
    list[tuple[int, int]]: merges[i] = (left_id, right_id) makes id 256 + i.

Raises:
    ValueError: vocab_size too small (numbers in the message), unknown pattern
        or tie_break, min_frequency < 1.
    OSError (FileNotFoundError): an unreadable file, named in the message.)doc");

    py::class_<Counter>(m, "ChunkCounter", R"doc(Distinct pre-tokenization chunks and their counts, for training.

Counts texts, files (streamed in windows) and given chunk counts, exactly as
bpe_reference.count_chunks counts each text (special tokens split the text
and are left out); then learn_merges learns merges from them.  Memory:
the distinct chunks plus a fixed window, not the corpus.  Not safe to use
from several Python threads at once.

Args:
    pattern: "simple" | "gpt2" | "gpt4".
    special_tokens: bytes that split every text.
    num_threads: counting threads (0 = all cores); counts never depend on it.)doc")
        .def(py::init<const std::string&, const py::object&, int>(), py::arg("pattern") = "simple",
             py::arg("special_tokens") = py::list(), py::arg("num_threads") = 1)
        .def("add_texts", &Counter::add_texts, py::arg("texts"), py::kw_only(), py::arg("batch_bytes") = 8 << 20,
             py::arg("progress") = py::none(), py::arg("label") = "texts",
             "Count the chunks of each text of an iterable of str (as UTF-8, lone surrogates as U+FFFD) or "
             "bytes/bytearray/memoryview; chunks never cross texts.  The texts are taken one by one and "
             "counted about batch_bytes at a time with the GIL released (memory: one batch, not the "
             "iterable).  progress(\"count\", bytes done, 0) after each batch.  Returns the bytes counted.  "
             "TypeError \"<label>: item <i> is <type>, not str or bytes\".")
        .def("add_file", &Counter::add_file, py::arg("path"), py::arg("progress") = py::none(),
             py::arg("window_bytes") = 0,
             "Count the chunks of a file, streamed in windows of window_bytes (0: 1 MiB per 1-2 threads, "
             "4 x 256 KiB per thread beyond).  OSError naming the path.  progress(\"count\", bytes read, file size).")
        .def("add_counts", &Counter::add_counts, py::arg("counts"),
             "Add dict[bytes, int] chunk -> count as is (no splitting); ValueError for a count < 1.")
        .def("counts", &Counter::counts, "dict[bytes, int]: the counts so far (for tests).")
        .def("learn_merges", &Counter::learn_merges, py::kw_only(), py::arg("vocab_size"), py::arg("min_frequency") = 1,
             py::arg("tie_break") = "smallest_ids", py::arg("progress") = py::none(),
             "Learn merges from the counts (which it uses up); as train().  list[tuple[int, int]].");

    m.def(
        "chunk_counts",
        [](const py::bytes& data, const std::string& pattern, const py::object& special_tokens, int num_threads) {
            const storygpt::TrainOptions options =
                train_options(256, pattern, special_tokens, 1, "smallest_ids", num_threads);
            const std::vector<std::string_view> texts{view_of(data)};
            std::vector<std::pair<std::string, int64_t>> counts;
            {
                py::gil_scoped_release release;
                counts = storygpt::chunk_counts(texts, options);
            }
            py::dict out;
            for (const auto& kv : counts) out[py::bytes(kv.first)] = kv.second;
            return out;
        },
        py::arg("data"), py::arg("pattern") = "simple", py::arg("special_tokens") = py::list(),
        py::arg("num_threads") = 1,
        "dict[bytes, int]: each distinct chunk and its count, exactly as train() counts them "
        "(special tokens split the text and are left out); same as bpe_reference.count_chunks.");

    m.def(
        "_split_chunks_parallel",
        [](const py::bytes& data, const std::string& pattern, int num_threads, size_t segment_bytes) {
            const std::string_view text = view_of(data);
            const storygpt::Pattern p = storygpt::parse_pattern(pattern);
            std::vector<size_t> ends;
            {
                py::gil_scoped_release release;
                storygpt::split_chunks_parallel(text, p, num_threads, segment_bytes, ends);
            }
            return to_numpy(std::move(ends));
        },
        py::arg("data"), py::arg("pattern"), py::arg("num_threads"), py::arg("segment_bytes"),
        "Testing hook: chunk end offsets (numpy uint64) from the multi-threaded pre-tokenizer used by train.");
}
