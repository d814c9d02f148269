// The pybind11 module storygpt._bpe: with bind_encoder.cpp and
// bind_pretokenize.cpp the only place where Python types meet the C++ core.
// Thin: converts arguments, releases the GIL around all real work, maps C++
// exceptions to Python ones.  Checks live in the core, not here.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <string>
#include <vector>

#include "bind_util.h"
#include "chunking.h"
#include "train.h"

namespace py = pybind11;
using namespace storygpt_bind;

void bind_pretokenize(py::module_& m);
void bind_encoder(py::module_& m);

namespace {

// storygpt::FileError -> OSError(errno, message, path); errno ENOENT makes
// Python pick FileNotFoundError.
void translate_file_error(std::exception_ptr p) {
    try {
        if (p) std::rethrow_exception(p);
    } catch (const storygpt::FileError& e) {
        const char* message = e.error_code() != 0 ? std::strerror(e.error_code()) : e.what();
        py::object exc = py::reinterpret_steal<py::object>(
            PyObject_CallFunction(PyExc_OSError, "isO", e.error_code(), message, py::str(e.path()).ptr()));
        if (!exc) return;  // error already set
        PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
    }
}

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
               const py::object& special_tokens, int64_t min_frequency, const std::string& tie_break, int num_threads) {
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
    std::vector<storygpt::Merge> merges;
    {
        py::gil_scoped_release release;
        merges = storygpt::train(texts, paths, options);
    }
    return merges_to_list(merges);
}

}  // namespace

PYBIND11_MODULE(_bpe, m) {
    m.doc() = "storygpt's C++ byte-level BPE core (see docs/design.md and docs/bpe_core.md)";
    py::register_exception_translator(translate_file_error);
    bind_pretokenize(m);
    bind_encoder(m);

    m.def("train", &train, py::arg("data") = py::none(), py::arg("files") = py::none(), py::kw_only(),
          py::arg("vocab_size"), py::arg("pattern") = "simple", py::arg("special_tokens") = py::list(),
          py::arg("min_frequency") = 1, py::arg("tie_break") = "smallest_ids", py::arg("num_threads") = 1,
          R"doc(Learn byte-level BPE merges; same result as bpe_reference.train for any num_threads.

Args:
    data: training bytes (str is encoded as UTF-8), or None.
    files: paths of further training texts, streamed in windows in C++; each
        file and `data` are separate texts (chunks never cross texts).
    vocab_size: 256 + number of merges + len(special_tokens).
    pattern: "simple" | "gpt2" | "gpt4" (pre-tokenization).
    special_tokens: bytes that split the text; never counted, never merged.
    min_frequency: stop (without error) when the best pair occurs fewer times.
    tie_break: "smallest_ids" | "largest_bytes".
    num_threads: threads for chunk counting (0 = all cores); merges never depend on it.

Returns:
    list[tuple[int, int]]: merges[i] = (left_id, right_id) makes id 256 + i.

Raises:
    ValueError: vocab_size too small (numbers in the message), unknown pattern
        or tie_break, min_frequency < 1.
    OSError (FileNotFoundError): an unreadable file, named in the message.)doc");

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
