// Checkpoint glue: the C++ readers and writers behind mycel.train.serialization.
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "mycel/frontend/py_convert.h"
#include "mycel/io/io.h"

namespace mycel::py {

namespace {
using Pairs = std::vector<std::pair<std::string, Tensor>>;

std::vector<io::NamedTensor> to_named(const Pairs& in) {
  std::vector<io::NamedTensor> out;
  out.reserve(in.size());
  for (const auto& [name, t] : in) out.push_back({name, t});
  return out;
}

Pairs to_pairs(std::vector<io::NamedTensor>&& in) {
  Pairs out;
  out.reserve(in.size());
  for (auto& e : in) out.emplace_back(std::move(e.name), std::move(e.tensor));
  return out;
}
}  // namespace

void init_io(nb::module_& m) {
  nb::module_ io = m.def_submodule("io", "Checkpoint files: .ckpt and safetensors (C++).");
  // The GIL is released around file I/O: `tensors` holds its own references meanwhile.
  io.def(
      "save_ckpt",
      [](const std::string& path, const Pairs& tensors) {
        auto named = to_named(tensors);
        nb::gil_scoped_release release;
        io::save_ckpt(path, named);
      },
      nb::arg("path"), nb::arg("tensors"), "Writes [(name, Tensor)] to a .ckpt file atomically.");
  io.def(
      "load_ckpt",
      [](const std::string& path) {
        std::vector<io::NamedTensor> named;
        {
          nb::gil_scoped_release release;
          named = io::load_ckpt(path);
        }
        return to_pairs(std::move(named));
      },
      nb::arg("path"), "[(name, Tensor)] of a .ckpt file, validated.");
  io.def(
      "save_safetensors",
      [](const std::string& path, const Pairs& tensors,
         const std::map<std::string, std::string>& meta) {
        auto named = to_named(tensors);
        nb::gil_scoped_release release;
        io::save_safetensors(path, named, meta);
      },
      nb::arg("path"), nb::arg("tensors"),
      nb::arg("metadata") = std::map<std::string, std::string>{},
      "Writes [(name, Tensor)] and string metadata to a safetensors file atomically.");
  io.def(
      "load_safetensors",
      [](const std::string& path) {
        io::SafetensorsFile f;
        {
          nb::gil_scoped_release release;
          f = io::load_safetensors(path);
        }
        return std::make_pair(to_pairs(std::move(f.tensors)), std::move(f.metadata));
      },
      nb::arg("path"), "([(name, Tensor)], metadata) of a safetensors file, validated.");
}

}  // namespace mycel::py
