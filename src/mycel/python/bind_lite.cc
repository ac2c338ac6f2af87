#ifdef MYCEL_WITH_LITE
// Lite glue: MINDIR serialization from the exporter's flat graph, and the lite runtime's
// Session as _mycel.lite.Session (the Python binding of libmycel_lite's C++ API).
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>

#include "mycel/frontend/py_convert.h"
#include "mycel/kernels/cpu/conv_winograd.h"
#include "mycel/kernels/cpu/quant.h"
#include "mycel/lite/model_file.h"
#include "mycel/lite/session.h"
#include "mycel/ops/quant_ops.h"

namespace mycel::py {
namespace {

/// Checked attributes of `op` from a {name: value} dict (None: the default).
Attrs attrs_from_py(const OpDef& op, nb::dict d) {
  std::map<std::string, AttrValue> named;
  for (auto [k, val] : d) {
    std::string name = nb::cast<std::string>(k);
    int idx = op.attr_index(name);
    if (idx < 0) MYCEL_THROW(ValueError, "[", op.name, "] has no attribute '", name, "'");
    if (!val.is_none()) named[name] = to_attr(op, op.attrs[idx], val);
  }
  return make_attrs(op, named);
}

/// A lite::Graph from Python lists: values (name, dtype, shape, weight index), weights
/// (Tensors), nodes (op, name, inputs, outputs, {attr: value}), inputs, outputs.
lite::Graph graph_from_py(nb::list values, nb::list weights, nb::list nodes,
                          std::vector<int> inputs, std::vector<int> outputs) {
  lite::Graph g;
  for (nb::handle v : values) {
    nb::tuple t = nb::cast<nb::tuple>(v);
    lite::ValueInfo vi;
    vi.name = nb::cast<std::string>(t[0]);
    vi.dtype = to_dtype(t[1]);
    vi.shape = nb::cast<std::vector<int64_t>>(t[2]);
    vi.weight = nb::cast<int>(t[3]);
    g.values.push_back(std::move(vi));
  }
  for (nb::handle w : weights) g.weights.push_back(to_tensor(w));
  for (nb::handle n : nodes) {
    nb::tuple t = nb::cast<nb::tuple>(n);
    lite::NodeInfo ni;
    ni.op = &Registry::get().at(nb::cast<std::string>(t[0]));
    ni.name = nb::cast<std::string>(t[1]);
    ni.inputs = nb::cast<std::vector<int>>(t[2]);
    ni.outputs = nb::cast<std::vector<int>>(t[3]);
    ni.attrs = attrs_from_py(*ni.op, nb::cast<nb::dict>(t[4]));
    g.nodes.push_back(std::move(ni));
  }
  g.inputs = std::move(inputs);
  g.outputs = std::move(outputs);
  return g;
}

nb::dict stats_to_py(const lite::SessionStats& s) {
  nb::dict d;
  d["arena_bytes"] = s.arena_bytes;
  d["weight_bytes"] = s.weight_bytes;
  d["num_nodes"] = s.num_nodes;
  d["num_plans"] = s.num_plans;
  d["num_blocked"] = s.num_blocked;
  d["num_reorders"] = s.num_reorders;
  d["num_small"] = s.num_small;
  d["num_winograd"] = s.num_winograd;
  d["num_stream"] = s.num_stream;
  d["num_serial"] = s.num_serial;
  d["plan_threads"] = s.plan_threads;
  d["node_work"] = s.node_work;
  d["node_serial"] = std::vector<bool>(s.node_serial.begin(), s.node_serial.end());
  d["batch_norms_folded"] = s.optimized.batch_norms_folded;
  d["constants_folded"] = s.optimized.constants_folded;
  d["activations_fused"] = s.optimized.activations_fused;
  d["dead_nodes_removed"] = s.optimized.dead_nodes_removed;
  d["node_us"] = s.node_us;                // empty unless the session profiles
  d["node_thread_us"] = s.node_thread_us;  // per node, each thread's CPU us (several threads)
  d["precision"] = s.precision;
  d["precision_note"] = s.precision_note;
  return d;
}

lite::SessionOptions session_options(int num_threads, bool optimize, bool profile,
                                     const std::string& precision, bool emulate_bf16,
                                     bool small_kernels, bool blocked_layout, int64_t serial_work,
                                     int64_t bf16_min_work) {
  lite::SessionOptions o;
  o.serial_work = serial_work;
  o.bf16_min_work = bf16_min_work;
  o.small_kernels = small_kernels;
  o.blocked_layout = blocked_layout;
  o.num_threads = num_threads;
  o.optimize = optimize;
  o.profile = profile;
  if (precision == "bfloat16" || precision == "bf16")
    o.precision = lite::Precision::kBFloat16;
  else if (precision != "float32" && precision != "fp32")
    MYCEL_THROW(ValueError, "lite.Session: precision must be 'float32' or 'bfloat16', got '",
                precision, "'");
  o.emulate_bf16 = emulate_bf16;
  return o;
}

/// A parsed image of bytes held by a shared buffer (weights borrow it).
lite::Graph parse_bytes(nb::bytes data) {
  auto buf = std::shared_ptr<uint8_t[]>(new uint8_t[data.size() + 64]);
  // 64-byte aligned copy, as a mapped file would be.
  uint8_t* p = buf.get() + (64 - reinterpret_cast<uintptr_t>(buf.get()) % 64) % 64;
  std::memcpy(p, data.c_str(), data.size());
  return lite::parse(p, data.size(), std::shared_ptr<void>(buf, buf.get()));
}

}  // namespace

void init_lite(nb::module_& m) {
  nb::module_ l = m.def_submodule("lite", "The lite runtime and its model file (MINDIR).");
  l.def(
      "winograd_tile",
      [](int64_t c, int64_t oc, int64_t h, int64_t w) {
        cpu::WindowGeom g;
        g.n = 1, g.c = c, g.h = h, g.w = w, g.oc = oc, g.kh = g.kw = 3;
        g.pt = g.pb = g.pl = g.pr = 1, g.oh = h, g.ow = w;
        return cpu::winograd_tile(DType::float32, g);
      },
      nb::arg("c"), nb::arg("oc"), nb::arg("h"), nb::arg("w"),
      "The Winograd output tile (2 or 4; 0: none) a float32 3x3 convolution with padding 1 of c "
      "to oc channels at h x w gets on blocked tensors here (conv_winograd.h's rule).");
  l.def(
      "serialize",
      [](nb::list values, nb::list weights, nb::list nodes, std::vector<int> inputs,
         std::vector<int> outputs) {
        std::string s = lite::serialize(
            graph_from_py(values, weights, nodes, std::move(inputs), std::move(outputs)));
        return nb::bytes(s.data(), s.size());
      },
      "MINDIR file bytes of a flat graph (values, weights, nodes, inputs, outputs).");
  l.def(
      "run_int8",
      [](const std::string& op_name, nb::list inputs, nb::dict attrs_py) {
        const OpDef& op = Registry::get().at(op_name);
        std::vector<Tensor> in;
        for (nb::handle h : inputs) in.push_back(h.is_none() ? Tensor() : to_tensor(h));
        while (in.size() < op.inputs.size()) in.emplace_back();
        const Attrs attrs = attrs_from_py(op, attrs_py);
        std::vector<TensorMeta> metas;
        std::vector<const TensorMeta*> ptrs;
        for (const Tensor& t : in) metas.push_back(t.defined() ? t.meta() : TensorMeta{});
        for (size_t i = 0; i < in.size(); ++i)
          ptrs.push_back(in[i].defined() ? &metas[i] : nullptr);
        Tensor out = Tensor::empty(infer_checked(op, InferContext{op, ptrs, attrs})[0]);
        cpu::Int8Path path;
        {
          nb::gil_scoped_release r;
          run_int8_op(op, in, out, attrs, false, &path);
        }
        return nb::make_tuple(out, path.name());
      },
      nb::arg("op"), nb::arg("inputs"), nb::arg("attrs"),
      "Runs qconv2d or qdense (inputs x, w, b or None; attributes as a dict) as the registry "
      "kernel does; returns (output, path): 'onednn:<implementation>', 'rows' or 'reference'.");
  l.def(
      "native_bf16",
      [] {
        std::string why;
        const bool ok = lite::native_bf16(&why);
        return nb::make_tuple(ok, why);
      },
      "(whether oneDNN runs bf16 convolutions and matmuls natively here, why not).");
  l.def(
      "cpu_has_vnni", [] { return cpu::cpu_has_vnni(); },
      "Whether this CPU multiplies u8 x s8 exactly (VNNI); without it int8 weights must fit s7 for "
      "oneDNN.");
  l.def(
      "verify", [](nb::bytes data) { parse_bytes(data); },
      "Parses and verifies MINDIR bytes; raises ValueError naming the first problem.");
  nb::class_<lite::Session>(l, "Session", "A loaded, optimized MINDIR model (libmycel_lite).")
      .def_static(
          "from_file",
          [](const std::string& path, int num_threads, bool optimize, bool profile,
             const std::string& precision, bool emulate_bf16, bool small_kernels,
             bool blocked_layout, int64_t serial_work, int64_t bf16_min_work) {
            lite::SessionOptions o =
                session_options(num_threads, optimize, profile, precision, emulate_bf16,
                                small_kernels, blocked_layout, serial_work, bf16_min_work);
            nb::gil_scoped_release r;
            return new lite::Session(lite::Session::from_file(path, o));
          },
          nb::arg("path"), nb::arg("num_threads") = 0, nb::arg("optimize") = true,
          nb::arg("profile") = false, nb::arg("precision") = "float32",
          nb::arg("emulate_bf16") = false, nb::arg("small_kernels") = true,
          nb::arg("blocked_layout") = true, nb::arg("serial_work") = -1,
          nb::arg("bf16_min_work") = -1)
      .def_static(
          "from_bytes",
          [](nb::bytes data, int num_threads, bool optimize, bool profile,
             const std::string& precision, bool emulate_bf16, bool small_kernels,
             bool blocked_layout, int64_t serial_work, int64_t bf16_min_work) {
            lite::SessionOptions o =
                session_options(num_threads, optimize, profile, precision, emulate_bf16,
                                small_kernels, blocked_layout, serial_work, bf16_min_work);
            return new lite::Session(parse_bytes(data), o);
          },
          nb::arg("data"), nb::arg("num_threads") = 0, nb::arg("optimize") = true,
          nb::arg("profile") = false, nb::arg("precision") = "float32",
          nb::arg("emulate_bf16") = false, nb::arg("small_kernels") = true,
          nb::arg("blocked_layout") = true, nb::arg("serial_work") = -1,
          nb::arg("bf16_min_work") = -1)
      .def(
          "run",
          [](lite::Session& s, nb::list inputs) {
            std::vector<Tensor> ins;
            for (nb::handle h : inputs) ins.push_back(to_tensor(h));
            std::vector<Tensor> outs;
            {
              nb::gil_scoped_release r;
              outs = s.run(ins);
            }
            return outs;
          },
          "Runs the model on a list of input tensors; returns the list of outputs.")
      .def("stats", [](const lite::Session& s) { return stats_to_py(s.stats()); })
      .def("reset_profile", &lite::Session::reset_profile,
           "Restarts the per-node profile (stats()['node_us']).")
      .def_prop_ro("num_inputs", [](const lite::Session& s) { return s.graph().inputs.size(); })
      .def_prop_ro("input_shapes",
                   [](const lite::Session& s) {
                     std::vector<std::vector<int64_t>> r;
                     for (int id : s.graph().inputs) r.push_back(s.graph().values[id].shape);
                     return r;
                   })
      .def_prop_ro(
          "node_ops",
          [](const lite::Session& s) {
            std::vector<std::string> r;
            for (const auto& n : s.graph().nodes)
              r.push_back(n.op->name + (n.post_act == lite::NodeInfo::Act::kRelu    ? "+relu"
                                        : n.post_act == lite::NodeInfo::Act::kRelu6 ? "+relu6"
                                                                                    : ""));
            return r;
          },
          "The op of each node after optimization ('+relu' marks a fused activation).");
}

}  // namespace mycel::py
#endif  // MYCEL_WITH_LITE
