// Attention's head split and merge as strides of the batched matmuls (issue 19, bf16 O2). The
// split, x (N, L, heads, d) -> transpose (0, 2, 1, 3) -> view (N * heads, L, d), copies x once per
// use, and so does the merge of a matmul's result (N * heads, L, d) -> view (N, heads, L, d) ->
// transpose (0, 2, 1, 3): eight copies of L x N x E per layer and step, forward and backward (q,
// k, v, the output's gradient; the output, dq, dk, dv), 25-45 us each in the transformer's bf16
// step. oneDNN's matmul reads (and writes) a 4-D view with the permuted strides as fast as the
// copy (kernels/cpu/dnnl_strided_matmul.cc), so a split whose every reader is a batched matmul
// is dropped and the matmuls read x through its strides, and a merge that is its matmul's only
// reader becomes the matmul's output strides. The result is the same products in the same order,
// bit for bit. bfloat16 always; float32 where its strided products run as fast (fold_f32).
// MYCEL_FOLD_HEAD_TRANSPOSES=0 turns it off (A/B measurements).
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "mycel/backend/fuse_attention_heads.h"
#include "mycel/backend/fuse_heads_softmax.h"
#include "mycel/backend/fuse_util.h"
#include "mycel/core/cpu_features.h"
#include "mycel/kernels/cpu/dnnl_strided_matmul.h"

namespace mycel::backend::detail {
namespace {

using cpu::StridedMatmul;
using cpu::StridedView;

// Whether float32's products fold too: on AVX-512 CPUs other than Zen 4, where oneDNN's float32
// brgemm reads and writes the strided views at the contiguous speed (an Ice Lake Xeon, the
// transformer step on two threads, alternating A/B, bench/bench_step_env_ab.py: attention's 12
// products, 16 transposes and 4 softmax launches 8.5 ms of launch minima, its 12 strided
// launches, 4 with their softmax (fuse_heads_softmax.cc), 7.0; the step's sum of launch minima
// 32.7 -> 31.2 ms). On Zen 4 the strided P.V ran 30-50% slower.
// MYCEL_FOLD_HEAD_TRANSPOSES_F32=1/0 overrides (read per program, for A/B).
bool fold_f32() {
  const char* v = std::getenv("MYCEL_FOLD_HEAD_TRANSPOSES_F32");
  if (v && *v) return std::strcmp(v, "0") != 0;
  return cpu_has_avx512() && !cpu_is_zen4();
}

// A static plain register of rank `rank` in a dtype whose head transposes fold.
bool is_static_heads(const Function& f, int r, int rank, bool f32) {
  return is_static_plain(f, r, DType::bfloat16, rank) ||
         (f32 && is_static_plain(f, r, DType::float32, rank));
}

bool same_dtype(const Function& f, int r0, int r1) {
  return f.regs[r0].meta.dtype == f.regs[r1].meta.dtype;
}

// A transpose swapping dims 1 and 2 of a static 4-D tensor.
bool is_head_transpose(const Function& f, const Instr& in, bool f32) {
  if (!is_kernel1(in) || !in.op->backend.permutes_axes || in.in.empty() ||
      !is_static_heads(f, in.in[0], 4, f32) || !is_static_heads(f, in.out[0], 4, f32) ||
      !same_dtype(f, in.in[0], in.out[0]))
    return false;
  std::vector<int64_t> p = in.attrs.get_ints("perm");
  for (int64_t& x : p) x = x < 0 ? x + 4 : x;
  return p == std::vector<int64_t>{0, 2, 1, 3};
}

// A batched matmul of two static rank-3 operands of one batch and dtype, no post-ops.
bool is_batched_matmul(const Function& f, const Instr& in, bool f32) {
  if (!is_kernel1(in) || !in.op->backend.plain_matmul || in.in.size() != 2 || in.params ||
      !is_static_heads(f, in.in[0], 3, f32) || !is_static_heads(f, in.in[1], 3, f32) ||
      !is_static_heads(f, in.out[0], 3, f32) || !same_dtype(f, in.in[0], in.out[0]) ||
      !same_dtype(f, in.in[1], in.out[0]))
    return false;
  return f.regs[in.in[0]].meta.shape[0] == f.regs[in.in[1]].meta.shape[0];
}

// A split: the view register (A * C, B, D) of transpose(src (A, B, C, D)).
struct Split {
  int src = -1, transpose = -1, view = -1;
  int64_t A = 0, B = 0, C = 0, D = 0;
};

// The (A, C, rows, cols) view of a split: src's strides with dims 1 and 2 swapped.
StridedView split_view(const Split& s) {
  return {{s.A, s.C, s.B, s.D}, {s.B * s.C * s.D, s.D, s.C * s.D, 1}};
}

// A contiguous (A * C, R, S) tensor as (A, C, R, S).
StridedView plain_view(const Shape& s3, int64_t A, int64_t C) {
  return {{A, C, s3[1], s3[2]}, {C * s3[1] * s3[2], s3[1] * s3[2], s3[2], 1}};
}

StridedView transposed(StridedView v) {
  std::swap(v.dims[2], v.dims[3]);
  std::swap(v.strides[2], v.strides[3]);
  return v;
}

std::shared_ptr<OpDef> make_op(const StridedMatmul& s, const TensorMeta& out,
                               const std::string& which) {
  auto d = std::make_shared<OpDef>();
  d->name = "matmul_heads{" + which + "}";
  d->class_name = "MatMulHeads";
  d->doc =
      "A batched matmul whose head-split operands or head-merged result are strided "
      "views (fold_head_transposes.cc).";
  d->inputs = {{"x"}, {"y"}};
  d->dtypes = {out.dtype};
  d->grad = "none";
  d->infer = [out](const InferContext&) { return std::vector<TensorMeta>{out}; };
  d->kernel = [s](const KernelContext& c) {
    cpu::matmul_strided(c.in(0), c.in(1), c.out(0), s, c.prepared);
  };
  return d;
}

void fold_function(Function& f, ProgramImpl& p, bool f32) {
  const int n = static_cast<int>(f.code.size());
  const std::vector<int> uses = count_uses(f);
  const std::vector<int> reader = single_readers(f, uses);
  // Splits whose every reader is a batched matmul.
  std::vector<Split> splits;
  std::vector<int> split_of(f.regs.size(), -1);  // view register -> index in splits
  for (int t = 0; t < n; ++t) {
    const Instr& tr = f.code[t];
    if (!is_head_transpose(f, tr, f32) || uses[tr.out[0]] != 1) continue;
    const int v = reader[tr.out[0]];
    if (v < 0 || f.code[v].code != Code::kView || f.code[v].out.size() != 1 ||
        f.code[v].in[0] != tr.out[0])
      continue;
    const Shape& s4 = f.regs[tr.in[0]].meta.shape;
    const int rv = f.code[v].out[0];
    if (!is_static_heads(f, rv, 3, f32) || !same_dtype(f, rv, tr.in[0]) ||
        f.regs[rv].meta.shape != Shape{s4[0] * s4[2], s4[1], s4[3]})
      continue;
    int readers = 0;
    bool ok = true;
    for (int k = v + 1; k < n && ok; ++k)
      for (int r : f.code[k].in)
        if (r == rv) {
          ++readers;
          ok = is_batched_matmul(f, f.code[k], f32) && !written_between(f, tr.in[0], t, k);
        }
    if (!ok || readers != uses[rv]) continue;
    split_of[rv] = static_cast<int>(splits.size());
    splits.push_back({tr.in[0], t, v, s4[0], s4[1], s4[2], s4[3]});
  }
  // The readers of a split must agree on (A, C) with the other split they read, if any.
  std::vector<char> dead(splits.size(), 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (int k = 0; k < n; ++k) {
      const Instr& mm = f.code[k];
      if (!is_batched_matmul(f, mm, f32)) continue;
      const int s0 = split_of[mm.in[0]], s1 = split_of[mm.in[1]];
      if (s0 >= 0 && s1 >= 0 && !dead[s0] && !dead[s1] &&
          (splits[s0].A != splits[s1].A || splits[s0].C != splits[s1].C)) {
        dead[s0] = dead[s1] = 1;
        changed = true;
      }
    }
  }
  std::vector<char> keep(n, 1);
  std::vector<StridedLaunch> launches;  // what fuse_attention_heads may fuse further
  for (size_t i = 0; i < splits.size(); ++i)
    if (!dead[i]) keep[splits[i].transpose] = keep[splits[i].view] = 0;
  for (int k = 0; k < n; ++k) {
    const Instr& mm = f.code[k];
    if (!is_batched_matmul(f, mm, f32)) continue;
    const int sa = split_of[mm.in[0]] >= 0 && !dead[split_of[mm.in[0]]] ? split_of[mm.in[0]] : -1;
    const int sb = split_of[mm.in[1]] >= 0 && !dead[split_of[mm.in[1]]] ? split_of[mm.in[1]] : -1;
    int64_t A = sa >= 0 ? splits[sa].A : sb >= 0 ? splits[sb].A : 0;
    int64_t C = sa >= 0 ? splits[sa].C : sb >= 0 ? splits[sb].C : 0;
    // The merge: out -> view (A, C, M, N) -> transpose (0, 2, 1, 3), each the other's only reader.
    int mv = -1, mt = -1;
    const int ro = mm.out[0];
    const Shape& so = f.regs[ro].meta.shape;
    if (uses[ro] == 1 && (mv = reader[ro]) >= 0 && f.code[mv].code == Code::kView &&
        f.code[mv].out.size() == 1 && f.code[mv].in[0] == ro) {
      const int r4 = f.code[mv].out[0];
      const bool shaped = is_static_heads(f, r4, 4, f32) && same_dtype(f, r4, ro) &&
                          f.regs[r4].meta.shape[2] == so[1] && f.regs[r4].meta.shape[3] == so[2] &&
                          f.regs[r4].meta.shape[0] * f.regs[r4].meta.shape[1] == so[0] &&
                          (!A || (f.regs[r4].meta.shape[0] == A && f.regs[r4].meta.shape[1] == C));
      mt = shaped && uses[r4] == 1 ? reader[r4] : -1;
      if (mt >= 0 && (!is_head_transpose(f, f.code[mt], f32) || f.code[mt].in[0] != r4)) mt = -1;
      if (mt >= 0) {
        A = f.regs[r4].meta.shape[0];
        C = f.regs[r4].meta.shape[1];
      }
    }
    if (sa < 0 && sb < 0 && mt < 0) continue;
    const bool ta = mm.attrs.get_bool("transpose_a"), tb = mm.attrs.get_bool("transpose_b");
    StridedMatmul s;
    s.a = sa >= 0 ? split_view(splits[sa]) : plain_view(f.regs[mm.in[0]].meta.shape, A, C);
    s.b = sb >= 0 ? split_view(splits[sb]) : plain_view(f.regs[mm.in[1]].meta.shape, A, C);
    if (ta) s.a = transposed(s.a);
    if (tb) s.b = transposed(s.b);
    int out = ro;
    if (mt >= 0) {  // c (A, C, M, N) in the transpose's (A, M, C, N) buffer
      const int64_t M = so[1], N = so[2];
      s.c = {{A, C, M, N}, {M * C * N, N, C * N, 1}};
      out = f.code[mt].out[0];
      keep[mv] = keep[mt] = 0;
    } else {
      s.c = plain_view(so, A, C);
    }
    const std::vector<int> operands = {sa >= 0 ? splits[sa].src : mm.in[0],
                                       sb >= 0 ? splits[sb].src : mm.in[1]};
    // A softmax (or its gradient) alone reading a plain result: one launch at the row op's place
    // (fuse_heads_softmax.cc).
    HeadsSoftmax hs;
    if (mt < 0 && match_heads_softmax(f, uses, reader, k, ro, operands, s, hs)) {
      p.fused_ops.push_back(hs.op);
      Instr fused = f.code[hs.at];
      fused.op = p.fused_ops.back().get();
      fused.attrs = Attrs(fused.op, {});
      fused.params = nullptr;
      fused.in = hs.in;
      f.code[hs.at] = std::move(fused);
      launches.push_back({hs.at, s, hs.in, hs.out, hs.in.size() == 3, hs.in.size() == 2});
      keep[k] = 0;
      ++p.num_fused;
      continue;
    }
    const std::string which =
        std::string(sa >= 0 ? "a" : "") + (sb >= 0 ? "b" : "") + (mt >= 0 ? "c" : "");
    p.fused_ops.push_back(make_op(s, f.regs[out].meta, which));
    Instr fused = mm;
    fused.op = p.fused_ops.back().get();
    fused.attrs = Attrs(fused.op, {});
    fused.in = operands;
    fused.out = {out};
    f.code[k] = std::move(fused);
    launches.push_back({k, s, operands, out, false});
    ++p.num_fused;
  }
  std::vector<int> moved(n, -1);  // old instruction index -> its index after compact
  for (int k = 0, j = 0; k < n; ++k)
    if (keep[k]) moved[k] = j++;
  compact(f, keep);
  for (StridedLaunch& l : launches) l.at = moved[l.at];
  fuse_attention_heads(f, p, std::move(launches));
}

}  // namespace

void fold_head_transposes(ProgramImpl& p) {
  const char* v = std::getenv("MYCEL_FOLD_HEAD_TRANSPOSES");
  if (v && std::strcmp(v, "0") == 0) return;
  const bool f32 = fold_f32();
  for (Function& f : p.fns) fold_function(f, p, f32);
}

}  // namespace mycel::backend::detail
