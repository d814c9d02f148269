// The pybind11 module storygpt._bpe: the only place (with bind_pretokenize.cpp)
// where Python types meet the C++ core.
#include <pybind11/pybind11.h>

namespace py = pybind11;

void bind_pretokenize(py::module_& m);

PYBIND11_MODULE(_bpe, m) {
    m.doc() = "storygpt's C++ byte-level BPE core (see docs/design.md)";
    bind_pretokenize(m);
}
