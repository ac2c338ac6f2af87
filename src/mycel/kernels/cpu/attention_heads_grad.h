// Attention's backward per block of heads in one launch (issue 19, bf16 O2): dV = P^T dO,
// dP = dO V^T, dS = P * (dP - rowsum(P * dP)), dQ = dS K and dK = dS^T Q, each thread running the
// five on a block of heads while that block's P and dS are in its L2
// (backend/fuse_attention_heads.cc makes the launch).
#pragma once
#include <cstdint>
#include <memory>

#include "mycel/kernels/cpu/dnnl_strided_matmul.h"

namespace mycel::cpu {

/// The four products' views (dnnl_strided_matmul.h), all 4-D of one first dim A: dv (a = P's
/// buffer, transposed), dp (c = dS, plain (A, C, L, L), the shape of P), dq and dk (a = dS's
/// buffer: its plain view or its transpose).
struct AttentionGradViews {
  StridedMatmul dv, dp, dq, dk;
};

/// dv_c = dv_a @ dv_b; ds = softmax_grad(y, dp_a @ dp_b); dq_c = ds @ dq_b; dk_c = ds @ dk_b
/// (ds through the views s.dq.a and s.dk.a); y: P, plain, dS's shape. Where the four products
/// suit matmul_head_bf16 (matmul_heads_bf16_fits with b's columns allowed), each thread a range
/// of heads, each head's five steps in turn with its dS in a buffer of the thread's (dV after the
/// rows, which bring P into cache). Else the first dim is cut into blocks (whole entries,
/// MYCEL_ATTENTION_BLOCK_KB of P and dS a block, default 256) dealt out to the threads, each
/// block's products matmul_strided on its sub-views on one thread. Each product and row is the
/// unfused launches' arithmetic but dP's, whose unfused launch is oneDNN's (bf16 rounding apart;
/// the tests found the same bits).
/// `slot`: the launch's prepared state (graph mode), or null.
void attention_heads_grad(const Tensor& dv_a, const Tensor& dv_b, const Tensor& dp_a,
                          const Tensor& dp_b, const Tensor& y, const Tensor& dq_b,
                          const Tensor& dk_b, Tensor& dv, Tensor& dq, Tensor& dk,
                          const AttentionGradViews& s, std::unique_ptr<KernelPrepared>* slot);

/// The forward's two launches as one: p = softmax(s.a @ s.b) over `scores` (c plain: (A, C, L,
/// L)) and o = p @ v over `out` (its a: p's plain view); each thread a range of heads, each head's
/// scores, softmax rows and product while its P is in L1/L2 (P is still written: the backward
/// reads it). Where the views do not suit matmul_head_bf16, the two launches' kernels
/// (matmul_strided_then with softmax's rows, then matmul_strided). The unfused bits.
void attention_heads_fwd(const Tensor& q, const Tensor& kt, const Tensor& v, Tensor& p, Tensor& o,
                         const StridedMatmul& scores, const StridedMatmul& out,
                         std::unique_ptr<KernelPrepared>* slot);

}  // namespace mycel::cpu
