// Conversions shared by the pybind11 binding files (bindings.cpp, bind_encoder.cpp).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>
#include <string_view>
#include <vector>

namespace storygpt_bind {

namespace py = pybind11;

inline std::string type_name(const py::handle& obj) { return Py_TYPE(obj.ptr())->tp_name; }

// bytes, bytearray or str (encoded as UTF-8) -> std::string; TypeError naming `what`.
inline std::string to_bytes(const py::handle& obj, const std::string& what) {
    if (py::isinstance<py::bytes>(obj)) return std::string(py::reinterpret_borrow<py::bytes>(obj));
    if (py::isinstance<py::str>(obj)) return py::reinterpret_borrow<py::str>(obj).cast<std::string>();
    if (PyByteArray_Check(obj.ptr())) return std::string(PyByteArray_AsString(obj.ptr()), PyByteArray_Size(obj.ptr()));
    throw py::type_error(what + " must be bytes or str, got " + type_name(obj));
}

// A read-only view of a bytes object that the caller keeps alive.
inline std::string_view view_of(const py::bytes& b) {
    char* data = nullptr;
    Py_ssize_t size = 0;
    if (PyBytes_AsStringAndSize(b.ptr(), &data, &size) != 0) throw py::error_already_set();
    return std::string_view(data, static_cast<size_t>(size));
}

inline py::bytes require_bytes(const py::handle& obj, const std::string& what) {
    if (!py::isinstance<py::bytes>(obj)) throw py::type_error(what + " must be bytes, got " + type_name(obj));
    return py::reinterpret_borrow<py::bytes>(obj);
}

// os.fspath(path) as a std::string
inline std::string path_of(const py::handle& path) {
    return py::str(py::module_::import("os").attr("fspath")(path)).cast<std::string>();
}

// Moves a vector into a 1-D numpy array without copying.
template <class T>
py::array_t<T> to_numpy(std::vector<T>&& v) {
    auto* owned = new std::vector<T>(std::move(v));
    py::capsule owner(owned, [](void* p) { delete static_cast<std::vector<T>*>(p); });
    return py::array_t<T>({static_cast<py::ssize_t>(owned->size())}, {static_cast<py::ssize_t>(sizeof(T))},
                          owned->data(), owner);
}

}  // namespace storygpt_bind
