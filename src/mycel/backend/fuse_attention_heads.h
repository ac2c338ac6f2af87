// Attention's backward products (fold_head_transposes.cc's strided launches) as one launch per
// layer: see fuse_attention_heads.cc.
#pragma once
#include <vector>

#include "mycel/backend/fuse_util.h"
#include "mycel/kernels/cpu/dnnl_strided_matmul.h"

namespace mycel::backend::detail {

/// A launch fold_head_transposes made: a strided product (c = in[0] @ in[1] over s, into `out`)
/// at instruction `at`, or (`softmax_grad`) that product followed by softmax's gradient with
/// in[2] as the softmax output (fuse_heads_softmax.h).
struct StridedLaunch {
  int at = -1;
  cpu::StridedMatmul s;
  std::vector<int> in;
  int out = -1;
  bool softmax_grad = false;
  bool softmax = false;  // the product followed by softmax (the forward's scores, P = out)
};

/// Where a softmax-gradient launch's dS is read only by two strided products as their a, and a
/// third product reads its softmax output P as a with its dO as b (dV = P^T dO), the four become
/// one cpu::attention_heads_grad launch at the first one's place (bf16 on a CPU with
/// AVX512-BF16, unless MYCEL_FUSE_ATTENTION_HEADS=0, for A/B). Likewise the forward's scores
/// with their softmax and the product P.V reading P as a become one cpu::attention_heads_fwd
/// launch (P still written), where MYCEL_FUSE_ATTENTION_FWD=1 (measured slower: off by default).
/// `launches` index f.code as it is.
void fuse_attention_heads(Function& f, ProgramImpl& p, std::vector<StridedLaunch> launches);

}  // namespace mycel::backend::detail
