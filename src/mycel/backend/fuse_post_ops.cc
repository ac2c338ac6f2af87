// conv2d / dense / matmul followed by relu (conv2d: or relu6; dense and matmul: or `add` of a row
// vector) become one instruction whose kernel asks oneDNN for the primitive with those post-ops, so
// the intermediate is never written out and read back. Only float32 (the post-ops are then exact:
// oneDNN adds in float32, its relu with alpha 0 equals max(y, 0) and its clip(0, 6) equals
// min(max(y, 0), 6)), only when each intermediate has no other reader, and never across an
// instruction with side effects. A bfloat16 dense or matmul takes relu/relu6 too (amp O2's
// feed-forward layers): oneDNN clips the float32 sum and rounds once, which equals clipping the
// rounded value (rounding is monotonic and keeps 0 and 6) except that a negative sum too small
// for bf16's subnormals gives +0 where the unfused relu kept -0.
//
// A float32 conv2d also takes the residual add of a ResNet block as its first post-op: `add`
// of a tensor of the conv's own (static) shape, then relu/relu6 (a kAddRow post-op whose
// operand is the whole shortcut tensor, read in the conv's output layout). The kernels add it
// in their output pass (Winograd's output transform, the brgconv's reorder loop) or, where they
// cannot, the fused launch adds it by one loop: either way one launch and one pass fewer than a
// separate add+relu. The shortcut is only read, so other readers of it do not matter. The sum
// is the same float32 add, in the same order ((conv + bias) + shortcut, then the clip), as the
// unfused ops. MYCEL_FUSE_RESIDUAL=0 turns it off (read at compile time).
#include <cstdlib>
#include <memory>

#include "mycel/backend/fuse_util.h"
#include "mycel/kernels/cpu/dnnl_post_ops.h"

namespace mycel::backend::detail {
namespace {

bool is_producer(const Instr& in) { return is_kernel1(in) && in.op->backend.accepts_post_ops; }

// A bf16 output of a dense or matmul (no conv: its bf16 kernels and the pooling fusion are
// float32-only) whose dims are static but perhaps the batch.
bool is_bf16_product(const Function& f, const Instr& in) {
  const int r = in.out[0];
  if (in.op->backend.window != WindowKind::kNone || f.regs[r].type != RegType::kTensor ||
      f.regs[r].meta.dtype != DType::bfloat16 || f.regs[r].blocked)
    return false;
  const Shape& s = f.regs[r].meta.shape;
  for (size_t d = 1; d < s.size(); ++d)
    if (s[d] == ir::kDynamic) return false;
  return true;
}

// The post-op `in` would become after a producer (0: none).
uint8_t post_op_of(const Instr& in) { return is_kernel1(in) ? in.op->backend.as_post_op : 0; }

bool residual_fusion_on() {
  const char* v = std::getenv("MYCEL_FUSE_RESIDUAL");
  return !(v && *v && std::atoi(v) == 0);
}

// A float32 convolution (plain, or with its batch_norm folded) whose output may take a residual
// add: the kernels that apply it read the shortcut in the output's layout.
bool takes_residual(const Function& f, const Instr& prod) {
  return prod.op->backend.window == WindowKind::kConv &&
         (prod.op->backend.accepts_post_ops & kPostRelu) && is_static_f32(f, prod.out[0]) &&
         f.regs[prod.out[0]].meta.shape.size() == 4;
}

// A conv whose (constant) weights are 1x1.
bool is_1x1(const Function& f, const Instr& conv) {
  const int w = conv.in.size() > 1 ? conv.in[1] : -1;
  if (w < 0) return false;
  const Shape& s = f.regs[w].meta.shape;
  return s.size() == 4 && s[2] == 1 && s[3] == 1;
}

// The op of the fused instruction: the producer's infer and kernel, with the instruction's
// post-ops (KernelParams) passed to the kernel, and applied by loops if the primitive could not
// take them.
std::shared_ptr<const OpDef> make_fused_op(const OpDef& base,
                                           const std::vector<PostOp::Kind>& ops) {
  auto d = std::make_shared<OpDef>();
  d->name = base.name;
  for (PostOp::Kind k : ops)
    d->name += k == PostOp::Kind::kRelu ? "+relu" : k == PostOp::Kind::kRelu6 ? "+relu6" : "+add";
  d->class_name = base.class_name;
  d->doc = "Fused " + base.name + " with oneDNN post-ops (graph backend only).";
  d->inputs = base.inputs;
  const bool conv = base.backend.window == WindowKind::kConv;  // its add is the residual
  for (PostOp::Kind k : ops)
    if (k == PostOp::Kind::kAddRow) d->inputs.push_back({conv ? "residual" : "row"});
  const size_t nbase = base.inputs.size();
  const OpDef* b = &base;
  d->infer = [b, nbase](const InferContext& c) {
    std::vector<const TensorMeta*> ins(c.inputs.begin(), c.inputs.begin() + nbase);
    return b->infer(InferContext{*b, ins, c.attrs});
  };
  const std::string name = d->name;
  d->kernel = [b, nbase, name](const KernelContext& c) {
    MYCEL_CHECK(c.params, RuntimeError, "[", name, "] launched without its post-ops (backend bug)");
    KernelParams& p = *c.params;
    size_t extra = nbase;
    for (PostOp& op : p.post_ops)  // the row operands are this launch's inputs (reused buffers)
      if (op.kind == PostOp::Kind::kAddRow) op.operand = c.inputs[extra++];
    p.post_applied = false;
    b->kernel(KernelContext{*b, c.inputs, c.outputs, c.attrs, c.prepared, &p});
    if (!p.post_applied) cpu::apply_post_ops(p.post_ops, c.out(0), p.dst_blocked);
  };
  d->dtypes = base.dtypes;
  d->dtype_input = base.dtype_input;
  d->grad = "none";
  // What the later rewrites (conv+pool fusion, layouts) need to know of the fused op.
  d->backend.window = base.backend.window;
  d->backend.unfused = &base;
  for (PostOp::Kind k : ops)
    d->backend.fused_post_ops |= k == PostOp::Kind::kRelu    ? uint8_t{kPostRelu}
                                 : k == PostOp::Kind::kRelu6 ? uint8_t{kPostRelu6}
                                                             : uint8_t{kPostAddRow};
  d->backend.absorbs_max_pool =
      base.backend.absorbs_max_pool && d->backend.fused_post_ops == kPostRelu;
  return d;
}

void fuse_function(Function& f, ProgramImpl& p) {
  const std::vector<int> uses = count_uses(f);
  const int n = static_cast<int>(f.code.size());
  const std::vector<int> reader = single_readers(f, uses);
  const bool residual_on = residual_fusion_on();
  const std::vector<int> producer = sole_producers(f);
  std::vector<char> keep(n, 1);
  for (int i = 0; i < n; ++i) {
    Instr& prod = f.code[i];
    if (!keep[i] || !is_producer(prod)) continue;
    const bool bf16 = is_bf16_product(f, prod);
    if (!bf16 && !is_f32_static_but_batch(f, prod.out[0])) continue;
    const uint8_t accepts =
        prod.op->backend.accepts_post_ops & (bf16 ? kPostRelu | kPostRelu6 : 0xff);
    const bool residual = !bf16 && residual_on && takes_residual(f, prod);
    std::vector<PostOp::Kind> ops;
    std::vector<int> rows, absorbed;
    int cur = prod.out[0], last = i;
    for (;;) {
      const int j = reader[cur];
      if (j < 0 || !keep[j]) break;  // (a residual add another producer has taken)
      if (side_effect_between(f, keep, last, j)) break;
      const Instr& c = f.code[j];
      if ((accepts & kPostRelu) && post_op_of(c) == kPostRelu && c.in[0] == cur) {
        ops.push_back(PostOp::Kind::kRelu);
      } else if ((accepts & kPostRelu6) && post_op_of(c) == kPostRelu6 && c.in[0] == cur) {
        ops.push_back(PostOp::Kind::kRelu6);
      } else if ((accepts & kPostAddRow) && post_op_of(c) == kPostAddRow && c.in.size() == 2 &&
                 f.regs[c.out[0]].meta == f.regs[cur].meta) {
        const int other = c.in[0] == cur ? c.in[1] : c.in[0];
        const Shape& ys = f.regs[cur].meta.shape;
        if (c.in[0] == c.in[1] || !is_static_f32(f, other) || ys.empty() ||
            f.regs[other].meta.shape != Shape{ys.back()})
          break;
        ops.push_back(PostOp::Kind::kAddRow);
        rows.push_back(other);
      } else if (residual && ops.empty() && post_op_of(c) == kPostAddRow && c.in.size() == 2 &&
                 c.in[0] != c.in[1] && f.regs[c.out[0]].meta == f.regs[cur].meta) {
        // The residual add (first, so that the kernels compute act(conv + bias + shortcut)).
        const int other = c.in[0] == cur ? c.in[1] : c.in[0];
        if (!is_static_f32(f, other) || !(f.regs[other].meta == f.regs[cur].meta)) break;
        // A projection shortcut's 1x1 conv leaves the add to the block's 3x3 conv (whose
        // kernels add it in their output pass; the 1x1's would by a loop).
        const int q = producer[other];
        if (is_1x1(f, prod) && q >= 0 && keep[q] && is_producer(f.code[q]) &&
            takes_residual(f, f.code[q]) && !is_1x1(f, f.code[q]) && reader[other] == j)
          break;
        ops.push_back(PostOp::Kind::kAddRow);
        rows.push_back(other);
      } else {
        break;
      }
      absorbed.push_back(j);
      cur = c.out[0];
      last = j;
    }
    if (ops.empty()) continue;
    p.fused_ops.push_back(make_fused_op(*prod.op, ops));
    Instr fused = prod;
    fused.op = p.fused_ops.back().get();
    auto params = std::make_shared<KernelParams>(prod.params ? *prod.params : KernelParams{});
    for (PostOp::Kind k : ops) params->post_ops.push_back(PostOp{k, Tensor()});
    fused.params = std::move(params);
    fused.in.resize(prod.op->inputs.size(), -1);  // absent optional inputs, then the rows
    fused.in.insert(fused.in.end(), rows.begin(), rows.end());
    fused.out = {cur};
    fused.node = f.code[last].node;
    keep[i] = 0;
    for (int j : absorbed) keep[j] = 0;
    f.code[last] = std::move(fused);
    keep[last] = 1;
    ++p.num_fused;
  }
  compact(f, keep);
}

}  // namespace

void fuse_post_ops(ProgramImpl& p) {
  for (Function& f : p.fns) fuse_function(f, p);
}

}  // namespace mycel::backend::detail
