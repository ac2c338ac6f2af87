// Checkpoint glue: the C++ readers and writers behind mycel.train.serialization.
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "mycel/frontend/py_convert.h"
#include "mycel/io/io.h"
#include "mycel/io/strategy_file.h"

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
  // Encrypted checkpoints: the key arrives as bytes; the mode as MindSpore spells it.
  io.def(
      "save_ckpt_encrypted",
      [](const std::string& path, const Pairs& tensors, nb::bytes key, const std::string& mode) {
        auto named = to_named(tensors);
        const io::CipherMode m = io::parse_cipher_mode(mode, "save_checkpoint");
        std::string k(key.c_str(), key.size());
        nb::gil_scoped_release release;
        io::save_ckpt(path, named, k, m);
      },
      nb::arg("path"), nb::arg("tensors"), nb::arg("key"), nb::arg("mode"),
      "Writes [(name, Tensor)] to an encrypted .ckpt file atomically.");
  io.def(
      "load_ckpt_encrypted",
      [](const std::string& path, nb::bytes key, const std::string& mode) {
        const io::CipherMode m = io::parse_cipher_mode(mode, "load_checkpoint");
        std::string k(key.c_str(), key.size());
        std::vector<io::NamedTensor> named;
        {
          nb::gil_scoped_release release;
          named = io::load_ckpt(path, k, m);
        }
        return to_pairs(std::move(named));
      },
      nb::arg("path"), nb::arg("key"), nb::arg("mode"),
      "[(name, Tensor)] of an encrypted .ckpt file, decrypted and validated.");
  io.def(
      "encrypt_bytes",
      [](nb::bytes plain, nb::bytes key, const std::string& mode, const std::string& fn) {
        std::string out = io::seal(std::string_view(plain.c_str(), plain.size()),
                                   std::string_view(key.c_str(), key.size()),
                                   io::parse_cipher_mode(mode, fn), fn);
        return nb::bytes(out.data(), out.size());
      },
      nb::arg("plain"), nb::arg("key"), nb::arg("mode"), nb::arg("fn"),
      "The sealed envelope of `plain` (src/mycel/io/cipher.h).");
  io.def(
      "decrypt_bytes",
      [](nb::bytes sealed, nb::bytes key, const std::string& mode, const std::string& what) {
        std::string out = io::unseal(std::string_view(sealed.c_str(), sealed.size()),
                                     std::string_view(key.c_str(), key.size()),
                                     io::parse_cipher_mode(mode, "load"), what);
        return nb::bytes(out.data(), out.size());
      },
      nb::arg("sealed"), nb::arg("key"), nb::arg("mode"), nb::arg("what"),
      "The plain bytes of a sealed envelope; ValueError for a wrong key or altered bytes.");
  // MindSpore's strategy files: layouts as (name, device_matrix, tensor_map, slice_shape,
  // field, opt_shard_step, opt_shard_size) with MindSpore's right-counted tensor map; operator
  // strategies as (name, stage, [[dims] per input]).
  using LayoutRow = std::tuple<std::string, std::vector<int64_t>, std::vector<int64_t>,
                               std::vector<int64_t>, int64_t, int64_t, int64_t>;
  using OpRow = std::tuple<std::string, int64_t, std::vector<std::vector<int64_t>>>;
  io.def(
      "save_strategy_file",
      [](const std::string& path, int64_t current_stage, const std::vector<OpRow>& ops,
         const std::vector<LayoutRow>& layouts) {
        io::StrategyFile f;
        f.current_stage = current_stage;
        for (const auto& [name, stage, inputs] : ops) f.ops.push_back({name, stage, inputs});
        for (const auto& [name, dev, tmap, split, field, step, size] : layouts)
          f.layouts.push_back({name, dev, tmap, split, field, step, size});
        nb::gil_scoped_release release;
        io::save_strategy_file(path, f);
      },
      nb::arg("path"), nb::arg("current_stage"), nb::arg("ops"), nb::arg("layouts"),
      "Writes a MindSpore strategy file (protobuf) atomically.");
  io.def(
      "load_strategy_file",
      [](const std::string& path) {
        io::StrategyFile f;
        {
          nb::gil_scoped_release release;
          f = io::load_strategy_file(path);
        }
        std::vector<OpRow> ops;
        for (auto& op : f.ops) ops.emplace_back(op.name, op.stage, op.inputs);
        std::vector<LayoutRow> layouts;
        for (auto& l : f.layouts)
          layouts.emplace_back(l.name, l.device_matrix, l.tensor_map, l.slice_shape, l.field,
                               l.opt_shard_step, l.opt_shard_size);
        return std::make_tuple(f.current_stage, ops, layouts);
      },
      nb::arg("path"), "(current_stage, ops, layouts) of a MindSpore strategy file, validated.");
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
