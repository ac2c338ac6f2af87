// Layout decisions of the lite runtime (see layout.h).
#include "mycel/lite/layout.h"

#include <algorithm>
#include <string>

#include "mycel/kernels/cpu/dnnl_layout.h"
#include "mycel/ops/nn_window.h"

namespace mycel::lite {
namespace {

bool is_nchw_f32(const TensorMeta& m) {
  return m.dtype == DType::float32 && m.shape.size() == 4 && m.shape[1] > 0 && m.shape[2] > 0 &&
         m.shape[3] > 0;
}

// A float activation that convolutions, poolings and zero-keeping ops pass on blocked: float32
// (activation_tag()), or bf16 where oneDNN has jit bf16 convolutions (bf16_activation_tag(): NHWC
// on AVX512-BF16 CPUs; a bf16 graph on plain NCHW reordered around every convolution).
bool is_nchw_act(const TensorMeta& m) {
  if (m.dtype == DType::bfloat16) {
    static const bool ok = cpu::bf16_activation_tag() != dnnl::memory::format_tag::undef;
    return ok && m.shape.size() == 4 && m.shape[1] > 0 && m.shape[2] > 0 && m.shape[3] > 0;
  }
  return is_nchw_f32(m);
}

// Elementwise ops that map zero to zero: the layout's zero channel padding stays zero.
bool keeps_zero(const std::string& op) {
  static const char* const kOps[] = {"add", "sub", "mul",  "maximum", "minimum",
                                     "neg", "abs", "relu", "relu6",   "square"};
  for (const char* o : kOps)
    if (op == o) return true;
  return false;
}

bool is_pool(const std::string& op) { return op == "max_pool2d" || op == "avg_pool2d"; }

bool is_u8_4d(const TensorMeta& m) { return m.dtype == DType::uint8 && m.shape.size() == 4; }

// A 2x2, stride-2, unpadded max pooling of uint8 data: the session's NHWC loop takes it.
bool u8_pool_2x2(const NodeInfo& n, const std::vector<TensorMeta>& meta) {
  if (n.op->name != "max_pool2d" || n.inputs.empty() || n.inputs[0] < 0 ||
      !is_u8_4d(meta[n.inputs[0]]))
    return false;
  const cpu::WindowGeom g = pool2d_window(*n.op, n.attrs, meta[n.inputs[0]].shape);
  return g.kh == 2 && g.kw == 2 && g.sh == 2 && g.sw == 2 && g.dh == 1 && g.dw == 1 && g.pt == 0 &&
         g.pb == 0 && g.pl == 0 && g.pr == 0 && 2 * g.oh <= g.h && 2 * g.ow <= g.w;
}

// A mean over H and W of a 4-D float32 tensor, or a bf16 one in oneDNN's bf16 activation
// layout (infer_small_bf16.h's loop; global average pooling; keep_dims either way).
bool mean_hw(const NodeInfo& n, const std::vector<TensorMeta>& meta) {
  if (n.op->name != "mean" || n.inputs.size() != 1 || n.inputs[0] < 0 || n.outputs.size() != 1 ||
      n.outputs[0] < 0)
    return false;
  const TensorMeta& x = meta[n.inputs[0]];
  const bool bf16 = x.dtype == DType::bfloat16 && is_nchw_act(x);
  if (!(is_nchw_f32(x) || bf16) || meta[n.outputs[0]].dtype != x.dtype) return false;
  std::vector<int64_t> axes = n.attrs.get_ints("axis");
  for (int64_t& a : axes) a = a < 0 ? a + 4 : a;
  std::sort(axes.begin(), axes.end());
  return axes == std::vector<int64_t>{2, 3};
}

// A float32 add of two 4-d tensors of its output's shape (no broadcasting).
bool nhwc_add(const NodeInfo& n, const std::vector<TensorMeta>& meta) {
  if (n.op->name != "add" || n.inputs.size() != 2 || n.outputs.size() != 1 || n.outputs[0] < 0)
    return false;
  const TensorMeta& y = meta[n.outputs[0]];
  for (int id : n.inputs)
    if (id < 0 || !(meta[id] == y) || !is_nchw_f32(meta[id])) return false;
  return true;
}

}  // namespace

LayoutPlan plan_layouts(const Graph& g, const std::vector<TensorMeta>& meta,
                        const std::vector<char>& eager) {
  LayoutPlan p;
  p.blocked.assign(meta.size(), kPlainLayout);
  p.nodes.assign(g.nodes.size(), NodeLayout{});
  if (cpu::activation_tag() == dnnl::memory::format_tag::undef) return p;
  // wanted: a float op reads the value in oneDNN's blocked layout; nhwc: an int8 op reads it NHWC.
  std::vector<char> wanted(meta.size(), 0), nhwc(meta.size(), 0), is_output(meta.size(), 0);
  for (int id : g.outputs) is_output[id] = 1;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const NodeInfo& n = g.nodes[k];
    const std::string& op = n.op->name;
    if ((op == "conv2d" || is_pool(op)) && !n.inputs.empty() && n.inputs[0] >= 0)
      wanted[n.inputs[0]] = 1;
    if (keeps_zero(op))
      for (int id : n.inputs)
        if (id >= 0) wanted[id] = 1;
    if (mean_hw(n, meta)) wanted[n.inputs[0]] = nhwc[n.inputs[0]] = 1;  // either layout
    if ((op == "qconv2d" || op == "qavg_pool2d" || u8_pool_2x2(n, meta)) && !n.inputs.empty() &&
        n.inputs[0] >= 0)
      nhwc[n.inputs[0]] = 1;
    if (op == "qadd")
      for (int id : n.inputs)
        if (id >= 0) nhwc[id] = 1;
  }
  // Float32 values between int8 layers (exact residual sums: a qconv2d's float output, the float
  // add of a block, the quantize_linear feeding the next block) stay NHWC where their readers
  // take NHWC: marked from the readers back (reverse order), through elementwise add and
  // quantize_linear.
  for (size_t k = g.nodes.size(); k-- > 0;) {
    const NodeInfo& n = g.nodes[k];
    if (eager[k] || n.outputs.size() != 1 || n.outputs[0] < 0 || !nhwc[n.outputs[0]] ||
        is_output[n.outputs[0]])
      continue;
    const int out = n.outputs[0];
    if (n.op->name == "quantize_linear" && !n.inputs.empty() && n.inputs[0] >= 0 &&
        is_nchw_f32(meta[n.inputs[0]]))
      nhwc[n.inputs[0]] = 1;
    if (nhwc_add(n, meta) && meta[out].dtype == DType::float32)
      for (int id : n.inputs) nhwc[id] = 1;
  }
  auto is = [&](int id, char layout) { return id >= 0 && p.blocked[id] == layout; };
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const NodeInfo& n = g.nodes[k];
    if (eager[k] || n.outputs.size() != 1 || n.outputs[0] < 0 || n.inputs.empty() ||
        n.inputs[0] < 0)
      continue;
    const int out = n.outputs[0], in = n.inputs[0];
    const std::string& op = n.op->name;
    NodeLayout& l = p.nodes[k];
    if (op == "qconv2d") {  // int8: NHWC in, and out (uint8, or float32 for a qadd) where read so
      const bool dst = !is_output[out] && meta[out].shape.size() == 4 && nhwc[out] &&
                       (meta[out].dtype == DType::uint8 || meta[out].dtype == DType::float32);
      if (!is(in, kNhwcLayout) && !dst) continue;
      l.mode = NodeLayout::Mode::kWindow;
      l.src_blocked = is(in, kNhwcLayout);
      l.dst_blocked = dst;
      if (dst) p.blocked[out] = kNhwcLayout;
      continue;
    }
    if (u8_pool_2x2(n, meta) || op == "qavg_pool2d") {
      if (!is(in, kNhwcLayout) || is_output[out]) continue;
      l.mode = NodeLayout::Mode::kWindow;
      l.src_blocked = true;
      p.blocked[out] = kNhwcLayout;
      continue;
    }
    if (op == "qadd") {  // elementwise: over the NHWC buffers when every input is NHWC
      bool all = !is_output[out];
      for (int id : n.inputs) all = all && is(id, kNhwcLayout);
      if (!all) continue;
      l.mode = NodeLayout::Mode::kFlat;
      l.src_blocked = true;
      p.blocked[out] = kNhwcLayout;
      continue;
    }
    if ((nhwc_add(n, meta) || (op == "quantize_linear" && is_nchw_f32(meta[in]))) && nhwc[out] &&
        !is_output[out]) {  // elementwise over NHWC buffers (no padding): NHWC out
      bool all = true;
      for (int id : n.inputs) all = all && is(id, kNhwcLayout);
      if (all) {
        l.mode = NodeLayout::Mode::kFlat;
        l.src_blocked = true;
        p.blocked[out] = kNhwcLayout;
        continue;
      }
    }
    if (mean_hw(n, meta)) {  // reads the blocked or NHWC layout, writes plain
      if (!is(in, kPlainLayout)) l.mode = NodeLayout::Mode::kMeanHW, l.src_blocked = true;
      continue;
    }
    if (is_output[out] || !is_nchw_act(meta[out])) continue;
    if (op == "conv2d" && wanted[out] && is_nchw_act(meta[in]) &&
        meta[in].dtype == meta[out].dtype && numel(meta[n.inputs[1]].shape) > 0 &&
        !is(in, kNhwcLayout)) {
      l.mode = NodeLayout::Mode::kWindow;
      l.src_blocked = is(in, kBlockedLayout);
    } else if (is_pool(op) && is(in, kBlockedLayout)) {
      l.mode = NodeLayout::Mode::kWindow;
      l.src_blocked = true;
    } else if (keeps_zero(op)) {
      bool all = true;
      for (int id : n.inputs) all = all && is(id, kBlockedLayout) && meta[id] == meta[out];
      if (!all) continue;
      l.mode = NodeLayout::Mode::kFlat;
      l.src_blocked = true;
    } else {
      continue;
    }
    p.blocked[out] = kBlockedLayout;
  }
  return p;
}

}  // namespace mycel::lite
