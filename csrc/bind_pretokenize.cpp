// Thin pybind11 binding for pre-tokenization (owned with pretokenize.cpp).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "pretokenize.h"

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
            py::list out(ends.size());
            size_t start = 0;
            for (size_t k = 0; k < ends.size(); ++k) {
                out[k] = py::bytes(view.data() + start, ends[k] - start);
                start = ends[k];
            }
            return out;
        },
        py::arg("data"), py::arg("pattern") = "simple",
        "Split bytes into pre-tokenization chunks (list[bytes]); see bpe_reference.pretokenize.");
}
