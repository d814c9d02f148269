// The pybind11 module storygpt._bpe: with bind_train.cpp, bind_encoder.cpp
// and bind_pretokenize.cpp the only place where Python types meet the C++
// core.  Thin: converts arguments, releases the GIL around all real work,
// maps C++ exceptions to Python ones.  Checks live in the core, not here.
#include <pybind11/pybind11.h>

#include <cstring>

#include "common/common.h"

namespace py = pybind11;

void bind_pretokenize(py::module_& m);
void bind_train(py::module_& m);
void bind_encoder(py::module_& m);
void bind_backtrack(py::module_& m);
void bind_superbpe(py::module_& m);

namespace {

// storygpt::FileError -> OSError(errno, message, path); errno ENOENT makes
// Python pick FileNotFoundError.  (std::invalid_argument -> ValueError and
// std::length_error -> ValueError are pybind11's own translations.)
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

}  // namespace

PYBIND11_MODULE(_bpe, m) {
    m.doc() = "storygpt's C++ byte-level BPE core (see docs/design.md and docs/bpe_core.md)";
    py::register_exception_translator(translate_file_error);
    bind_pretokenize(m);
    bind_train(m);
    bind_encoder(m);
    bind_backtrack(m);
    bind_superbpe(m);
}
