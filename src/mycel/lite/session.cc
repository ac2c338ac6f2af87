// Session: shape planning, the static memory plan and the run loop (see session.h).
#include "mycel/lite/session.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>

#include <omp.h>
#include <time.h>

#include "mycel/core/error.h"
#include "mycel/core/parallel.h"
#include "mycel/kernels/cpu/conv_stream.h"
#include "mycel/kernels/cpu/conv_winograd.h"
#include "mycel/kernels/cpu/dnnl_layout.h"
#include "mycel/kernels/cpu/infer_small_bf16.h"
#include "mycel/kernels/cpu/quant.h"
#include "mycel/lite/thread_plan.h"
#include "mycel/ops/nn_window.h"

namespace mycel::lite {
namespace {

constexpr size_t kBufAlign = 64;
// Past this many elements a layer is worth oneDNN's call (and its threads): infer_small.h's
// pooling and unblocking loops are single-threaded.
constexpr int64_t kSmallElems = 1 << 16;

struct Buffer {
  size_t size;
  int start, end;  // node indices, inclusive
  int value;
  size_t offset = 0;
};

// Best fit, largest first: each buffer goes to the lowest offset where it overlaps no placed
// buffer whose lifetime overlaps its own. Returns the arena size.
size_t place(std::vector<Buffer>& bufs) {
  std::vector<size_t> order(bufs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return bufs[a].size > bufs[b].size; });
  std::vector<size_t> placed;
  size_t total = 0;
  for (size_t i : order) {
    Buffer& b = bufs[i];
    std::vector<std::pair<size_t, size_t>> busy;
    for (size_t j : placed) {
      const Buffer& o = bufs[j];
      if (o.start <= b.end && b.start <= o.end) busy.emplace_back(o.offset, o.offset + o.size);
    }
    std::sort(busy.begin(), busy.end());
    size_t off = 0;
    for (auto [lo, hi] : busy) {
      if (off + b.size <= lo) break;
      off = std::max(off, (hi + kBufAlign - 1) / kBufAlign * kBufAlign);
    }
    b.offset = off;
    total = std::max(total, off + b.size);
    placed.push_back(i);
  }
  return total;
}

cpu::SmallAct small_act(NodeInfo::Act a) {
  return a == NodeInfo::Act::kRelu    ? cpu::SmallAct::kRelu
         : a == NodeInfo::Act::kRelu6 ? cpu::SmallAct::kRelu6
                                      : cpu::SmallAct::kNone;
}

}  // namespace

Session::Session(Graph g, SessionOptions o) : g_(std::move(g)), options_(o) {
  if (o.num_threads > 0) set_num_threads(o.num_threads);
  if (o.optimize) stats_.optimized = optimize(g_);
  if (o.precision == Precision::kBFloat16) {
    std::string why;
    const bool native = native_bf16(&why);
    const int64_t min_work = o.bf16_min_work >= 0 ? o.bf16_min_work : lite_bf16_min_work();
    const int64_t work = min_work > 0 ? model_work(g_) : -1;
    if (work >= 0 && work < min_work) {
      stats_.precision_note = "bf16 requested, running float32: the model's " +
                              std::to_string(work) + " multiply-adds per run are below " +
                              std::to_string(min_work) + ", where bf16 is slower";
    } else if (!native && !o.emulate_bf16) {
      stats_.precision_note = "bf16 requested, running float32: " + why;
    } else if (std::string no = to_bf16(g_); !no.empty()) {
      stats_.precision_note = "bf16 requested, running float32: " + no;
    } else {
      stats_.precision = "bfloat16";
      if (!native) stats_.precision_note = "bf16 emulated (float32 fallbacks per op): " + why;
    }
  }
  for (const Tensor& w : g_.weights) stats_.weight_bytes += w.nbytes();
  stats_.num_nodes = static_cast<int>(g_.nodes.size());
}

Session Session::from_file(const std::string& path, SessionOptions o) {
  return Session(load(path), o);
}

SessionStats Session::stats() const {
  SessionStats s = stats_;
  for (std::vector<float> t : node_ns_) {
    if (t.empty()) break;
    std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
    s.node_us.push_back(t[t.size() / 2] / 1e3);
  }
  for (const auto& per_thread : node_tcpu_ns_) {
    std::vector<double> med;
    for (std::vector<float> t : per_thread) {
      if (t.empty()) break;
      std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
      med.push_back(t[t.size() / 2] / 1e3);
    }
    if (med.empty()) break;
    s.node_thread_us.push_back(std::move(med));
  }
  return s;
}

void Session::plan_small(const std::vector<TensorMeta>& meta) {
  small_.assign(g_.nodes.size(), Small::kNone);
  geom_.assign(g_.nodes.size(), cpu::WindowGeom{});
  if (packed_.size() != g_.nodes.size()) packed_.assign(g_.nodes.size(), Tensor());
  stats_.num_small = 0;
  // uint8 pooling in NHWC (layout.h): only this loop reads that layout, so it runs either way.
  for (size_t k = 0; k < g_.nodes.size(); ++k) {
    const NodeInfo& n = g_.nodes[k];
    if (n.op->name == "max_pool2d" && layout_[k].mode == NodeLayout::Mode::kWindow &&
        meta[n.inputs[0]].dtype == DType::uint8) {
      geom_[k] = pool2d_window(*n.op, n.attrs, meta[n.inputs[0]].shape);
      small_[k] = Small::kPoolU8;
    }
    if (layout_[k].mode == NodeLayout::Mode::kMeanHW) small_[k] = Small::kMeanHW;  // likewise
  }
  if (!options_.small_kernels) {
    for (Small s : small_) stats_.num_small += s != Small::kNone;
    return;
  }
  auto f32_weight = [&](int id, size_t rank) {
    return id >= 0 && g_.values[id].weight >= 0 && meta[id].dtype == DType::float32 &&
           meta[id].shape.size() == rank;
  };
  for (size_t k = 0; k < g_.nodes.size(); ++k) {
    const NodeInfo& n = g_.nodes[k];
    if (eager_[k] || n.inputs.empty() || n.inputs[0] < 0 || n.outputs.size() != 1 ||
        small_[k] != Small::kNone)
      continue;
    const TensorMeta& x = meta[n.inputs[0]];
    const TensorMeta& y = meta[n.outputs[0] >= 0 ? n.outputs[0] : n.inputs[0]];
    if (n.op->name == "add" && n.inputs.size() == 2 && n.inputs[1] >= 0 &&
        x.dtype == DType::bfloat16 && meta[n.inputs[1]] == x && y == x) {
      small_[k] = Small::kAddActBf16;  // no broadcast: over the buffers, activation included
      continue;
    }
    if (n.op->name == "dense" && layout_[k].mode == NodeLayout::Mode::kPlain &&
        x.dtype == DType::bfloat16 && y.dtype == DType::bfloat16 && n.inputs[1] >= 0 &&
        g_.values[n.inputs[1]].weight >= 0 && meta[n.inputs[1]].dtype == DType::bfloat16 &&
        meta[n.inputs[1]].shape.size() == 2) {
      const Shape& ws = meta[n.inputs[1]].shape;
      const int b = n.inputs.size() > 2 ? n.inputs[2] : -1;
      if (x.shape.empty() || x.shape.back() != ws[1] || ws[0] == 0 || ws[1] == 0 ||
          numel(x.shape) / ws[1] > 4 ||
          (b >= 0 && (g_.values[b].weight < 0 || meta[b].dtype != DType::bfloat16 ||
                      meta[b].shape.size() != 1)))
        continue;
      if (!packed_[k].defined()) packed_[k] = cpu::pack_dense_rows_bf16(slot_[n.inputs[1]]);
      small_[k] = Small::kDenseRowsBf16;  // as kDenseRows, bf16 weights streamed
      continue;
    }
    if (n.op->name == "cast" && x.dtype == DType::float32 && y.dtype == DType::bfloat16 &&
        n.outputs[0] >= 0 && value_layout_[n.outputs[0]] == kPlainLayout &&
        value_layout_[n.inputs[0]] == kPlainLayout) {
      small_[k] = Small::kCastBf16;  // the bf16 graph's input
      continue;
    }
    if (x.dtype != DType::float32) continue;
    if (n.op->name == "dense" && layout_[k].mode == NodeLayout::Mode::kPlain &&
        f32_weight(n.inputs[1], 2)) {
      // A few rows: a matrix-vector loop over weights packed once beats a GEMM call's setup.
      const Shape& ws = meta[n.inputs[1]].shape;
      const bool bias = n.inputs.size() > 2 && n.inputs[2] >= 0;
      if (x.shape.empty() || x.shape.back() != ws[1] || ws[0] == 0 || ws[1] == 0 ||
          numel(x.shape) / ws[1] > 4 || (bias && !f32_weight(n.inputs[2], 1)))
        continue;
      if (!packed_[k].defined()) packed_[k] = cpu::pack_dense_rows(slot_[n.inputs[1]]);
      small_[k] = Small::kDenseRows;
    } else if (n.op->name == "max_pool2d" && layout_[k].mode == NodeLayout::Mode::kWindow &&
               layout_[k].src_blocked && x.shape.size() == 4) {
      const cpu::WindowGeom g = pool2d_window(*n.op, n.attrs, x.shape);
      if (g.kh != 2 || g.kw != 2 || g.sh != 2 || g.sw != 2 || g.dh != 1 || g.dw != 1 || g.pt != 0 ||
          g.pb != 0 || g.pl != 0 || g.pr != 0 || 2 * g.oh > g.h || 2 * g.ow > g.w ||
          numel(x.shape) > kSmallElems)
        continue;
      geom_[k] = g;
      small_[k] = Small::kPool2x2;
    } else if (n.op->name == "add" && n.inputs.size() == 2 && n.inputs[1] >= 0 &&
               meta[n.inputs[1]].dtype == DType::float32 && x.shape == meta[n.outputs[0]].shape &&
               meta[n.inputs[1]].shape == x.shape && meta[n.outputs[0]].dtype == DType::float32) {
      small_[k] = Small::kAddAct;  // no broadcast: one pass, the fused activation included
    }
  }
  for (Small s : small_) stats_.num_small += s != Small::kNone;
}

bool Session::run_small(size_t k) {
  switch (small_[k]) {
    case Small::kNone:
      return false;
    case Small::kDenseRows: {
      const NodeInfo& n = g_.nodes[k];
      const Tensor& x = in_[k][0];
      const Shape& ws = in_[k][1].shape();
      const cpu::SmallAct act = small_act(n.post_act);
      const Tensor& b = in_[k].size() > 2 ? in_[k][2] : Tensor();
      cpu::dense_rows(x.data<float>(), packed_[k].data<float>(),
                      b.defined() ? b.data<float>() : nullptr, out_[k][0].data<float>(),
                      x.numel() / ws[1], ws[1], ws[0], act);
      return true;
    }
    case Small::kPool2x2: {
      const cpu::WindowGeom& g = geom_[k];
      const int64_t block = cpu::direct_block(g.c);
      cpu::max_pool2x2_blocked(in_[k][0].data<float>(), out_[k][0].data<float>(), g.n,
                               (g.c + block - 1) / block, g.h, g.w, g.oh, g.ow, block);
      return true;
    }
    case Small::kMeanHW: {  // NHWC: one block of all channels
      const Tensor& x = in_[k][0];
      const Shape& s = x.shape();
      const bool nhwc = value_layout_[reads_[k][0]] == kNhwcLayout;
      if (x.dtype() == DType::bfloat16) {  // oneDNN's bf16 layout: NHWC or nChw16c
        const bool b16 = cpu::bf16_activation_tag() == dnnl::memory::format_tag::nChw16c;
        cpu::mean_hw_bf16(x.data<uint16_t>(), out_[k][0].data<uint16_t>(), s[0], s[1], s[2] * s[3],
                          b16 ? 16 : s[1]);
        return true;
      }
      cpu::mean_hw_blocked(x.data<float>(), out_[k][0].data<float>(), s[0], s[1], s[2] * s[3],
                           nhwc ? s[1] : cpu::direct_block(s[1]));
      return true;
    }
    case Small::kAddActBf16: {  // kFlat: the whole padded buffers (the padding stays zero)
      const bool flat = layout_[k].mode == NodeLayout::Mode::kFlat;
      const std::vector<Tensor>& in = flat ? flat_in_[k] : in_[k];
      Tensor& y = flat ? flat_out_[k][0] : out_[k][0];
      cpu::add_act_bf16(in[0].data<uint16_t>(), in[1].data<uint16_t>(), y.data<uint16_t>(),
                        y.numel(), small_act(g_.nodes[k].post_act));
      return true;
    }
    case Small::kDenseRowsBf16: {
      const NodeInfo& n = g_.nodes[k];
      const Tensor& x = in_[k][0];
      const Shape& ws = in_[k][1].shape();
      const Tensor& b = in_[k].size() > 2 ? in_[k][2] : Tensor();
      cpu::dense_rows_bf16(x.data<uint16_t>(), packed_[k].data<uint16_t>(),
                           b.defined() ? b.data<uint16_t>() : nullptr, out_[k][0].data<uint16_t>(),
                           x.numel() / ws[1], ws[1], ws[0], small_act(n.post_act));
      return true;
    }
    case Small::kCastBf16:
      cpu::cast_f32_to_bf16(in_[k][0].data<float>(), out_[k][0].data<uint16_t>(),
                            out_[k][0].numel());
      return true;
    case Small::kAddAct: {  // kFlat: the whole padded buffers (the padding stays zero)
      const bool flat = layout_[k].mode == NodeLayout::Mode::kFlat;
      const std::vector<Tensor>& in = flat ? flat_in_[k] : in_[k];
      Tensor& y = flat ? flat_out_[k][0] : out_[k][0];
      cpu::add_act(in[0].data<float>(), in[1].data<float>(), y.data<float>(), y.numel(),
                   small_act(g_.nodes[k].post_act));
      return true;
    }
    case Small::kPoolU8: {  // NHWC: one block of all channels
      const cpu::WindowGeom& g = geom_[k];
      cpu::max_pool2x2_blocked(in_[k][0].data<uint8_t>(), out_[k][0].data<uint8_t>(), g.n, 1, g.h,
                               g.w, g.oh, g.ow, g.c);
      return true;
    }
  }
  return false;
}

void Session::reset_profile() {
  for (auto& t : node_ns_) t.clear();
  for (auto& per_thread : node_tcpu_ns_)
    for (auto& t : per_thread) t.clear();
}

namespace {

// Each pool thread's CPU clock (ns), read inside one parallel region of `threads` threads.
void thread_clocks(int threads, std::vector<double>& ns) {
  ns.assign(static_cast<size_t>(threads), 0.0);
#pragma omp parallel num_threads(threads)
  {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    const int t = omp_get_thread_num();
    if (t < threads) ns[t] = ts.tv_sec * 1e9 + ts.tv_nsec;
  }
}

}  // namespace

void Session::plan(const std::vector<Tensor>& inputs) {
  const size_t nv = g_.values.size();
  std::vector<TensorMeta> meta(nv);
  for (size_t i = 0; i < nv; ++i)
    if (g_.values[i].weight >= 0) meta[i] = TensorMeta{g_.values[i].shape, g_.values[i].dtype};
  for (size_t i = 0; i < inputs.size(); ++i)
    meta[g_.inputs[i]] = TensorMeta{inputs[i].shape(), inputs[i].dtype()};
  // 1. Shapes: each node's infer over its input metas (every check of the op runs here).
  std::vector<std::vector<TensorMeta>> outs(g_.nodes.size());
  eager_.assign(g_.nodes.size(), 0);
  for (size_t k = 0; k < g_.nodes.size(); ++k) {
    const NodeInfo& n = g_.nodes[k];
    std::vector<const TensorMeta*> ins;
    for (int id : n.inputs) ins.push_back(id >= 0 ? &meta[id] : nullptr);
    while (ins.size() < n.op->inputs.size()) ins.push_back(nullptr);
    outs[k] = infer_checked(*n.op, InferContext{*n.op, ins, n.attrs});
    if (outs[k].size() < n.outputs.size())
      MYCEL_THROW(ValueError, "lite: node ", k, " (", n.op->name, ") lists ", n.outputs.size(),
                  " outputs, the op gives ", outs[k].size());
    if (n.op->promote_inputs) {  // mixed input dtypes: the eager path promotes them
      for (size_t i = 0; i < n.inputs.size(); ++i)
        if (n.inputs[i] >= 0 && n.inputs[0] >= 0 &&
            meta[n.inputs[i]].dtype != meta[n.inputs[0]].dtype)
          eager_[k] = 1;
    }
    const size_t di = static_cast<size_t>(n.op->dtype_input);
    if (di < n.inputs.size() && n.inputs[di] >= 0 && !n.op->supports(meta[n.inputs[di]].dtype))
      eager_[k] = 1;  // call_op raises the error
    for (size_t o = 0; o < n.outputs.size(); ++o)
      if (n.outputs[o] >= 0) meta[n.outputs[o]] = outs[k][o];
  }
  // 2. Layouts, and an NCHW copy of each blocked value that a plain reader needs (one per value,
  // made before its first such reader). Copies are slots nv, nv + 1, ...
  LayoutPlan lp = options_.blocked_layout ? plan_layouts(g_, meta, eager_)
                                          : LayoutPlan{std::vector<char>(nv, 0),
                                                       std::vector<NodeLayout>(g_.nodes.size())};
  layout_ = lp.nodes;
  std::vector<int> copy_of(nv, -1);
  std::vector<int> copy_src;  // per copy: the blocked value
  reads_.assign(g_.nodes.size(), {});
  reorders_.assign(g_.nodes.size(), {});
  for (size_t k = 0; k < g_.nodes.size(); ++k) {
    const NodeInfo& n = g_.nodes[k];
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      int id = n.inputs[i];
      const bool takes_blocked = layout_[k].mode == NodeLayout::Mode::kFlat ||
                                 ((layout_[k].mode == NodeLayout::Mode::kWindow ||
                                   layout_[k].mode == NodeLayout::Mode::kMeanHW) &&
                                  i == 0);
      if (id >= 0 && lp.blocked[id] && !takes_blocked) {
        if (copy_of[id] < 0) {
          copy_of[id] = static_cast<int>(nv + copy_src.size());
          copy_src.push_back(id);
          reorders_[k].push_back({id, copy_of[id]});
        }
        id = copy_of[id];
      }
      reads_[k].push_back(id);
    }
  }
  const size_t ns = nv + copy_src.size();
  // 3. Lifetimes: from the producing node to the last reader; model outputs get their own
  // tensors per run, and unread outputs a buffer for their node only.
  std::vector<int> first(ns, -1), last(ns, -1);
  for (size_t k = 0; k < g_.nodes.size(); ++k) {
    // A reorder reads its source at node k: the source lives until then (its copy may be its
    // only reader, and must not take the source's place).
    for (auto [src, dst] : reorders_[k]) {
      first[dst] = static_cast<int>(k);
      last[src] = std::max(last[src], static_cast<int>(k));
    }
    for (int id : reads_[k])
      if (id >= 0) last[id] = static_cast<int>(k);
  }
  std::vector<char> is_output(nv, 0);
  for (int id : g_.outputs) is_output[id] = 1;
  auto nbytes = [&](const TensorMeta& m, char layout) {
    return layout == kBlockedLayout ? cpu::blocked_nbytes(m.shape, m.dtype)
                                    : static_cast<size_t>(numel(m.shape)) * itemsize(m.dtype);
  };
  std::vector<Buffer> bufs;
  std::vector<std::vector<int>> scratch(g_.nodes.size());  // buffer index of unread outputs
  for (size_t k = 0; k < g_.nodes.size(); ++k) {
    const NodeInfo& n = g_.nodes[k];
    for (size_t o = 0; o < outs[k].size(); ++o) {
      const int id = o < n.outputs.size() ? n.outputs[o] : -1;
      if (id >= 0 && is_output[id]) continue;
      const size_t bytes = nbytes(outs[k][o], id >= 0 ? lp.blocked[id] : char{kPlainLayout});
      const int end = id >= 0 ? std::max(last[id], static_cast<int>(k)) : static_cast<int>(k);
      bufs.push_back(Buffer{std::max<size_t>(bytes, 1), static_cast<int>(k), end, id});
      if (id < 0) scratch[k].push_back(static_cast<int>(bufs.size()) - 1);
    }
  }
  for (size_t c = 0; c < copy_src.size(); ++c) {
    const int id = static_cast<int>(nv + c);
    bufs.push_back(Buffer{std::max<size_t>(nbytes(meta[copy_src[c]], kPlainLayout), 1), first[id],
                          last[id], id});
  }
  const size_t total = place(bufs);
  // 4. Bind: weights, arena views, kernel argument vectors.
  arena_ = Storage::allocate(std::max<size_t>(total, 1));
  slot_.assign(ns, Tensor());
  for (size_t i = 0; i < nv; ++i)
    if (g_.values[i].weight >= 0) slot_[i] = g_.weights[g_.values[i].weight];
  for (const Buffer& b : bufs) {
    if (b.value < 0) continue;
    const TensorMeta& m =
        b.value < static_cast<int>(nv) ? meta[b.value] : meta[copy_src[b.value - nv]];
    slot_[b.value] = Tensor(arena_, b.offset, m.shape, m.dtype);
  }
  // Kernel arguments bound once: every arena value and weight is at its place for the whole plan;
  // only model inputs and outputs (and their readers) change per run (patched by run()).
  std::vector<char> is_input(nv, 0);
  for (int id : g_.inputs) is_input[id] = 1;
  in_.assign(g_.nodes.size(), {});
  out_.assign(g_.nodes.size(), {});
  patch_in_.clear();
  patch_out_.clear();
  for (size_t k = 0; k < g_.nodes.size(); ++k) {
    const NodeInfo& n = g_.nodes[k];
    for (size_t i = 0; i < reads_[k].size(); ++i) {
      const int id = reads_[k][i];
      if (id >= 0 && id < static_cast<int>(nv) && (is_input[id] || is_output[id]))
        patch_in_.push_back({static_cast<int>(k), static_cast<int>(i)});
      in_[k].push_back(id >= 0 ? slot_[id] : Tensor());
    }
    while (in_[k].size() < n.op->inputs.size()) in_[k].emplace_back();
    size_t s = 0;
    for (size_t o = 0; o < outs[k].size(); ++o) {
      const int id = o < n.outputs.size() ? n.outputs[o] : -1;
      if (id >= 0) {
        if (is_output[id]) patch_out_.push_back({static_cast<int>(k), static_cast<int>(o)});
        out_[k].push_back(slot_[id]);  // undefined for model outputs: filled per run
      } else {
        const Buffer& b = bufs[scratch[k][s++]];
        out_[k].push_back(Tensor(arena_, b.offset, outs[k][o].shape, outs[k][o].dtype));
      }
    }
  }
  // Per-node decisions, made once: fused activation, constant weights, flat views.
  params_.assign(g_.nodes.size(), KernelParams{});
  act_op_.assign(g_.nodes.size(), nullptr);
  flat_in_.assign(g_.nodes.size(), {});
  flat_out_.assign(g_.nodes.size(), {});
  // A value's whole buffer as 1-d: a blocked one's channel padding included, an NHWC one's is
  // its elements.
  auto flat = [&](const Tensor& t, int id) {
    const int64_t len =
        id >= 0 && lp.blocked[id] == kBlockedLayout
            ? static_cast<int64_t>(cpu::blocked_nbytes(t.shape(), t.dtype()) / itemsize(t.dtype()))
            : t.numel();
    return Tensor(t.storage(), t.offset(), Shape{len}, t.dtype());
  };
  for (size_t k = 0; k < g_.nodes.size(); ++k) {
    const NodeInfo& n = g_.nodes[k];
    KernelParams& params = params_[k];
    if (n.post_act != NodeInfo::Act::kNone)
      params.post_ops.push_back(cpu::PostOp{
          n.post_act == NodeInfo::Act::kRelu ? cpu::PostOp::Kind::kRelu : cpu::PostOp::Kind::kRelu6,
          Tensor()});
    if (n.post_act != NodeInfo::Act::kNone)
      act_op_[k] = &Registry::get().at(n.post_act == NodeInfo::Act::kRelu ? "relu" : "relu6");
    // A conv's weights are constants of the model: oneDNN's reorder of them is kept, not redone
    // (int8 kernels also remember whether the weights are safe for non-VNNI CPUs).
    params.const_weights =
        (n.op->name == "conv2d" || n.op->name == "qconv2d" || n.op->name == "qdense") &&
        n.inputs.size() > 1 && n.inputs[1] >= 0 && g_.values[n.inputs[1]].weight >= 0;
    if (layout_[k].mode == NodeLayout::Mode::kWindow) {
      params.src_blocked = layout_[k].src_blocked;
      params.dst_blocked = layout_[k].dst_blocked;
    }
    if (layout_[k].mode == NodeLayout::Mode::kFlat) {
      for (size_t i = 0; i < in_[k].size(); ++i)
        flat_in_[k].push_back(flat(in_[k][i], i < reads_[k].size() ? reads_[k][i] : -1));
      for (size_t o = 0; o < out_[k].size(); ++o)
        flat_out_[k].push_back(flat(out_[k][o], o < n.outputs.size() ? n.outputs[o] : -1));
    }
  }
  // The convolutions conv2d will run on Winograd and streamed kernels (its rules, asked here for
  // the stats).
  stats_.num_winograd = 0;
  stats_.num_stream = 0;
  for (size_t k = 0; k < g_.nodes.size(); ++k) {
    const NodeInfo& n = g_.nodes[k];
    if (n.op->name != "conv2d" || eager_[k] || n.inputs.size() < 2 || n.inputs[0] < 0 ||
        n.inputs[1] < 0 || layout_[k].mode != NodeLayout::Mode::kWindow)
      continue;
    const cpu::WindowGeom g =
        conv2d_window(*n.op, n.attrs, meta[n.inputs[0]].shape, meta[n.inputs[1]].shape);
    const DType dt = meta[n.inputs[0]].dtype;
    if (cpu::winograd_tile_for(dt, g, &params_[k], true) != 0)
      ++stats_.num_winograd;
    else if (cpu::conv_stream_for(dt, g, &params_[k], true))
      ++stats_.num_stream;
  }
  // Threads per node: below the work threshold a node stays on the calling thread (its kernel
  // then prepares for one thread, so the prepared state matches every run of this plan).
  planned_threads_ = num_threads();
  const int64_t serial_work = options_.serial_work >= 0 ? options_.serial_work : lite_serial_work();
  serial_.assign(g_.nodes.size(), 0);
  stats_.node_work.assign(g_.nodes.size(), 0);
  stats_.num_serial = 0;
  for (size_t k = 0; k < g_.nodes.size(); ++k) {
    stats_.node_work[k] = node_work(g_.nodes[k], meta);
    serial_[k] = planned_threads_ > 1 && node_cost(g_.nodes[k], meta) < serial_work;
    stats_.num_serial += serial_[k];
  }
  stats_.node_serial = serial_;
  stats_.plan_threads = planned_threads_;
  node_ns_.assign(g_.nodes.size(), {});
  node_tcpu_ns_.clear();
  prepared_.clear();  // a new plan: kernels prepare again for its shapes and buffers
  prepared_.resize(g_.nodes.size());
  stats_.arena_bytes = total;
  stats_.num_blocked = 0;
  for (char b : lp.blocked) stats_.num_blocked += b != kPlainLayout;
  value_layout_ = std::move(lp.blocked);
  plan_small(meta);
  stats_.num_reorders = static_cast<int>(copy_src.size());
  ++stats_.num_plans;
  planned_.clear();
  for (const Tensor& t : inputs) planned_.push_back(t.shape());
  // Model outputs' metas, for the per-run allocation.
  for (int id : g_.outputs) slot_[id] = Tensor();
  out_meta_.clear();
  for (int id : g_.outputs) out_meta_.push_back(meta[id]);
}

std::vector<Tensor> Session::run(const std::vector<Tensor>& inputs) {
  if (inputs.size() != g_.inputs.size())
    MYCEL_THROW(ValueError, "lite: the model takes ", g_.inputs.size(), " inputs, got ",
                inputs.size());
  bool same = planned_.size() == inputs.size();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ValueInfo& v = g_.values[g_.inputs[i]];
    const Tensor& t = inputs[i];
    bool ok =
        t.defined() && t.dtype() == v.dtype && t.ndim() == static_cast<int64_t>(v.shape.size());
    for (size_t d = 0; ok && d < v.shape.size(); ++d)
      ok = v.shape[d] < 0 || v.shape[d] == t.shape()[d];
    if (!ok)
      MYCEL_THROW(
          ValueError, "lite: input ", i, " ('", v.name, "') must be ", dtype_name(v.dtype),
          shape_str(v.shape), " (-1: any size), got ",
          t.defined() ? std::string(dtype_name(t.dtype())) + shape_str(t.shape()) : "nothing");
    same = same && planned_[i] == t.shape();
  }
  if (!same || planned_threads_ != num_threads()) plan(inputs);
  for (size_t i = 0; i < inputs.size(); ++i) slot_[g_.inputs[i]] = inputs[i];
  std::vector<Tensor> results;
  for (const TensorMeta& m : out_meta_) results.push_back(Tensor::empty(m));
  for (size_t j = 0; j < g_.outputs.size(); ++j) slot_[g_.outputs[j]] = results[j];
  for (auto [k, i] : patch_in_) in_[k][i] = slot_[reads_[k][i]];
  for (auto [k, o] : patch_out_) out_[k][o] = slot_[g_.nodes[k].outputs[o]];
  if (options_.profile) {
    constexpr size_t kMaxRuns = 4096;
    const auto keep = [](std::vector<float>& t, float ns) {
      if (t.size() == kMaxRuns) t.erase(t.begin(), t.begin() + kMaxRuns / 2);
      t.push_back(ns);
    };
    const int threads = planned_threads_;
    if (threads > 1) node_tcpu_ns_.resize(g_.nodes.size());
    std::vector<double> c0, c1;
    for (size_t k = 0; k < g_.nodes.size(); ++k) {
      if (threads > 1) thread_clocks(threads, c0);
      const auto t0 = std::chrono::steady_clock::now();
      run_node(k);
      const float ns =
          std::chrono::duration<float, std::nano>(std::chrono::steady_clock::now() - t0).count();
      keep(node_ns_[k], ns);
      if (threads > 1) {
        thread_clocks(threads, c1);
        node_tcpu_ns_[k].resize(static_cast<size_t>(threads));
        for (int t = 0; t < threads; ++t)
          keep(node_tcpu_ns_[k][t], static_cast<float>(c1[t] - c0[t]));
      }
    }
  } else {
    for (size_t k = 0; k < g_.nodes.size(); ++k) run_node(k);
  }
  // Do not keep the caller's tensors (nor the returned ones).
  for (size_t i = 0; i < inputs.size(); ++i) slot_[g_.inputs[i]] = Tensor();
  for (auto [k, i] : patch_in_) in_[k][i] = Tensor();
  for (auto [k, o] : patch_out_) out_[k][o] = Tensor();
  for (int id : g_.outputs) slot_[id] = Tensor();
  return results;
}

void Session::run_node(size_t k) {
  // Negative work: below any threshold, so the scope always takes effect (num_threads() reads 1
  // and no OpenMP region is entered) when the plan chose one thread for this node.
  std::optional<SerialScope> one_thread;
  if (serial_[k]) one_thread.emplace(-1);
  const NodeInfo& n = g_.nodes[k];
  for (auto [src, dst] : reorders_[k]) {
    const Tensor& x = slot_[src];
    if (value_layout_[src] == kNhwcLayout) {  // int8 ops' activations
      cpu::relayout_nhwc(x, slot_[dst], false);
    } else if (options_.small_kernels && x.dtype() == DType::float32 && x.ndim() == 4 &&
               x.numel() <= kSmallElems) {
      const Shape& s = x.shape();
      cpu::unblock_to_nchw(x.data<float>(), slot_[dst].data<float>(), s[0], s[1], s[2] * s[3],
                           cpu::direct_block(s[1]));
    } else {
      cpu::reorder_blocked(x, slot_[dst], false);
    }
  }
  if (run_small(k)) return;
  std::vector<Tensor>& ins = in_[k];
  std::vector<Tensor>& outs = out_[k];
  if (eager_[k]) {  // promotion or an unsupported dtype: the eager path (which raises for the
                    // latter)
    std::vector<Tensor> r = call_op(*n.op, ins, n.attrs);
    for (size_t o = 0; o < outs.size() && o < r.size(); ++o)
      std::memcpy(outs[o].data(), r[o].data(), r[o].nbytes());
    if (!outs.empty()) apply_activation(k, outs[0]);
    return;
  }
  if (layout_[k].mode == NodeLayout::Mode::kFlat) {  // elementwise over the whole padded buffers
    n.op->kernel(KernelContext{*n.op, flat_in_[k], flat_out_[k], n.attrs});
    apply_activation(k, flat_out_[k][0]);  // relu/relu6 keep the zero padding zero
    return;
  }
  KernelParams& params = params_[k];
  params.post_applied = false;
  params.layout_taken = false;
  n.op->kernel(KernelContext{*n.op, ins, outs, n.attrs, &prepared_[k], &params});
  if (layout_[k].mode == NodeLayout::Mode::kWindow) {
    MYCEL_CHECK(params.layout_taken, RuntimeError, "lite: [", n.op->name,
                "] ran without oneDNN on a blocked tensor");
    MYCEL_CHECK(params.post_ops.empty() || params.post_applied, RuntimeError, "lite: [", n.op->name,
                "] did not apply its fused activation to a blocked tensor");
    return;
  }
  if (!params.post_applied) apply_activation(k, outs[0]);
}

void Session::apply_activation(size_t k, Tensor& y) {
  if (params_[k].post_ops.empty()) return;
  if (y.dtype() == DType::float32) {
    cpu::apply_post_ops(params_[k].post_ops, y);
  } else {  // bf16: the activation's own kernel, in place (elementwise)
    const OpDef& act = *act_op_[k];
    std::vector<Tensor> io{y};
    act.kernel(KernelContext{act, io, io, no_attrs_});
  }
}

}  // namespace mycel::lite
