// Inference-time folding: a conv2d (or dense) whose only reader is a batch_norm in inference
// mode (is_training false: y = x * s + t per channel, s = scale / sqrt(variance + epsilon),
// t = bias - mean * s) becomes one instruction, "conv2d+batch_norm" ("dense+batch_norm"), that
// runs the producer on folded weights w * s and bias (b - mean) * s + bias. The batch_norm pass
// over the output is gone, and the result is a plain convolution, so fuse_post_ops (next) can
// take the following relu/relu6 too. The folded weights are computed at run time, again only
// when one of the six source tensors (Parameters) has a new write version
// (core/write_version.h): once per weight version, not per step; a source whose writes go
// untracked (version 0: memory lent to numpy) refolds on every run. The folded weights are
// constant while they live (a refold makes new ones), so the oneDNN convolution keeps them in
// its own layout (KernelParams::const_weights) instead of reordering them on every launch: at
// batch 1 that copy costs as much as the convolution.
#include <array>
#include <cmath>
#include <memory>

#include "mycel/backend/fuse_util.h"
#include "mycel/core/write_version.h"

namespace mycel::backend::detail {
namespace {

// A producer (x, w, b) as the registry defines it (no fusion has wrapped it yet) that can absorb a
// per-output-channel affine map into its weights (w's first dim) and bias: conv2d, dense.
bool is_plain_producer(const Instr& in) {
  return is_kernel1(in) && !in.op->backend.unfused &&
         (in.op->backend.accepts_post_ops & kPostChannelAffine) && in.op->inputs.size() == 3;
}

// A constant or weight register holding a float32 tensor.
bool is_const_f32(const Function& f, int r) {
  return r >= 0 && f.regs[r].is_const && f.regs[r].type == RegType::kTensor &&
         f.regs[r].value.t.defined() && f.regs[r].value.t.dtype() == DType::float32;
}

bool is_channel_vector(const Function& f, int r, int64_t channels) {
  return is_const_f32(f, r) && f.regs[r].value.t.shape() == Shape{channels};
}

// What one folding instruction keeps between runs: the folded tensors, and which versions of
// which sources they were made from.
struct FoldState {
  static constexpr size_t kSources = 6;  // w, b, scale, bias, mean, variance
  Tensor w, b;
  std::array<const void*, kSources> data{};
  std::array<uint64_t, kSources> version{};
  bool valid = false;
  std::vector<Tensor> conv_in;  // x, folded w, folded b: the conv kernel's inputs, reused
  KernelParams own;             // the launch's parameters when the instruction has none
};

uint64_t version_of(const Tensor* t) {
  return t && t->defined() ? write_version(*t->storage()) : 1;  // absent bias: never changes
}

// Whether the folded tensors were made from these sources at their current versions.
bool current(const FoldState& s, const std::array<const Tensor*, FoldState::kSources>& src) {
  if (!s.valid) return false;
  for (size_t k = 0; k < src.size(); ++k) {
    const Tensor* t = src[k];
    const void* d = t && t->defined() ? t->data() : nullptr;
    const uint64_t v = version_of(t);
    if (d != s.data[k] || v == 0 || v != s.version[k]) return false;
  }
  return true;
}

// w' = w * s (per output channel), b' = (b - mean) * s + bias, in float64 then rounded, into
// new tensors: the convolution keeps reordered weights by their buffer, which must not change.
void refold(FoldState& s, const std::array<const Tensor*, FoldState::kSources>& src, double eps) {
  const Tensor& w = *src[0];
  const int64_t oc = w.dim(0), per = oc > 0 ? w.numel() / oc : 0;
  for (size_t k = 0; k < src.size(); ++k) s.version[k] = version_of(src[k]);  // before reading
  s.w = Tensor::empty(w.shape(), DType::float32);
  s.b = Tensor::empty(Shape{oc}, DType::float32);
  const float* wi = w.data<float>();
  const float* bi = src[1] && src[1]->defined() ? src[1]->data<float>() : nullptr;
  const float *scale = src[2]->data<float>(), *bias = src[3]->data<float>(),
              *mean = src[4]->data<float>(), *var = src[5]->data<float>();
  float* wo = s.w.data<float>();
  float* bo = s.b.data<float>();
  for (int64_t o = 0; o < oc; ++o) {
    const double k = static_cast<double>(scale[o]) / std::sqrt(static_cast<double>(var[o]) + eps);
    for (int64_t i = 0; i < per; ++i) wo[o * per + i] = static_cast<float>(wi[o * per + i] * k);
    bo[o] = static_cast<float>(((bi ? bi[o] : 0.0) - mean[o]) * k + bias[o]);
  }
  for (size_t k = 0; k < src.size(); ++k)
    s.data[k] = src[k] && src[k]->defined() ? src[k]->data() : nullptr;
  s.valid = true;
}

std::shared_ptr<const OpDef> make_fold_op(const OpDef& conv, const OpDef& bn, double eps) {
  auto d = std::make_shared<OpDef>();
  d->name = conv.name + "+" + bn.name;
  d->class_name = conv.class_name;
  d->doc =
      conv.name + " with an inference batch_norm folded into its weights (graph backend only).";
  d->inputs = conv.inputs;
  for (size_t k = 1; k < 5; ++k) d->inputs.push_back({"bn_" + bn.inputs[k].name});
  const OpDef* c = &conv;
  d->infer = [c](const InferContext& ctx) {
    std::vector<const TensorMeta*> ins(ctx.inputs.begin(), ctx.inputs.begin() + 3);
    return c->infer(InferContext{*c, ins, ctx.attrs});
  };
  auto state = std::make_shared<FoldState>();
  d->kernel = [c, state, eps](const KernelContext& ctx) {
    FoldState& s = *state;
    const Tensor* b = ctx.inputs[2].defined() ? &ctx.inputs[2] : nullptr;
    const std::array<const Tensor*, FoldState::kSources> src{
        &ctx.inputs[1], b, &ctx.inputs[3], &ctx.inputs[4], &ctx.inputs[5], &ctx.inputs[6]};
    if (!current(s, src)) refold(s, src, eps);
    s.conv_in.resize(3);
    s.conv_in[0] = ctx.inputs[0];
    s.conv_in[1] = s.w;
    s.conv_in[2] = s.b;
    KernelParams& p = ctx.params ? *ctx.params : s.own;
    p.const_weights = true;  // s.w never changes: a refold makes a new tensor
    c->kernel(KernelContext{*c, s.conv_in, ctx.outputs, ctx.attrs, ctx.prepared, &p});
  };
  d->dtypes = {DType::float32};
  d->dtype_input = conv.dtype_input;
  d->grad = "none";
  d->backend.window = conv.backend.window;
  d->backend.accepts_post_ops = conv.backend.accepts_post_ops;
  d->backend.unfused = &conv;
  return d;
}

// Folds what it can in one sweep; returns how many. A batch_norm between a conv and its own
// batch_norm (a ResNet shortcut's) still counts as a side effect (its running statistics) until
// it is folded itself, so the caller sweeps again while something folds.
int fold_function(Function& f, ProgramImpl& p) {
  const std::vector<int> uses = count_uses(f);
  const std::vector<int> reader = single_readers(f, uses);
  const int n = static_cast<int>(f.code.size());
  std::vector<char> keep(n, 1);
  int folded = 0;
  for (int i = 0; i < n; ++i) {
    Instr& conv = f.code[i];
    if (!keep[i] || !is_plain_producer(conv) || !is_const_f32(f, conv.in[1])) continue;
    const int y = conv.out[0];
    const int j = reader[y];
    const int64_t oc = f.regs[conv.in[1]].value.t.dim(0);
    const bool has_bias = conv.in.size() > 2 && conv.in[2] >= 0;
    // The channels are dim 1: NCHW for a convolution, (N, out) for dense.
    const size_t rank = conv.op->backend.window == WindowKind::kConv ? 4 : 2;
    bool fold = j > i && is_f32_static_but_batch(f, y) && f.regs[y].meta.shape.size() == rank &&
                (!has_bias || is_channel_vector(f, conv.in[2], oc));
    if (fold) {
      const Instr& bn = f.code[j];
      fold = bn.code == Code::kKernel && bn.op->backend.as_post_op == kPostChannelAffine &&
             !bn.attrs.get_bool("is_training") && bn.in.size() == 5 && bn.in[0] == y &&
             bn.out.size() == 3 && uses[bn.out[1]] == 0 && uses[bn.out[2]] == 0 &&
             f.regs[bn.out[0]].meta == f.regs[y].meta && !side_effect_between(f, keep, i, j);
      for (int k = 1; fold && k < 5; ++k) fold = is_channel_vector(f, bn.in[k], oc);
    }
    if (!fold) continue;
    const Instr& bn = f.code[j];
    p.fused_ops.push_back(make_fold_op(*conv.op, *bn.op, bn.attrs.get_float("epsilon")));
    Instr fused = conv;
    fused.op = p.fused_ops.back().get();
    fused.in.resize(3, -1);
    fused.in.insert(fused.in.end(), bn.in.begin() + 1, bn.in.end());
    fused.out = {bn.out[0]};
    keep[i] = 0;
    f.code[j] = std::move(fused);
    ++p.num_fused;
    ++folded;
  }
  compact(f, keep);
  return folded;
}

}  // namespace

void fold_batch_norm(ProgramImpl& p) {
  for (Function& f : p.fns)
    while (fold_function(f, p) > 0) {
    }
}

}  // namespace mycel::backend::detail
