// pybind11 binding of storygpt::Encoder (thin: conversions, GIL release).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "encode/encoder.h"
#include "python/bind_util.h"

namespace py = pybind11;
using namespace storygpt_bind;

namespace {

// The UTF-8 of a batch of texts, viewed while the GIL is released: an ASCII
// str's own bytes, bytes as they are, other str through a UTF-8 copy; `held`
// keeps every object viewed alive (other Python threads may change the list).
struct BatchTexts {
    std::vector<std::string_view> views;
    std::vector<py::object> held;

    explicit BatchTexts(const py::list& texts) {
        views.reserve(texts.size());
        held.reserve(texts.size());
        for (size_t k = 0; k < texts.size(); ++k) {
            PyObject* t = PyList_GET_ITEM(texts.ptr(), static_cast<Py_ssize_t>(k));
            if (PyUnicode_Check(t) && !PyUnicode_IS_ASCII(t)) {  // encoded once, not cached in the str
                held.push_back(py::reinterpret_steal<py::object>(PyUnicode_AsUTF8String(t)));
                if (!held.back()) throw py::error_already_set();
            } else {
                held.push_back(py::reinterpret_borrow<py::object>(t));
            }
            t = held.back().ptr();
            if (PyUnicode_Check(t)) {  // ASCII: its UTF-8 is its data, no copy
                Py_ssize_t size = 0;
                const char* data = PyUnicode_AsUTF8AndSize(t, &size);
                if (data == nullptr) throw py::error_already_set();
                views.emplace_back(data, static_cast<size_t>(size));
            } else if (PyBytes_Check(t)) {
                views.push_back(view_of(py::reinterpret_borrow<py::bytes>(t)));
            } else {
                throw py::type_error("texts[" + std::to_string(k) + "] must be str or bytes, got " +
                                     type_name(py::handle(t)));
            }
        }
    }
};

void check_id_objects(const storygpt::Encoder& enc, const py::list& id_objects) {
    if (static_cast<size_t>(PyList_GET_SIZE(id_objects.ptr())) < enc.vocab_size())
        throw py::value_error("id_objects has " + std::to_string(PyList_GET_SIZE(id_objects.ptr())) +
                              " items for a vocabulary of " + std::to_string(enc.vocab_size()));
}

// out[k] = [id_objects[id] for id in text k's ids] for k in [first, last); the
// ids of the texts are concatenated in `ids`, lengths[k - first] each.  Holds the GIL.
void fill_lists(const py::list& out, size_t first, size_t last, const std::vector<uint32_t>& ids,
                const int64_t* lengths, const py::list& id_objects, const storygpt::Encoder& enc) {
    check_id_objects(enc, id_objects);  // again: another Python thread may have shortened it meanwhile
    PyObject* const* objects = PySequence_Fast_ITEMS(id_objects.ptr());
    const uint32_t* id = ids.data();
    for (size_t k = first; k < last; ++k) {
        const Py_ssize_t n = static_cast<Py_ssize_t>(lengths[k - first]);
        PyObject* list = PyList_New(n);
        if (list == nullptr) throw py::error_already_set();
        for (Py_ssize_t i = 0; i < n; ++i, ++id) {
            PyObject* obj = objects[*id];
            Py_INCREF(obj);
            PyList_SET_ITEM(list, i, obj);
        }
        PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(k), list);
    }
}

}  // namespace

void bind_encoder(py::module_& m) {
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
    ValueError: malformed byte_ids, merges or ranks; an id outside
        [0, min(2**26, 256 + len(merges) + 2**16)) (the tables are sized by the largest id).)doc")
        .def(py::init([](const std::vector<std::tuple<int64_t, int64_t, int64_t>>& merges,
                         std::optional<std::vector<int64_t>> byte_ids, const std::string& pattern,
                         std::optional<std::vector<int64_t>> ranks) {
                 std::vector<storygpt::MergeRule> rules;
                 rules.reserve(merges.size());
                 for (const auto& t : merges) rules.push_back({std::get<0>(t), std::get<1>(t), std::get<2>(t)});
                 const storygpt::Pattern p = storygpt::parse_pattern(pattern);
                 py::gil_scoped_release release;
                 return std::make_unique<storygpt::Encoder>(rules, byte_ids, p, ranks);
             }),
             py::arg("merges"), py::arg("byte_ids") = py::none(), py::arg("pattern") = "simple",
             py::arg("ranks") = py::none())
        .def(
            "split_stages",
            [](storygpt::Encoder& enc, const std::vector<std::tuple<int64_t, int64_t, int64_t>>& stage1_merges,
               const std::string& stage1_pattern) {
                std::vector<storygpt::MergeRule> rules;
                rules.reserve(stage1_merges.size());
                for (const auto& t : stage1_merges) rules.push_back({std::get<0>(t), std::get<1>(t), std::get<2>(t)});
                const storygpt::Pattern p = storygpt::parse_pattern(stage1_pattern);
                return enc.split_stages(rules, p);
            },
            py::arg("stage1_merges"), py::arg("stage1_pattern"),
            R"doc(SuperBPE: the first merges (stage1_merges, which must be this encoder's first
ones) were learned on stage1_pattern chunks; encode each chunk as its stage-1
pieces through the chunk cache, then the later merges.  Same ids, faster on
chunks that rarely repeat.  Returns '' when taken, else why not (nothing
changes).  Call it once, right after construction (not thread-safe).

Raises:
    ValueError: an unknown pattern name.)doc")
        .def_property_readonly(
            "stages_split", [](const storygpt::Encoder& enc) { return enc.stages_split(); },
            "True when split_stages was taken.")
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
            "encode_list",
            [](const storygpt::Encoder& enc, const py::handle& text, const py::list& id_objects) {
                std::string_view v;
                if (PyUnicode_Check(text.ptr())) {  // UTF-8 kept in the str after the first call, as tiktoken does
                    Py_ssize_t size = 0;
                    const char* data = PyUnicode_AsUTF8AndSize(text.ptr(), &size);
                    if (data == nullptr) throw py::error_already_set();
                    v = std::string_view(data, static_cast<size_t>(size));
                } else if (PyBytes_Check(text.ptr())) {
                    v = view_of(py::reinterpret_borrow<py::bytes>(text));
                } else {
                    throw py::type_error("text must be str or bytes, got " + type_name(text));
                }
                std::vector<uint32_t> ids;
                {
                    py::gil_scoped_release release;
                    enc.encode(v, ids);
                }
                if (static_cast<size_t>(PyList_GET_SIZE(id_objects.ptr())) < enc.vocab_size())
                    throw py::value_error("id_objects has " + std::to_string(PyList_GET_SIZE(id_objects.ptr())) +
                                          " items for a vocabulary of " + std::to_string(enc.vocab_size()));
                PyObject* list = PyList_New(static_cast<Py_ssize_t>(ids.size()));
                if (list == nullptr) throw py::error_already_set();
                for (size_t i = 0; i < ids.size(); ++i) {
                    PyObject* id = PyList_GET_ITEM(id_objects.ptr(), ids[i]);
                    Py_INCREF(id);
                    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i), id);
                }
                return py::reinterpret_steal<py::list>(list);
            },
            py::arg("text"), py::arg("id_objects"),
            R"doc(Encode a str (as UTF-8) or bytes -> list of ids, like tiktoken's encode_ordinary.

The list holds id_objects[id] for each id (pass list(range(vocab_size)): the
same int objects are shared instead of one new int per token).  A str's UTF-8
is computed once and kept in the str (PyUnicode_AsUTF8AndSize).

Raises:
    UnicodeEncodeError: text is a str with lone surrogates.
    TypeError: text is neither str nor bytes.
    ValueError: id_objects has fewer than vocab_size items.)doc")
        .def(
            "encode_batch",
            [](const storygpt::Encoder& enc, const py::list& texts, int num_threads) {
                BatchTexts batch(texts);
                std::vector<uint32_t> ids;
                std::vector<int64_t> offsets;
                {
                    py::gil_scoped_release release;
                    enc.encode_batch(batch.views, num_threads, ids, offsets);
                }
                return py::make_tuple(to_numpy(std::move(ids)), to_numpy(std::move(offsets)));
            },
            py::arg("texts"), py::arg("num_threads") = 0,
            R"doc(Encode many texts (str as UTF-8, or bytes) on several threads (0 = all cores).

Returns (ids, offsets): ids is numpy.ndarray[uint32] of all ids concatenated,
offsets numpy.ndarray[int64] of length len(texts) + 1; text k's ids are
ids[offsets[k]:offsets[k + 1]].

Raises:
    TypeError: an item that is neither str nor bytes (named by its index).
    UnicodeEncodeError: a str with lone surrogates.)doc")
        .def(
            "encode_batch_lists",
            [](const storygpt::Encoder& enc, const py::list& texts, const py::list& id_objects, int num_threads) {
                check_id_objects(enc, id_objects);
                BatchTexts batch(texts);
                py::list out(texts.size());  // a slot per text, filled as groups finish
                {
                    py::gil_scoped_release release;
                    enc.encode_batch(
                        batch.views, num_threads,
                        [&](size_t first, size_t last, std::vector<uint32_t>& ids, const int64_t* lengths) {
                            py::gil_scoped_acquire gil;
                            fill_lists(out, first, last, ids, lengths, id_objects, enc);
                        });
                }
                return out;
            },
            py::arg("texts"), py::arg("id_objects"), py::arg("num_threads") = 0,
            R"doc(Encode many texts (str as UTF-8, or bytes) on several threads -> one list of ids per text.

The lists hold id_objects[id] for each id (pass list(range(vocab_size)), as for
encode_list).  They are built on the calling thread while the other threads
keep encoding, so little of the list building is left after the last text.

Raises:
    TypeError: an item that is neither str nor bytes (named by its index).
    UnicodeEncodeError: a str with lone surrogates.
    ValueError: id_objects has fewer than vocab_size items.)doc")
        .def(
            "encode_file",
            [](const storygpt::Encoder& enc, py::object path, int num_threads, size_t window_bytes) {
                const std::string p = path_of(path);
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
                        if (overflow != 0) throw py::value_error("unknown token id " + std::string(py::str(v)));
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
