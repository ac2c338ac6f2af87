// fold_head_transposes.cc's strided products followed by a softmax (attention's scores) or by a
// softmax gradient reading them as its dy (the backward's dP): one launch that runs each block of
// heads' product and then the row op on that block while it is in the thread's cache.
#pragma once
#include <memory>
#include <vector>

#include "mycel/backend/fuse_util.h"
#include "mycel/kernels/cpu/dnnl_strided_matmul.h"

namespace mycel::backend::detail {

/// The launch replacing a product and its row op: `op` at instruction `at` (the row op's place)
/// reading `in`, writing `out`.
struct HeadsSoftmax {
  int at = -1;
  std::shared_ptr<OpDef> op;
  std::vector<int> in;
  int out = -1;
};

/// Whether the product at instruction k (operands `operands`, the registers it will read; its
/// plain result `result`, the views `s`) is read only by a softmax over the last axis, or
/// only as the dy of such a softmax gradient (registry trait backend.softmax_rows), with nothing
/// writing the operands in between; then `r` says what replaces the row op. Unless
/// MYCEL_FUSE_HEADS_SOFTMAX=0 (A/B measurements).
bool match_heads_softmax(const Function& f, const std::vector<int>& uses,
                         const std::vector<int>& reader, int k, int result,
                         const std::vector<int>& operands, const cpu::StridedMatmul& s,
                         HeadsSoftmax& r);

}  // namespace mycel::backend::detail
