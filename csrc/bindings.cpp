// The pybind11 module storygpt._bpe: the only place (with bind_pretokenize.cpp)
// where Python types meet the C++ core.  Thin: converts arguments, releases
// the GIL around all real work, maps C++ exceptions to Python ones.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <optional>
#include <tuple>
#include <string>
#include <string_view>
#include <vector>

#include "bpe.h"
#include "pretokenize.h"

namespace py = pybind11;

void bind_pretokenize(py::module_& m);

namespace {

// bytes (or str, encoded as UTF-8) -> std::string
std::string to_bytes(const py::handle& obj, const char* what) {
    if (py::isinstance<py::bytes>(obj)) return std::string(py::reinterpret_borrow<py::bytes>(obj));
    if (py::isinstance<py::str>(obj)) return py::reinterpret_borrow<py::str>(obj).cast<std::string>();
    if (PyByteArray_Check(obj.ptr()))
        return std::string(PyByteArray_AsString(obj.ptr()), PyByteArray_Size(obj.ptr()));
    throw py::type_error(std::string(what) + " must be bytes, got " +
                         std::string(Py_TYPE(obj.ptr())->tp_name));
}

// A read-only view of a bytes object that the caller keeps alive.
std::string_view view_of(const py::bytes& b) {
    char* data = nullptr;
    Py_ssize_t size = 0;
    if (PyBytes_AsStringAndSize(b.ptr(), &data, &size) != 0) throw py::error_already_set();
    return std::string_view(data, static_cast<size_t>(size));
}

py::bytes require_bytes(const py::handle& obj, const char* what) {
    if (!py::isinstance<py::bytes>(obj))
        throw py::type_error(std::string(what) + " must be bytes, got " +
                             std::string(Py_TYPE(obj.ptr())->tp_name));
    return py::reinterpret_borrow<py::bytes>(obj);
}

// Moves a vector into a 1-D numpy array without copying.
template <class T>
py::array_t<T> to_numpy(std::vector<T>&& v) {
    auto* heap = new std::vector<T>(std::move(v));
    py::capsule owner(heap, [](void* p) { delete static_cast<std::vector<T>*>(p); });
    return py::array_t<T>({static_cast<py::ssize_t>(heap->size())}, {static_cast<py::ssize_t>(sizeof(T))},
                          heap->data(), owner);
}

}  // namespace

PYBIND11_MODULE(_bpe, m) {
    m.doc() = "storygpt's C++ byte-level BPE core (see docs/design.md and docs/bpe_core.md)";
    bind_pretokenize(m);

    // storygpt::FileError -> OSError(errno, message, path); errno ENOENT makes
    // Python pick FileNotFoundError.
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const storygpt::FileError& e) {
            py::object exc = py::reinterpret_steal<py::object>(PyObject_CallFunction(
                PyExc_OSError, "isO", e.error_code(),
                e.error_code() != 0 ? std::strerror(e.error_code()) : e.what(), py::str(e.path()).ptr()));
            if (!exc) return;  // error already set
            PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
        }
    });

    m.def(
        "train",
        [](py::object data, py::object files, int64_t vocab_size, const std::string& pattern,
           py::object special_tokens, int64_t min_frequency, const std::string& tie_break,
           int num_threads) {
            storygpt::TrainOptions opt;
            opt.vocab_size = vocab_size;
            opt.pattern = storygpt::parse_pattern(pattern);
            opt.tie_break = storygpt::parse_tie_break(tie_break);
            opt.min_frequency = min_frequency;
            opt.num_threads = num_threads;
            if (!special_tokens.is_none())
                for (auto s : special_tokens) opt.special_tokens.push_back(to_bytes(s, "special token"));
            std::vector<std::string> file_list;
            if (!files.is_none()) {
                if (py::isinstance<py::str>(files) || py::isinstance<py::bytes>(files))
                    throw py::type_error("files must be a list of paths, not a single path");
                py::object fspath = py::module_::import("os").attr("fspath");
                for (auto f : files) file_list.push_back(py::str(fspath(f)).cast<std::string>());
            }
            std::string owned;  // for str / bytearray input
            py::bytes held;
            std::vector<std::string_view> texts;
            if (!data.is_none()) {
                if (py::isinstance<py::bytes>(data)) {
                    held = py::reinterpret_borrow<py::bytes>(data);
                    texts.push_back(view_of(held));
                } else {
                    owned = to_bytes(data, "data");
                    texts.push_back(owned);
                }
            }
            std::vector<storygpt::Merge> merges;
            {
                py::gil_scoped_release release;
                merges = storygpt::train(texts, file_list, opt);
            }
            py::list out(merges.size());
            for (size_t i = 0; i < merges.size(); ++i)
                out[i] = py::make_tuple(merges[i].first, merges[i].second);
            return out;
        },
        py::arg("data") = py::none(), py::arg("files") = py::none(), py::kw_only(), py::arg("vocab_size"),
        py::arg("pattern") = "simple", py::arg("special_tokens") = py::list(), py::arg("min_frequency") = 1,
        py::arg("tie_break") = "smallest_ids", py::arg("num_threads") = 1,
        R"doc(Learn byte-level BPE merges; same result as bpe_reference.train for any num_threads.

Args:
    data: training bytes (str is encoded as UTF-8), or None.
    files: paths of further training texts, read in C++; each file and `data`
        are separate texts (chunks never cross texts).
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
        [](const py::bytes& data, const std::string& pattern, py::object special_tokens, int num_threads) {
            storygpt::TrainOptions opt;
            opt.pattern = storygpt::parse_pattern(pattern);
            opt.num_threads = num_threads;
            if (!special_tokens.is_none())
                for (auto s : special_tokens) opt.special_tokens.push_back(to_bytes(s, "special token"));
            std::vector<std::string_view> texts{view_of(data)};
            std::vector<std::pair<std::string, int64_t>> counts;
            {
                py::gil_scoped_release release;
                counts = storygpt::chunk_counts(texts, opt);
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
            std::string_view v = view_of(data);
            storygpt::Pattern p = storygpt::parse_pattern(pattern);
            std::vector<size_t> ends;
            {
                py::gil_scoped_release release;
                storygpt::split_chunks_parallel(v, p, num_threads, segment_bytes, ends);
            }
            return to_numpy(std::move(ends));
        },
        py::arg("data"), py::arg("pattern"), py::arg("num_threads"), py::arg("segment_bytes"),
        "Testing hook: chunk end offsets (numpy uint64) from the multi-threaded pre-tokenizer used by train.");

    py::class_<storygpt::Encoder>(m, "Encoder", R"doc(Byte-level BPE encoder (general form).

Exactly bpe_reference.Encoder: inside each pre-tokenization chunk the adjacent
pair with the lowest rank is merged, leftmost first on equal ranks, until no
adjacent pair is a merge.  Chunk -> ids results are cached (bounded,
thread-safe).  Safe to use from several Python threads at once; the GIL is
released around all real work.

Args:
    merges: list of (left_id, right_id, new_id); rank = position unless `ranks`.
    byte_ids: 256 distinct ids, byte_ids[b] = id of byte b (default: b).
    pattern: "simple" | "gpt2" | "gpt4".
    ranks: one rank per merge (lower merges first; ties allowed).

Raises:
    ValueError: malformed byte_ids, merges or ranks; ids outside [0, 2**26).)doc")
        .def(py::init([](const std::vector<std::tuple<int64_t, int64_t, int64_t>>& merges,
                         std::optional<std::vector<int64_t>> byte_ids, const std::string& pattern,
                         std::optional<std::vector<int64_t>> ranks) {
                 std::vector<storygpt::MergeRule> rules;
                 rules.reserve(merges.size());
                 for (const auto& t : merges)
                     rules.push_back({std::get<0>(t), std::get<1>(t), std::get<2>(t)});
                 storygpt::Pattern p = storygpt::parse_pattern(pattern);
                 if (byte_ids && byte_ids->size() != 256)
                     throw py::value_error("byte_ids must hold 256 distinct ids, got " +
                                           std::to_string(byte_ids->size()));
                 if (ranks && ranks->size() != merges.size())
                     throw py::value_error("ranks has " + std::to_string(ranks->size()) +
                                           " entries for " + std::to_string(merges.size()) + " merges");
                 std::vector<int64_t> b = byte_ids ? *byte_ids : std::vector<int64_t>();
                 std::vector<int64_t> r = ranks ? *ranks : std::vector<int64_t>();
                 py::gil_scoped_release release;
                 return std::make_unique<storygpt::Encoder>(rules, b, p, r);
             }),
             py::arg("merges"), py::arg("byte_ids") = py::none(), py::arg("pattern") = "simple",
             py::arg("ranks") = py::none())
        .def(
            "encode",
            [](const storygpt::Encoder& enc, const py::bytes& data) {
                std::string_view v = view_of(data);
                std::vector<uint32_t> ids;
                {
                    py::gil_scoped_release release;
                    enc.encode(v, ids);
                }
                return to_numpy(std::move(ids));
            },
            py::arg("data"),
            "Encode bytes (ordinary text: special tokens are plain text) -> numpy.ndarray[uint32] of ids.")
        .def(
            "encode_batch",
            [](const storygpt::Encoder& enc, const py::list& texts, int num_threads) {
                std::vector<py::bytes> held;  // keeps every text alive while the GIL is released
                held.reserve(texts.size());
                for (auto t : texts) held.push_back(require_bytes(t, "each text"));
                std::vector<std::string_view> views;
                views.reserve(held.size());
                for (const auto& b : held) views.push_back(view_of(b));
                std::vector<uint32_t> ids;
                std::vector<int64_t> offsets;
                {
                    py::gil_scoped_release release;
                    enc.encode_batch(views, num_threads, ids, offsets);
                }
                return py::make_tuple(to_numpy(std::move(ids)), to_numpy(std::move(offsets)));
            },
            py::arg("texts"), py::arg("num_threads") = 0,
            R"doc(Encode many texts on several threads (0 = all cores).

Returns (ids, offsets): ids is numpy.ndarray[uint32] of all ids concatenated,
offsets numpy.ndarray[int64] of length len(texts) + 1; text k's ids are
ids[offsets[k]:offsets[k + 1]].)doc")
        .def(
            "encode_file",
            [](const storygpt::Encoder& enc, py::object path, int num_threads, size_t window_bytes) {
                std::string p = py::str(py::module_::import("os").attr("fspath")(path)).cast<std::string>();
                std::vector<uint32_t> ids;
                {
                    py::gil_scoped_release release;
                    enc.encode_file(p, num_threads, window_bytes, ids);
                }
                return to_numpy(std::move(ids));
            },
            py::arg("path"), py::arg("num_threads") = 0, py::arg("window_bytes") = size_t(4) << 20,
            R"doc(Encode a whole file, streamed in windows of window_bytes (bounded memory).

Returns numpy.ndarray[uint32], equal to encode(open(path, 'rb').read()).
Raises OSError (FileNotFoundError) naming the path.)doc")
        .def(
            "decode",
            [](const storygpt::Encoder& enc, py::object ids) {
                using Arr = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
                std::vector<int64_t> owned;
                const int64_t* p = nullptr;
                size_t n = 0;
                Arr arr = Arr::ensure(ids);
                if (arr) {
                    if (arr.ndim() != 1) throw py::value_error("decode takes a 1-D sequence of ids");
                    p = arr.data();
                    n = static_cast<size_t>(arr.size());
                } else {  // not convertible by numpy (huge ints, a generator, ...): one by one
                    PyErr_Clear();
                    for (auto item : ids) {
                        py::object v = py::reinterpret_steal<py::object>(PyNumber_Index(item.ptr()));
                        if (!v) throw py::error_already_set();
                        int overflow = 0;
                        long long x = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
                        if (overflow != 0)
                            throw py::value_error("unknown token id " + std::string(py::str(v)));
                        owned.push_back(static_cast<int64_t>(x));
                    }
                    p = owned.data();
                    n = owned.size();
                }
                std::string out;
                {
                    py::gil_scoped_release release;
                    out = enc.decode(p, n);
                }
                return py::bytes(out);
            },
            py::arg("ids"),
            "Concatenate the bytes of ids (list or numpy array) -> bytes; ValueError naming an unknown id.")
        .def(
            "token_bytes",
            [](const storygpt::Encoder& enc, int64_t id) {
                std::string_view v = enc.token_bytes(id);
                return py::bytes(v.data(), v.size());
            },
            py::arg("id"), "The bytes of one token; ValueError for an unknown id.")
        .def_property_readonly("vocab_size", &storygpt::Encoder::vocab_size, "max id + 1")
        .def_property_readonly("num_merges", &storygpt::Encoder::num_merges, "number of merges given")
        .def_property_readonly(
            "pattern", [](const storygpt::Encoder& enc) { return std::string(storygpt::pattern_name(enc.pattern())); },
            "pre-tokenization pattern name");
}
