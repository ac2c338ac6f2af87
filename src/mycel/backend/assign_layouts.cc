// The layout step: float32 conv2d outputs are stored in the activation layout oneDNN's
// convolutions prefer ("blocked": NHWC or nChw16c / nChw8c, kernels/cpu/dnnl_layout.h), which
// they write without the reorder to NCHW, and the layout flows on through the consumers that can
// take it (max/avg pooling, a following conv2d, relu and sums of two blocked tensors). Any other
// reader -- dense, reshape, outputs, calls, gradients -- gets one reorder to NCHW, inserted before
// its first plain reader and shared by the later ones. bf16 activations go NHWC instead (see
// bf16_nhwc_wanted), where the convolutions' gradients, batch norm and its gradient, the global
// mean pool and every elementwise op read them too (BackendTraits::nhwc), so that a bf16 training
// step reorders only at its edges. Registers keep their logical NCHW meta; `RegInfo::blocked`
// makes the memory planner reserve the padded size. Runs after fusion, before calls are analysed.
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>

#include "mycel/backend/fuse_util.h"
#include "mycel/kernels/cpu/dnnl_layout.h"
#include "mycel/kernels/cpu/dnnl_ops.h"
#include "mycel/kernels/cpu/infer_small.h"

namespace mycel::backend::detail {
namespace {

// A float32 NCHW tensor register with static, non-zero C, H and W (the batch may be dynamic:
// zero images make the kernels return before they look at the layout).
bool is_nchw_f32(const Function& f, int r) {
  return is_f32_static_but_batch(f, r) && f.regs[r].meta.shape.size() == 4 &&
         numel_per_sample(f, r) > 0;
}

// bf16 activations go channels-last (NHWC) where oneDNN's bf16 convolutions take NHWC natively
// in all three passes (AVX512-BF16 and AMX: brgconv forward, jit_bf16 / AMX backward) and
// MYCEL_BF16_NHWC is not 0 (read per compile, for A/B). NHWC pads nothing, so every elementwise
// op runs on the flat buffers, and batch norm, its gradient, the convolution gradients and the
// global mean pool read it (BackendTraits::nhwc): a training step then reorders only at its
// edges, where NCHW kept each convolution's operands reordered to and from the primitives'
// layouts (ResNet-18 CIFAR, batch 32: 215 reorders a step, ~57 ms of a ~350 ms step).
bool bf16_nhwc_wanted() {
  const char* v = std::getenv("MYCEL_BF16_NHWC");
  return !(v && *v && std::atoi(v) == 0) &&
         cpu::bf16_activation_tag() == dnnl::memory::format_tag::nhwc;
}

// A bf16 4-d tensor register with static, non-zero C, H and W.
bool is_4d_bf16(const Function& f, int r) {
  if (r < 0 || f.regs[r].type != RegType::kTensor || f.regs[r].meta.dtype != DType::bfloat16)
    return false;
  const Shape& s = f.regs[r].meta.shape;
  if (s.size() != 4) return false;
  for (size_t d = 1; d < 4; ++d)
    if (s[d] == ir::kDynamic) return false;
  return numel_per_sample(f, r) > 0;
}

// conv2d, plain or with fused post-ops or pooling (the registry's window trait, kept by fusion).
bool is_conv(const Instr& in) {
  return is_kernel1(in) && in.op->backend.window == WindowKind::kConv;
}

// The inputs of a conv that are residuals added to its output (fuse_post_ops.cc), read in the
// output's layout: those past the inputs of the op it extended (a conv's only added inputs).
size_t first_residual(const Instr& in) {
  const OpDef* base = in.op->backend.unfused;
  if (!(in.op->backend.fused_post_ops & kPostAddRow) || !base) return in.in.size();
  return std::min(base->inputs.size(), in.in.size());
}

bool is_pool(const Instr& in) {
  if (!is_kernel1(in)) return false;
  const WindowKind w = in.op->backend.window;
  return w == WindowKind::kMaxPool || w == WindowKind::kAvgPool;
}

// Elementwise ops (or fused chains of them) that map zeros to zero, so the blocked layout's zero
// channel padding stays zero (a later conv multiplies it by zero weights: NaN or inf there would
// leak into real channels).
bool is_zero_keeping_elementwise(const Instr& in) {
  return is_kernel1(in) && in.op->backend.keeps_zero;
}

bool has_bit(uint8_t mask, size_t i) { return i < 8 && ((mask >> i) & 1); }

// Whether an NHWC launch of `b` that its kernel refused can run on NCHW copies instead: the
// kSame ops and the mean pool (the convolutions' gradients take either layout).
bool has_plain_fallback(const OpDef& b) {
  return b.backend.nhwc == NhwcKind::kSame || b.backend.reduce == ReduceFusion::kMean;
}

// Such a launch (the kernel wrote nothing: e.g. a batch norm with bf16 parameters, amp O3) on
// NCHW copies of its NHWC tensors, its NHWC outputs reordered back. Rare, so the copies are
// allocated per launch.
void run_on_plain_copies(const OpDef& b, const KernelContext& c) {
  auto nhwc_input = [&](size_t k) {
    return c.in(k).ndim() == 4 && (has_bit(b.backend.nhwc_inputs, k) ||
                                   (k == 0 && b.backend.reduce == ReduceFusion::kMean));
  };
  auto plain_copy = [](const Tensor& t) {
    Tensor p = Tensor::empty(t.shape(), t.dtype());
    cpu::reorder_blocked(t, p, false);
    return p;
  };
  std::vector<Tensor> ins, outs;
  for (size_t k = 0; k < c.inputs.size(); ++k)
    ins.push_back(nhwc_input(k) ? plain_copy(c.in(k)) : c.inputs[k]);
  std::vector<size_t> nhwc_outs;
  for (size_t j = 0; j < c.outputs.size(); ++j) {
    const bool nhwc = has_bit(b.backend.nhwc_outputs, j) && c.out(j).ndim() == 4;
    outs.push_back(nhwc ? Tensor::empty(c.out(j).shape(), c.out(j).dtype()) : c.outputs[j]);
    if (nhwc) nhwc_outs.push_back(j);
  }
  b.kernel(KernelContext{b, ins, outs, c.attrs, nullptr, nullptr});
  for (size_t j : nhwc_outs) cpu::reorder_blocked(outs[j], c.outputs[j], true);
}

// The op of a layout-aware instruction: `base`'s infer and kernel, the kernel told the layouts by
// the instruction's KernelParams (conv, pool) or run on flat views of the padded buffers
// (elementwise).
std::shared_ptr<const OpDef> make_blocked_op(const OpDef& base, bool src_blocked, bool flat,
                                             DType dtype) {
  auto d = std::make_shared<OpDef>(base);
  // The listing shows the layouts read and written: "{nhwc}relu", "{nchw>nhwc}conv2d+relu".
  const std::string tag = dtype == DType::bfloat16 ? "nhwc" : cpu::activation_tag_name();
  d->name = (src_blocked ? "{" + tag + "}" : "{nchw>" + tag + "}") + base.name;
  d->view = nullptr;
  d->grad = "none";
  const OpDef* b = &base;
  d->infer = [b](const InferContext& c) { return b->infer(InferContext{*b, c.inputs, c.attrs}); };
  if (flat) {  // every tensor is blocked and of one shape: the op sees the padded buffers whole
    d->kernel = [b](const KernelContext& c) {
      auto flat_view = [](const Tensor& t) {
        const int64_t n =
            static_cast<int64_t>(cpu::blocked_nbytes(t.shape(), t.dtype()) / itemsize(t.dtype()));
        return Tensor(t.storage(), t.offset(), Shape{n}, t.dtype());
      };
      std::vector<Tensor> ins, outs;
      for (const Tensor& t : c.inputs)  // a one-element operand (relu mask's threshold) broadcasts
        ins.push_back(t.numel() == 1 && t.shape() != c.out(0).shape()
                          ? Tensor(t.storage(), t.offset(), Shape{}, t.dtype())
                          : flat_view(t));
      for (const Tensor& t : c.outputs) outs.push_back(flat_view(t));
      b->kernel(KernelContext{*b, ins, outs, c.attrs, c.prepared, c.params});
    };
  } else {
    d->kernel = [b](const KernelContext& c) {
      MYCEL_CHECK(c.params, RuntimeError, "[", b->name,
                  "] launched without its layouts (backend bug)");
      c.params->layout_taken = false;
      b->kernel(KernelContext{*b, c.inputs, c.outputs, c.attrs, c.prepared, c.params});
      if (!c.params->layout_taken && has_plain_fallback(*b)) return run_on_plain_copies(*b, c);
      // E.g. set_nn_backend(kRef) after compiling: the reference loops know only NCHW.
      MYCEL_CHECK(c.params->layout_taken, RuntimeError, "[", b->name, "] ran without oneDNN on a ",
                  cpu::activation_tag_name(),
                  " tensor; compile again (graph mode recompiles "
                  "on a new Cell) or set MYCEL_LAYOUT=0");
    };
  }
  return d;
}

// A float32 mean over axes 2 and 3 (global average pooling) of a 4-d tensor: it may read the
// blocked layout and write its (N, C) or (N, C, 1, 1) result plain (the lite runtime's loop,
// infer_small.h), which saves the whole activation's to_nchw before it (ResNet-18's last one).
bool is_mean_hw(const Function& f, const Instr& in, bool bf16 = false) {
  if (!is_kernel1(in) || in.op->backend.reduce != ReduceFusion::kMean || in.in.size() != 1 ||
      !in.attrs.has("axis"))
    return false;
  if (bf16 ? !is_4d_bf16(f, in.in[0]) || f.regs[in.out[0]].meta.dtype != DType::bfloat16
           : !is_nchw_f32(f, in.in[0]) || !is_f32_static_but_batch(f, in.out[0]))
    return false;
  std::vector<int64_t> axes = in.attrs.get_ints("axis");
  for (int64_t& a : axes) a = a < 0 ? a + 4 : a;
  std::sort(axes.begin(), axes.end());
  return axes == std::vector<int64_t>{2, 3};
}

bool mean_hw_blocked_on() {
  static const bool on = [] {
    const char* v = std::getenv("MYCEL_MEAN_HW_BLOCKED");
    return !(v && *v && std::atoi(v) == 0);
  }();
  return on;
}

std::shared_ptr<const OpDef> make_mean_hw_op(const OpDef& base) {
  auto d = std::make_shared<OpDef>(base);
  d->name = "{" + std::string(cpu::activation_tag_name()) + "}" + base.name;
  d->view = nullptr;
  d->grad = "none";
  const OpDef* b = &base;
  d->infer = [b](const InferContext& c) { return b->infer(InferContext{*b, c.inputs, c.attrs}); };
  d->kernel = [](const KernelContext& c) {
    const Tensor& x = c.in(0);
    const Shape& s = x.shape();
    cpu::mean_hw_blocked(x.data<float>(), c.out(0).data<float>(), s[0], s[1], s[2] * s[3],
                         cpu::direct_block(s[1]));
  };
  return d;
}

std::shared_ptr<const OpDef> make_to_plain_op() {
  auto d = std::make_shared<OpDef>();
  d->name = "to_nchw";
  d->class_name = "ToNCHW";
  d->doc = "Reorders a channel-blocked tensor to NCHW (graph backend layout step).";
  d->inputs = {{"x"}};
  d->infer = [](const InferContext& c) { return std::vector<TensorMeta>{*c.inputs[0]}; };
  d->kernel = [](const KernelContext& c) {
    cpu::reorder_blocked(c.in(0), c.out(0), false, c.prepared);
  };
  d->dtypes = {DType::float32, DType::bfloat16};
  d->grad = "none";
  return d;
}

class LayoutAssigner {
 public:
  LayoutAssigner(Function& f, ProgramImpl& p, bool nhwc)
      : f_(f), p_(p), nhwc_(nhwc), plain_(f.regs.size(), -1), wanted_(f.regs.size(), 0) {}

  void run() {
    // A conv whose result only plain readers take gains nothing: its own reorder moves as much.
    for (const Instr& in : f_.code) {
      want_nhwc_operands(in);
      if ((is_pool(in) || (is_conv(in) && !padded_channels(in.in[0]))) && in.in[0] >= 0)
        wanted_[in.in[0]] = 1;
      // A conv with a residual stands for the add it absorbed, which took blocked operands
      // whole (a last block's output then has one reorder to NCHW, not its input and residual).
      if (is_conv(in) && first_residual(in) < in.in.size()) {
        wanted_[in.out[0]] = 1;
        for (size_t k = first_residual(in); k < in.in.size(); ++k)
          if (in.in[k] >= 0) wanted_[in.in[k]] = 1;
      }
      if (is_zero_keeping_elementwise(in))
        for (int r : in.in)
          if (r >= 0) wanted_[r] = 1;
      if (mean_hw_blocked_on() && is_mean_hw(f_, in)) wanted_[in.in[0]] = 1;
    }
    std::vector<Instr> old = std::move(f_.code);
    f_.code.clear();
    for (Instr& in : old) {
      if (!try_blocked(in) && !try_mean_hw(in) && !try_nhwc(in)) {
        for (int& r : in.in) r = plain(r);
        for (int& r : in.in_b) r = plain(r);
        in.cond = plain(in.cond);
        for (Target& t : in.targets)
          for (int& r : t.args) r = plain(r);
      }
      f_.code.push_back(std::move(in));
    }
    for (int& r : f_.outputs) r = plain(r);
  }

  /// Bytes the blocked layout saves moving (reorders inside the convs) and costs (to_nchw).
  size_t saved_bytes() const { return saved_; }
  size_t reorder_bytes() const { return cost_; }

 private:
  bool blocked(int r) const { return r >= 0 && f_.regs[r].blocked; }
  // A register of a layout-aware op that may be stored in the blocked layout: float32 NCHW, or
  // bf16 when this function's bf16 activations go NHWC.
  bool is_act(int r) const { return is_nchw_f32(f_, r) || is_nhwc(r); }
  bool is_nhwc(int r) const { return nhwc_ && is_4d_bf16(f_, r); }
  bool nhwc_blocked(int r) const { return blocked(r) && is_nhwc(r); }
  // An NCHW register whose channels the blocked layout pads (6 in nChw8c, LeNet5's second conv's
  // input): no conv primitive reads that natively (oneDNN's AVX2 kernels want whole blocks), so
  // a conv reading it blocked reorders it back per launch; read plain, the few-channel direct
  // kernel takes it instead (conv_direct.h).
  bool padded_channels(int r) const {
    if (r < 0 || f_.regs[r].meta.shape.size() != 4 || is_nhwc(r)) return false;
    const int64_t c = f_.regs[r].meta.shape[1], b = cpu::channel_block();
    return b > 1 && c > 1 && c % b != 0;
  }
  // Per sample when the batch is dynamic: both sides of the cost check scale with it.
  size_t bytes(int r) const { return numel_per_sample(f_, r) * itemsize(f_.regs[r].meta.dtype); }

  // Rewrites `in` to read/write blocked tensors when it can; false leaves it untouched.
  bool try_blocked(Instr& in) {
    bool src_blocked = false, flat = false;
    const size_t res = is_conv(in) ? first_residual(in) : in.in.size();
    bool residuals_blocked = true;  // the residuals must come in the output's (blocked) layout
    for (size_t k = res; k < in.in.size(); ++k) residuals_blocked &= blocked(in.in[k]);
    if (is_conv(in) && wanted_[in.out[0]] && is_act(in.out[0]) && is_act(in.in[0]) &&
        f_.regs[in.in[0]].meta.dtype == f_.regs[in.out[0]].meta.dtype &&
        numel(f_.regs[in.in[1]].meta.shape) > 0 && residuals_blocked) {
      src_blocked = blocked(in.in[0]);
      // Without the step the conv reorders its result from the layout it prefers, and its input
      // to it (unless one channel makes the two layouts the same bytes).
      saved_ += bytes(in.out[0]);
      if (src_blocked && f_.regs[in.in[0]].meta.shape[1] > 1) saved_ += bytes(in.in[0]);
      for (size_t k = 1; k < res; ++k) in.in[k] = plain(in.in[k]);
    } else if (is_pool(in) && blocked(in.in[0]) && is_act(in.out[0])) {
      src_blocked = true;
    } else if (is_zero_keeping_elementwise(in) && !in.in.empty() && is_nchw_f32(f_, in.out[0])) {
      for (int r : in.in)
        if (!blocked(r) || !(f_.regs[r].meta == f_.regs[in.out[0]].meta)) return false;
      src_blocked = flat = true;
    } else {
      return false;
    }
    p_.fused_ops.push_back(
        make_blocked_op(*in.op, src_blocked, flat, f_.regs[in.out[0]].meta.dtype));
    in.op = p_.fused_ops.back().get();
    if (!flat) {
      auto params = std::make_shared<KernelParams>(in.params ? *in.params : KernelParams{});
      params->src_blocked = src_blocked;
      params->dst_blocked = true;
      in.params = std::move(params);
    }
    f_.regs[in.out[0]].blocked = true;
    return true;
  }

  // The NHWC readers of bf16 activations want their operands blocked (see try_nhwc).
  void want_nhwc_operands(const Instr& in) {
    if (!nhwc_ || in.code != Code::kKernel) return;
    const BackendTraits& t = in.op->backend;
    if (t.nhwc != NhwcKind::kNone) {
      for (size_t k = 0; k < in.in.size(); ++k)
        if (has_bit(t.nhwc_inputs, k) && is_nhwc(in.in[k])) wanted_[in.in[k]] = 1;
    } else if (is_mean_hw(f_, in, true)) {
      wanted_[in.in[0]] = 1;
    } else if (flat_nhwc_candidate(in)) {
      for (int r : in.in)
        if (same_shape_operand(in, r)) wanted_[r] = 1;
    }
  }

  // An elementwise op of same-shape bf16 4-d tensors (and one-element operands, as a relu mask's
  // threshold): on NHWC buffers it runs flat (no padding).
  bool flat_nhwc_candidate(const Instr& in) const {
    if (!in.op->elementwise || in.out.size() != 1 || in.in.empty() || !is_nhwc(in.out[0]))
      return false;
    bool activations = false;
    for (int r : in.in) {
      if (r < 0 || f_.regs[r].type != RegType::kTensor) return false;
      if (same_shape_operand(in, r))
        activations = true;
      else if (!one_element(r))
        return false;
    }
    return activations;
  }
  bool same_shape_operand(const Instr& in, int r) const {
    return f_.regs[r].meta == f_.regs[in.out[0]].meta;
  }
  bool one_element(int r) const {
    const Shape& s = f_.regs[r].meta.shape;
    return !f_.regs[r].blocked && std::find(s.begin(), s.end(), ir::kDynamic) == s.end() &&
           numel(s) == 1;
  }

  // Every operand read for its values is (N, C, 1, 1) with the output's N and C.
  bool broadcasts_over_hw(const Instr& in, const BackendTraits& t) const {
    const Shape& o = f_.regs[in.out[0]].meta.shape;
    for (size_t k = 0; k < in.in.size(); ++k) {
      if (has_bit(t.shape_only_inputs, k)) continue;
      const int r = in.in[k];
      if (r < 0 || f_.regs[r].type != RegType::kTensor) return false;
      const Shape& s = f_.regs[r].meta.shape;
      if (s.size() != 4 || s[0] != o[0] || s[1] != o[1] || s[2] != 1 || s[3] != 1) return false;
    }
    return true;
  }

  // Rewrites a reader of bf16 NHWC activations (BackendTraits::nhwc, or an elementwise op) to
  // take them as they are; false leaves it untouched (its blocked operands are then reordered).
  bool try_nhwc(Instr& in) {
    if (!nhwc_ || in.code != Code::kKernel) return false;
    const BackendTraits& t = in.op->backend;
    bool src_blocked = false, dst_blocked = false;
    std::vector<int> outs;  // the outputs written NHWC
    if (t.nhwc == NhwcKind::kSame) {
      bool reads = false, wanted = false;
      for (size_t k = 0; k < in.in.size(); ++k)
        if (has_bit(t.nhwc_inputs, k)) {
          if (!nhwc_blocked(in.in[k])) return false;
          reads = true;
        }
      for (size_t j = 0; j < in.out.size(); ++j)
        if (has_bit(t.nhwc_outputs, j)) {
          if (!is_nhwc(in.out[j])) return false;
          wanted |= wanted_[in.out[j]] != 0;
          outs.push_back(in.out[j]);
        }
      // Writes only (the mean pool's gradient): NHWC pays where its readers take it, and the
      // kernels broadcast an (N, C, 1, 1) operand over H, W only.
      if (!reads && (!wanted || !broadcasts_over_hw(in, t))) return false;
      src_blocked = dst_blocked = true;
    } else if (t.nhwc == NhwcKind::kConvGrad) {
      dst_blocked = nhwc_blocked(in.in[0]);                                        // dy
      const bool x_blocked = has_bit(t.nhwc_inputs, 1) && nhwc_blocked(in.in[1]);  // filter's x
      const bool dx_blocked = has_bit(t.nhwc_outputs, 0) && is_nhwc(in.out[0]) &&
                              wanted_[in.out[0]] && is_nhwc(in.in[0]);
      if (!dst_blocked && !x_blocked && !dx_blocked) return false;
      src_blocked = x_blocked || dx_blocked;
      // Without the step the primitive reorders each of these to and from its layout.
      if (dst_blocked) saved_ += bytes(in.in[0]);
      if (x_blocked) saved_ += bytes(in.in[1]);
      if (dx_blocked) {
        saved_ += bytes(in.out[0]);
        outs.push_back(in.out[0]);
      }
    } else if (is_mean_hw(f_, in, true)) {  // global mean pool: NHWC in, (N, C) plain out
      if (!nhwc_blocked(in.in[0])) return false;
      src_blocked = true;
    } else if (flat_nhwc_candidate(in)) {
      for (int r : in.in)
        if (same_shape_operand(in, r) && !nhwc_blocked(r)) return false;
      p_.fused_ops.push_back(make_blocked_op(*in.op, true, true, DType::bfloat16));
      in.op = p_.fused_ops.back().get();
      f_.regs[in.out[0]].blocked = true;
      return true;
    } else {
      return false;
    }
    for (size_t k = 0; k < in.in.size(); ++k) {
      const bool nhwc_operand =
          (has_bit(t.nhwc_inputs, k) || t.reduce == ReduceFusion::kMean) && nhwc_blocked(in.in[k]);
      if (!nhwc_operand && !has_bit(t.shape_only_inputs, k)) in.in[k] = plain(in.in[k]);
    }
    p_.fused_ops.push_back(make_blocked_op(*in.op, true, false, DType::bfloat16));
    in.op = p_.fused_ops.back().get();
    auto params = std::make_shared<KernelParams>(in.params ? *in.params : KernelParams{});
    params->src_blocked = src_blocked;
    params->dst_blocked = dst_blocked;
    in.params = std::move(params);
    for (int r : outs) f_.regs[r].blocked = true;
    return true;
  }

  // A global average pooling of a blocked tensor reads it blocked (MYCEL_MEAN_HW_BLOCKED=0: a
  // to_nchw first, as any plain reader; read once).
  bool try_mean_hw(Instr& in) {
    if (!mean_hw_blocked_on() || !is_mean_hw(f_, in) || !blocked(in.in[0])) return false;
    p_.fused_ops.push_back(make_mean_hw_op(*in.op));
    in.op = p_.fused_ops.back().get();
    return true;
  }

  // The register holding r in NCHW: r itself, or a reorder of it (made once, before its first use).
  int plain(int r) {
    if (!blocked(r)) return r;
    if (plain_[r] >= 0) return plain_[r];
    if (!to_plain_) {
      p_.fused_ops.push_back(make_to_plain_op());
      to_plain_ = p_.fused_ops.back().get();
    }
    cost_ += bytes(r);
    RegInfo info = f_.regs[r];
    info.blocked = false;
    f_.regs.push_back(info);
    const int q = static_cast<int>(f_.regs.size()) - 1;
    plain_.push_back(-1);
    Instr reorder;
    reorder.code = Code::kKernel;
    reorder.op = to_plain_;
    reorder.in = {r};
    reorder.out = {q};
    f_.code.push_back(std::move(reorder));
    plain_[r] = q;
    return q;
  }

  Function& f_;
  ProgramImpl& p_;
  const bool nhwc_;           // bf16 activations may go NHWC (bf16_nhwc_wanted)
  std::vector<int> plain_;    // per register: its NCHW copy, -1 if none yet
  std::vector<char> wanted_;  // per original register: read first by a layout-aware op
  const OpDef* to_plain_ = nullptr;
  size_t saved_ = 0, cost_ = 0;
};

}  // namespace

void assign_layouts(ProgramImpl& p, bool always) {
  if (cpu::nn_backend() == cpu::NnBackend::kRef) return;  // reference loops know only NCHW
  if (cpu::activation_tag() == dnnl::memory::format_tag::undef) return;
  const bool nhwc = bf16_nhwc_wanted();
  for (Function& f : p.fns) {
    // Training graphs read most activations again in NCHW (relu masks, pooling and conv
    // gradients): when the reorders that adds move more bytes than the convs' own reorders that
    // it removes, the function keeps NCHW.
    const std::vector<Instr> code = f.code;
    const std::vector<RegInfo> regs = f.regs;
    const std::vector<int> outputs = f.outputs;
    const size_t num_ops = p.fused_ops.size();
    LayoutAssigner a(f, p, nhwc);
    a.run();
    if (!always && a.reorder_bytes() > a.saved_bytes()) {
      f.code = code;
      f.regs = regs;
      f.outputs = outputs;
      p.fused_ops.resize(num_ops);
    }
  }
}

}  // namespace mycel::backend::detail
