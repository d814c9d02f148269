// Encoder methods that expose the long-chunk algorithms one by one (tests and
// benchmarks compare them); added to the class that bind_encoder.cpp defines.
#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>

#include "encode/encoder.h"
#include "python/bind_util.h"

namespace py = pybind11;
using namespace storygpt_bind;

namespace {

storygpt::Encoder::ChunkMethod parse_method(const std::string& method) {
    if (method == "auto") return storygpt::Encoder::ChunkMethod::kAuto;
    if (method == "merge") return storygpt::Encoder::ChunkMethod::kMergeLoop;
    if (method == "backtrack") return storygpt::Encoder::ChunkMethod::kBacktrack;
    throw std::invalid_argument("method must be 'auto', 'merge' or 'backtrack', got '" + method + "'");
}

}  // namespace

void bind_backtrack(py::module_& m) {
    auto cls = py::reinterpret_borrow<py::class_<storygpt::Encoder>>(m.attr("Encoder"));
    cls.def(
           "encode_chunk",
           [](const storygpt::Encoder& enc, const py::bytes& chunk, const std::string& method) {
               const storygpt::Encoder::ChunkMethod how = parse_method(method);
               const std::string_view v = view_of(chunk);
               std::vector<uint32_t> ids;
               {
                   py::gil_scoped_release release;
                   enc.encode_chunk_uncached(reinterpret_cast<const unsigned char*>(v.data()), v.size(), ids, how);
               }
               return to_numpy(std::move(ids));
           },
           py::arg("chunk"), py::arg("method") = "auto",
           R"doc(Encode `chunk` as ONE pre-tokenization chunk (no pattern split, no cache) -> numpy.ndarray[uint32].

method: "auto" (the encoder's choice by length), "merge" (the merge loop) or
"backtrack" (the backtracking encoder; the merge loop when backtrack_refusal
is not empty).  All three give the same ids.  ValueError for another method.)doc")
        .def_property_readonly(
            "backtrack_refusal", [](const storygpt::Encoder& enc) { return enc.backtrack_refusal(); },
            "Why long chunks cannot use the backtracking encoder ('' when they can).");
}
