// pybind11 binding of SuperBPE training (thin: conversions, GIL release).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "python/bind_util.h"
#include "train/superbpe_train.h"

namespace py = pybind11;
using namespace storygpt_bind;

namespace {

py::tuple superbpe_train(const py::object& data, const py::object& files, int64_t vocab_size, int64_t transition,
                         const std::string& pattern, const py::object& special_tokens, int64_t min_frequency,
                         const std::string& tie_break, int num_threads) {
    storygpt::TrainOptions options;
    options.vocab_size = vocab_size;
    options.pattern = storygpt::parse_pattern(pattern);
    options.tie_break = storygpt::parse_tie_break(tie_break);
    options.min_frequency = min_frequency;
    options.num_threads = num_threads;
    for (auto s : special_tokens) options.special_tokens.push_back(to_bytes(s, "special token"));
    std::vector<std::string> paths;
    if (!files.is_none()) {
        if (py::isinstance<py::str>(files) || py::isinstance<py::bytes>(files))
            throw py::type_error("files must be a list of paths, not a single path");
        for (auto f : files) paths.push_back(path_of(f));
    }
    std::string owned;
    std::vector<std::string_view> texts;
    if (py::isinstance<py::bytes>(data)) {
        texts.push_back(view_of(py::reinterpret_borrow<py::bytes>(data)));
    } else if (!data.is_none()) {
        owned = to_bytes(data, "data");
        texts.push_back(owned);
    }
    storygpt::SuperBPEMerges out;
    {
        py::gil_scoped_release release;
        out = storygpt::superbpe_train(texts, paths, options, transition);
    }
    py::list merges(out.merges.size());
    for (size_t i = 0; i < out.merges.size(); ++i)
        merges[i] = py::make_tuple(out.merges[i].first, out.merges[i].second);
    return py::make_tuple(merges, out.stage1);
}

}  // namespace

void bind_superbpe(py::module_& m) {
    m.def("superbpe_train", &superbpe_train, py::arg("data") = py::none(), py::arg("files") = py::none(), py::kw_only(),
          py::arg("vocab_size"), py::arg("transition"), py::arg("pattern") = "simple",
          py::arg("special_tokens") = py::list(), py::arg("min_frequency") = 1, py::arg("tie_break") = "smallest_ids",
          py::arg("num_threads") = 1,
          R"doc(Learn SuperBPE merges; same result as superbpe_reference.train.

Args: as train(), plus transition (T: the vocabulary size where stage 2 starts,
256 + len(special_tokens) <= T < vocab_size).  Files are streamed twice (once
per stage), never read whole.  GIL released.

Returns:
    (merges, n_stage1): merges[i] = (left_id, right_id) makes id 256 + i; the
    first n_stage1 are stage 1's.

Raises:
    ValueError: a bad vocab_size or transition (the value named), unknown
        pattern or tie_break, min_frequency < 1.
    OSError: an unreadable file, named.)doc");
}
