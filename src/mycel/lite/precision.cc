// bf16 precision for the lite runtime (see precision.h).
#include "mycel/lite/precision.h"

#include <map>
#include <oneapi/dnnl/dnnl.hpp>

#include "mycel/kernels/cpu/dnnl_util.h"

namespace mycel::lite {
namespace {

const char* isa_name(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::sse41:
      return "sse41";
    case dnnl::cpu_isa::avx:
      return "avx";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    case dnnl::cpu_isa::avx2_vnni:
      return "avx2_vnni";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "other";
  }
}

// Asks oneDNN for a small bf16 convolution and matmul: what it cannot create here, the runtime
// could only run through float32 fallbacks (slower than float32 itself).
std::string probe_bf16() {
  using dnnl::memory;
  const auto bf = memory::data_type::bf16;
  const auto any = memory::format_tag::any;
  dnnl::engine& eng = cpu::dnnl_util::engine();
  std::string missing;
  try {
    const memory::desc src({1, 16, 8, 8}, bf, any), wei({16, 16, 3, 3}, bf, any),
        dst({1, 16, 6, 6}, bf, any);
    dnnl::convolution_forward::primitive_desc(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                        dnnl::algorithm::convolution_direct, src, wei, dst, {1, 1},
                                        {0, 0}, {0, 0}),
        eng);
  } catch (const dnnl::error&) {
    missing = "convolution";
  }
  try {
    const memory::desc a({1, 64}, bf, memory::format_tag::ab), b({64, 16}, bf, any),
        c({1, 16}, bf, memory::format_tag::ab);
    dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), eng);
  } catch (const dnnl::error&) {
    missing += missing.empty() ? "matmul" : " or matmul";
  }
  if (missing.empty()) return "";
  const dnnl_version_t* v = dnnl_version();
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
         std::to_string(v->patch) + " has no bf16 " + missing + " on this CPU (ISA " +
         isa_name(dnnl::get_effective_cpu_isa()) + ")";
}

// Ops that only move or view data, and every op that computes, must have a bf16 kernel; casts
// are refused (they pin a dtype the rewrite would change).
std::string unsupported_op(const Graph& g) {
  for (const NodeInfo& n : g.nodes) {
    if (n.op->name == "cast" || n.op->name == "quantize_linear" ||
        n.op->name == "dequantize_linear" || n.op->name == "qconv2d" || n.op->name == "qdense" ||
        n.op->name == "qadd")
      return "node '" + n.name + "' (" + n.op->name + ") pins its dtypes";
    const size_t di = static_cast<size_t>(n.op->dtype_input);
    if (di < n.inputs.size() && n.inputs[di] >= 0 &&
        g.values[n.inputs[di]].dtype == DType::float32 && !n.op->supports(DType::bfloat16))
      return "node '" + n.name + "' (" + n.op->name + ") has no bfloat16 kernel";
  }
  return "";
}

}  // namespace

bool native_bf16(std::string* why) {
  static const std::string reason = probe_bf16();
  if (why) *why = reason;
  return reason.empty();
}

std::string to_bf16(Graph& g) {
  if (std::string why = unsupported_op(g); !why.empty()) return why;
  const OpDef& cast = Registry::get().at("cast");
  auto cast_node = [&](int from, int to, const std::string& name) {
    NodeInfo n;
    n.op = &cast;
    n.name = name;
    n.inputs = {from};
    n.outputs = {to};
    n.attrs = make_attrs(cast, std::map<std::string, AttrValue>{{"dtype", g.values[to].dtype}});
    return n;
  };
  const size_t nv = g.values.size();
  std::vector<char> is_input(nv, 0), is_output(nv, 0);
  for (int id : g.inputs) is_input[id] = 1;
  for (int id : g.outputs) is_output[id] = 1;
  // 1. Every float32 value but the model's inputs becomes bf16 (weights converted in place).
  for (size_t i = 0; i < nv; ++i) {
    ValueInfo& v = g.values[i];
    if (v.dtype != DType::float32 || is_input[i]) continue;
    v.dtype = DType::bfloat16;
    if (v.weight >= 0) g.weights[v.weight] = g.weights[v.weight].to(DType::bfloat16);
  }
  // 2. A bf16 copy of each float32 input, read by every node in its place.
  std::vector<int> rename(nv, -1);
  std::vector<NodeInfo> head;
  for (int id : g.inputs) {
    if (g.values[id].dtype != DType::float32 || rename[id] >= 0) continue;
    ValueInfo v = g.values[id];
    v.name += ".bf16";
    v.dtype = DType::bfloat16;
    g.values.push_back(v);
    rename[id] = static_cast<int>(g.values.size()) - 1;
    head.push_back(cast_node(id, rename[id], v.name));
  }
  // 3. Each model output that became bf16: its producer writes a bf16 twin, a cast restores it.
  std::vector<NodeInfo> tail;
  for (int id : g.outputs) {
    if (g.values[id].dtype != DType::bfloat16 || rename[id] >= 0 || g.values[id].weight >= 0)
      continue;
    ValueInfo v = g.values[id];
    v.name += ".bf16";
    g.values.push_back(v);
    rename[id] = static_cast<int>(g.values.size()) - 1;
    g.values[id].dtype = DType::float32;
    tail.push_back(cast_node(rename[id], id, g.values[id].name + ".f32"));
  }
  for (NodeInfo& n : g.nodes) {
    for (int& id : n.inputs)
      if (id >= 0 && id < static_cast<int>(nv) && rename[id] >= 0) id = rename[id];
    for (int& id : n.outputs)
      if (id >= 0 && is_output[id] && rename[id] >= 0) id = rename[id];
  }
  // A weight that is itself a model output: cast it back too (no producer to retarget).
  for (int& id : g.outputs)
    if (g.values[id].weight >= 0 && g.values[id].dtype == DType::bfloat16) {
      ValueInfo v = g.values[id];
      v.dtype = DType::float32;
      v.weight = -1;
      v.name += ".f32";
      g.values.push_back(v);
      tail.push_back(cast_node(id, static_cast<int>(g.values.size()) - 1, v.name));
      id = static_cast<int>(g.values.size()) - 1;
    }
  g.nodes.insert(g.nodes.begin(), head.begin(), head.end());
  g.nodes.insert(g.nodes.end(), tail.begin(), tail.end());
  validate(g, "lite bf16 rewrite");
  return "";
}

}  // namespace mycel::lite
