#include "mycel/kernels/cpu/fused_elementwise.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "mycel/core/error.h"
#include "mycel/core/parallel.h"
#include "mycel/kernels/cpu/bf16_round_row.h"
#include "mycel/kernels/cpu/binary.h"
#include "mycel/kernels/cpu/fused_elementwise_outputs.h"
#include "mycel/kernels/cpu/momentum_lanes.h"
#include "mycel/kernels/cpu/unary.h"

namespace mycel::cpu {
namespace {

struct OpInfo {
  EwOp op;
  const char* name;
  int arity;
};
constexpr OpInfo kOps[] = {
    {EwOp::kAdd, "add", 2},         {EwOp::kSub, "sub", 2},
    {EwOp::kMul, "mul", 2},         {EwOp::kDiv, "div", 2},
    {EwOp::kMaximum, "maximum", 2}, {EwOp::kMinimum, "minimum", 2},
    {EwOp::kNeg, "neg", 1},         {EwOp::kAbs, "abs", 1},
    {EwOp::kRelu, "relu", 1},       {EwOp::kSquare, "square", 1},
    {EwOp::kSqrt, "sqrt", 1},       {EwOp::kReciprocal, "reciprocal", 1},
    {EwOp::kExp, "exp", 1},         {EwOp::kSigmoid, "sigmoid", 1},
    {EwOp::kTanh, "tanh", 1},       {EwOp::kErf, "erf", 1},
    {EwOp::kGreater, "greater", 2}, {EwOp::kLess, "less", 2},
    {EwOp::kCast, "cast", 1},
};

// Elements per block: a few step buffers of this size stay in L1.
constexpr int64_t kBlock = 512;

// One step over n elements. An operand stride of 0 broadcasts its single value. The scalar
// math is the op kernels' own (unary.h, binary.h), written once per op here.
template <int SA, int SB, class F>
void loop2(const float* a, const float* b, float* o, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) o[i] = f(a[i * SA], b[i * SB]);
}
template <class F>
void binary(const float* a, bool va, const float* b, bool vb, float* o, int64_t n, F f) {
  if (va && vb)
    loop2<1, 1>(a, b, o, n, f);
  else if (va)
    loop2<1, 0>(a, b, o, n, f);
  else if (vb)
    loop2<0, 1>(a, b, o, n, f);
  else
    loop2<0, 0>(a, b, o, n, f);
}
template <class F>
void unary(const float* a, bool va, float* o, int64_t n, F f) {
  if (va)
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i]);
  else
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[0]);
}

void step(EwOp op, const float* a, bool va, const float* b, bool vb, float* o, int64_t n) {
  switch (op) {
    case EwOp::kAdd:
      return binary(a, va, b, vb, o, n, [](float x, float y) { return x + y; });
    case EwOp::kSub:
      return binary(a, va, b, vb, o, n, [](float x, float y) { return x - y; });
    case EwOp::kMul:
      return binary(a, va, b, vb, o, n, [](float x, float y) { return x * y; });
    case EwOp::kDiv:
      return binary(a, va, b, vb, o, n, [](float x, float y) { return x / y; });
    case EwOp::kMaximum:
      return binary(a, va, b, vb, o, n, [](float x, float y) { return nan_max(x, y); });
    case EwOp::kMinimum:
      return binary(a, va, b, vb, o, n, [](float x, float y) { return nan_min(x, y); });
    case EwOp::kNeg:
      return unary(a, va, o, n, [](float x) { return -x; });
    case EwOp::kAbs:
      return unary(a, va, o, n, [](float x) { return std::fabs(x); });
    case EwOp::kRelu:
      return unary(a, va, o, n, [](float x) { return x < 0.f ? 0.f : x; });
    case EwOp::kSquare:
      return unary(a, va, o, n, [](float x) { return x * x; });
    case EwOp::kSqrt:
      return unary(a, va, o, n, [](float x) { return std::sqrt(x); });
    case EwOp::kReciprocal:
      return unary(a, va, o, n, [](float x) { return 1.f / x; });
    case EwOp::kExp:
      return unary(a, va, o, n, [](float x) { return fast_exp(x); });
    case EwOp::kSigmoid:
      return unary(a, va, o, n, [](float x) { return sigmoid(x); });
    case EwOp::kTanh:
      return unary(a, va, o, n, [](float x) { return fast_tanh(x); });
    case EwOp::kErf:
      return unary(a, va, o, n, [](float x) { return fast_erf(x); });
    case EwOp::kGreater:
      return binary(a, va, b, vb, o, n, [](float x, float y) { return x > y ? 1.f : 0.f; });
    case EwOp::kLess:
      return binary(a, va, b, vb, o, n, [](float x, float y) { return x < y ? 1.f : 0.f; });
    case EwOp::kCast:
      return unary(a, va, o, n, [](float x) { return x; });
  }
}

}  // namespace

const char* ew_op_name(EwOp op) { return kOps[static_cast<int>(op)].name; }
int ew_arity(EwOp op) { return kOps[static_cast<int>(op)].arity; }

std::string EwProgram::str() const {
  auto slot = [&](int s) {
    return s < num_inputs ? "i" + std::to_string(s) : "t" + std::to_string(s - num_inputs);
  };
  std::string r;
  for (size_t k = 0; k < steps.size(); ++k) {
    const EwStep& s = steps[k];
    r += (k ? "; t" : "t") + std::to_string(k) + "=" + ew_op_name(s.op) + "(" + slot(s.a);
    if (ew_arity(s.op) == 2) r += "," + slot(s.b);
    r += ")";
  }
  return r;
}

namespace {

// Elements [start, start + len) of the chain (len <= kBlock): step k's result in
// tmp[k * kBlock ...], the last step's in last.
void run_block(const EwProgram& p, const float* const* base, const char* full, int64_t start,
               int64_t len, float* tmp, float* last) {
  const int ni = p.num_inputs, ns = static_cast<int>(p.steps.size());
  auto operand = [&](int s, bool& vec) -> const float* {
    if (s < ni) {
      vec = full[s];
      return full[s] ? base[s] + start : base[s];
    }
    vec = true;
    return tmp + static_cast<size_t>(s - ni) * kBlock;
  };
  for (int k = 0; k < ns; ++k) {
    const EwStep& s = p.steps[k];
    bool va = false, vb = false;
    const float* a = operand(s.a, va);
    const float* b = ew_arity(s.op) == 2 ? operand(s.b, vb) : nullptr;
    float* dst = k + 1 == ns ? last : tmp + static_cast<size_t>(k) * kBlock;
    step(s.op, a, va, b, vb, dst, len);
  }
}

// The chain over n elements, step out_steps[j]'s results stored at outs[j] (no allocation: the
// tables are the callers').
void run_chain(const EwProgram& p, const std::vector<Tensor>& inputs, int64_t n, int nout,
               const int* out_steps, float* const* outs) {
  if (n == 0) return;
  const int ni = p.num_inputs;
  // Small chains keep their operand table on the stack (a warm launch allocates nothing).
  constexpr int kStackInputs = 16;
  const float* base_stack[kStackInputs];
  char full_stack[kStackInputs];
  std::vector<const float*> base_heap;
  std::vector<char> full_heap;
  if (ni > kStackInputs) base_heap.resize(ni), full_heap.resize(ni);
  const float** base = ni > kStackInputs ? base_heap.data() : base_stack;
  char* full = ni > kStackInputs ? full_heap.data() : full_stack;
  for (int k = 0; k < ni; ++k) {
    base[k] = inputs[k].data<float>();
    full[k] = inputs[k].numel() == n;
  }
  run_fused_elementwise_ptrs(p, base, full, n, nout, out_steps, outs);
}

}  // namespace

namespace {

// The output that takes the chain's last step (returned: the block runner writes it directly);
// the others go to early as (step, buffer), copied out of the block buffers after each block.
float* split_outputs(int ns, int nout, const int* out_steps, float* const* outs,
                     std::pair<int, float*>* early, int* nearly) {
  float* last_out = nullptr;
  *nearly = 0;
  for (int j = 0; j < nout; ++j) {
    MYCEL_CHECK(out_steps[j] >= 0 && out_steps[j] < ns, RuntimeError, "[fused_elementwise] output ",
                j, " takes step ", out_steps[j], " of ", ns);
    if (out_steps[j] == ns - 1)
      last_out = outs[j];
    else
      early[(*nearly)++] = {out_steps[j], outs[j]};
  }
  MYCEL_CHECK(last_out != nullptr, RuntimeError,
              "[fused_elementwise] no output takes the chain's last step");
  return last_out;
}

}  // namespace

void run_fused_elementwise_ptrs(const EwProgram& p, const float* const* base, const char* full,
                                int64_t n, int nout, const int* out_steps, float* const* outs) {
  if (n == 0) return;
  const int ns = static_cast<int>(p.steps.size());
  // The last step writes straight into its output; the results of other output steps are
  // copied out of their block buffers once the block's steps have all run.
  constexpr int kStackOuts = 8;
  std::pair<int, float*> early_stack[kStackOuts];
  std::vector<std::pair<int, float*>> early_heap;
  if (nout > kStackOuts) early_heap.resize(nout);
  std::pair<int, float*>* early = nout > kStackOuts ? early_heap.data() : early_stack;
  int nearly = 0;
  float* const last_out = split_outputs(ns, nout, out_steps, outs, early, &nearly);
  const int64_t nblocks = (n + kBlock - 1) / kBlock;
  // Momentum's update as one register loop (momentum_lanes.h), on the same blocks and threads
  // as the interpreter (MYCEL_MOMENTUM_LANES=0: the interpreter).
  const MomentumLanes mk = match_momentum(p, full, nout, out_steps);
  if (mk.ok) {
    parallel_for(nblocks, kBlock * (ns + nearly), [&](int64_t b0, int64_t b1) {  // same split
      const float* at[5];
      float* dst[2];
      const int64_t start = b0 * kBlock, len = std::min(b1 * kBlock, n) - start;
      for (int k = 0; k < 5; ++k) at[k] = full[k] ? base[k] + start : base[k];
      for (int j = 0; j < 2; ++j) dst[j] = outs[j] + start;
      run_momentum_lanes(mk, at, len, dst);
    });
    return;
  }
  parallel_for(nblocks, kBlock * (ns + nearly), [&](int64_t b0, int64_t b1) {
    // Step results of one block; the last step writes straight into the output.
    thread_local std::vector<float> tmp;  // reused: warm runs allocate nothing
    tmp.resize(static_cast<size_t>(kBlock) * (ns > 1 ? ns - 1 : 1));
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t start = blk * kBlock, len = std::min(kBlock, n - start);
      run_block(p, base, full, start, len, tmp.data(), last_out + start);
      for (int j = 0; j < nearly; ++j)
        std::copy_n(tmp.data() + static_cast<size_t>(early[j].first) * kBlock, len,
                    early[j].second + start);
    }
  });
}

void run_fused_elementwise_bf16_ends(const EwProgram& p, const void* const* base, const char* full,
                                     const char* bf16_in, int64_t n, int nout, const int* out_steps,
                                     float* const* outs, uint16_t* out16) {
  if (n == 0) return;
  const int ni = p.num_inputs, ns = static_cast<int>(p.steps.size());
  constexpr int kStackOuts = 8;
  MYCEL_CHECK(nout <= kStackOuts, RuntimeError, "[fused_elementwise] ", nout, " outputs, at most ",
              kStackOuts, " with bfloat16 ends");
  std::pair<int, float*> early[kStackOuts];
  int nearly = 0;
  float* const last_out = split_outputs(ns, nout, out_steps, outs, early, &nearly);
  const int64_t nblocks = (n + kBlock - 1) / kBlock;
  // MYCEL_EW_ROUND_ROW=0: the scalar rounding loop (A/B; GCC packs its 16-bit stores poorly, a
  // 128x512 weight's bf16 copy 26 -> 18 us on one core).
  const char* rr = std::getenv("MYCEL_EW_ROUND_ROW");
  const bool round_lanes = !(rr && std::strcmp(rr, "0") == 0);
  parallel_for(nblocks, kBlock * (ns + nearly + 1), [&](int64_t b0, int64_t b1) {
    thread_local std::vector<float> tmp, wide;  // reused: warm runs allocate nothing
    thread_local std::vector<const float*> at;
    tmp.resize(static_cast<size_t>(kBlock) * (ns > 1 ? ns - 1 : 1));
    wide.resize(static_cast<size_t>(kBlock) * ni);
    at.resize(ni);
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t start = blk * kBlock, len = std::min(kBlock, n - start);
      // The block's operands from element 0: bf16 ones widened into `wide`.
      for (int k = 0; k < ni; ++k) {
        const int64_t off = full[k] ? start : 0, cnt = full[k] ? len : 1;
        if (bf16_in[k]) {
          const uint16_t* s = static_cast<const uint16_t*>(base[k]) + off;
          float* w = wide.data() + static_cast<size_t>(k) * kBlock;
          for (int64_t i = 0; i < cnt; ++i) w[i] = bf16_widen(s[i]);
          at[k] = w;
        } else {
          at[k] = static_cast<const float*>(base[k]) + off;
        }
      }
      float* last = last_out + start;
      run_block(p, at.data(), full, 0, len, tmp.data(), last);
      for (int j = 0; j < nearly; ++j)
        std::copy_n(tmp.data() + static_cast<size_t>(early[j].first) * kBlock, len,
                    early[j].second + start);
      if (out16 && round_lanes)  // the same bits in AVX2 lanes (a master copy's bf16 weight)
        bf16_round_row(last, out16 + start, len);
      else if (out16)
        for (int64_t i = 0; i < len; ++i) out16[start + i] = bf16_round_bits(last[i]);
    }
  });
}

void run_fused_elementwise(const EwProgram& p, const std::vector<Tensor>& inputs, Tensor& out) {
  const int last = static_cast<int>(p.steps.size()) - 1;
  float* o = out.data<float>();
  run_chain(p, inputs, out.numel(), 1, &last, &o);
}

void run_fused_elementwise(const EwProgram& p, const std::vector<Tensor>& inputs,
                           const std::vector<int>& out_steps, const std::vector<Tensor>& outs) {
  MYCEL_CHECK(!outs.empty() && out_steps.size() == outs.size(), RuntimeError,
              "[fused_elementwise] ", out_steps.size(), " output steps for ", outs.size(),
              " outputs");
  constexpr int kStackOuts = 8;
  float* ptr_stack[kStackOuts];
  std::vector<float*> ptr_heap;
  if (outs.size() > kStackOuts) ptr_heap.resize(outs.size());
  float** ptrs = outs.size() > kStackOuts ? ptr_heap.data() : ptr_stack;
  const int64_t n = outs.back().numel();
  for (size_t j = 0; j < outs.size(); ++j) {
    MYCEL_CHECK(outs[j].numel() == n, RuntimeError, "[fused_elementwise] output ", j, " has ",
                outs[j].numel(), " elements, the chain ", n);
    ptrs[j] = outs[j].data<float>();
  }
  run_chain(p, inputs, n, static_cast<int>(outs.size()), out_steps.data(), ptrs);
}

}  // namespace mycel::cpu

namespace mycel::cpu {

void run_fused_elementwise_block(const EwProgram& p, const float* const* base, const char* full,
                                 int64_t start, int64_t len, float* dst) {
  thread_local std::vector<float> tmp;  // reused: warm runs allocate nothing
  const size_t ns = p.steps.size();
  tmp.resize(static_cast<size_t>(kBlock) * (ns > 1 ? ns - 1 : 1));
  run_block(p, base, full, start, std::min(len, kBlock), tmp.data(), dst);
}

}  // namespace mycel::cpu
