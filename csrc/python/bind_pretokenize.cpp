// Thin pybind11 binding for pre-tokenization (owned with pretokenize.cpp).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "pretokenize/pretokenize.h"

namespace py = pybind11;

void bind_pretokenize(py::module_& m) {
    m.def(
        "pretokenize",
        [](py::bytes data, const std::string& pattern) {
            storygpt::Pattern p = storygpt::parse_pattern(pattern);
            std::string_view view = data;  // borrowed; the bytes object outlives this call
            std::vector<size_t> ends;
            {
                py::gil_scoped_release release;
                storygpt::split_chunks(view, p, ends);
            }
            // Build the list with the C API directly (several times faster
            // than py::list item assignment for millions of small chunks).
            PyObject* out = PyList_New(static_cast<Py_ssize_t>(ends.size()));
            if (!out) throw py::error_already_set();
            size_t start = 0;
            for (size_t k = 0; k < ends.size(); ++k) {
                PyObject* chunk =
                    PyBytes_FromStringAndSize(view.data() + start, static_cast<Py_ssize_t>(ends[k] - start));
                if (!chunk) {
                    Py_DECREF(out);
                    throw py::error_already_set();
                }
                PyList_SET_ITEM(out, static_cast<Py_ssize_t>(k), chunk);  // steals the reference
                start = ends[k];
            }
            return py::reinterpret_steal<py::list>(out);
        },
        py::arg("data"), py::arg("pattern") = "simple",
        "Split bytes into pre-tokenization chunks (list[bytes]); see bpe_reference.pretokenize.\n"
        "Raises ValueError for an unknown pattern name.");

    // Test hooks (underscored: not public API).
    m.def(
        "_pretokenize_char_classes",
        []() {
            std::string out(0x110000, '\0');
            for (uint32_t cp = 0; cp < 0x110000; ++cp) out[cp] = static_cast<char>(storygpt::char_class(cp));
            return py::bytes(out);
        },
        "bytes of length 0x110000: class of each code point in the gpt2/gpt4 matchers "
        "(0 other, 1 \\p{L}, 2 \\p{N}, 3 \\s).");
    m.def(
        "_decode_utf8_surrogateescape",
        [](py::bytes data) {
            std::string_view view = data;
            std::vector<uint32_t> cps;
            storygpt::decode_utf8_surrogateescape(view, cps);
            return cps;
        },
        py::arg("data"),
        "Code points (list[int]) of data as the C++ matchers decode it; must equal "
        "[ord(c) for c in data.decode('utf-8', 'surrogateescape')].");
    m.def(
        "_pretokenize_count",
        [](py::bytes data, const std::string& pattern) {
            storygpt::Pattern p = storygpt::parse_pattern(pattern);
            std::string_view view = data;
            std::vector<size_t> ends;
            py::gil_scoped_release release;
            ends.reserve(view.size() / 2 + 1);  // time the matcher, not vector growth
            storygpt::split_chunks(view, p, ends);
            return ends.size();
        },
        py::arg("data"), py::arg("pattern") = "simple",
        "Number of chunks (int) of data; for timing split_chunks alone (into a reserved vector), "
        "without building Python objects.");
    m.def(
        "_pretokenize_ends_streaming",
        [](py::bytes data, const std::string& pattern) {
            storygpt::Pattern p = storygpt::parse_pattern(pattern);
            std::string_view view = data;
            std::vector<size_t> ends;
            for (size_t pos = 0; pos < view.size();) ends.push_back(pos = storygpt::chunk_end(view, pos, p));
            return ends;
        },
        py::arg("data"), py::arg("pattern") = "simple",
        "Chunk end offsets (list[int]) computed with chunk_end one chunk at a time.");
    m.attr("_unicode_tables_regex_version") = storygpt::unicode_tables_regex_version();
}
