// Memory planning: lifetimes of a function's buffers over its instruction order, and offsets in
// one frame assigned best-fit so that buffers whose lifetimes do not overlap share memory.
#pragma once
#include <cstddef>
#include <vector>

#include "mycel/backend/detail.h"

namespace mycel::backend::detail {

inline constexpr size_t kBufferAlign = 64;

/// A buffer of `size` bytes live from instruction `start` to `end` (inclusive).
struct BufferReq {
  size_t size = 0;
  int start = 0;
  int end = 0;
};

/// Offsets per buffer (aligned to kBufferAlign) and the total bytes.
struct MemoryPlan {
  std::vector<size_t> offsets;
  size_t total = 0;
};

/// Best-fit placement, tried in several orders (largest first, earliest first, longest-lived
/// first) keeping the smallest total, as MindSpore's SOMAS does with its heuristics.
MemoryPlan plan_memory(const std::vector<BufferReq>& bufs);

/// A function's frame under concrete metas.
struct FrameLayout {
  std::vector<long> offset;  // per register: offset of the buffer it writes, -1 if none
  std::vector<BufferReq> buffers;
  std::vector<int> buffer_of;  // per register: its own buffer, -1 if none
  size_t size = 0;
  size_t num_inplace = 0;
};

/// Lifetimes (instruction i is time i + 1; entry 0, exit code.size() + 1) of kernel outputs,
/// scalar_to_tensor outputs, call results and -- for recursive functions -- parameter homes.
/// Views and selects alias their inputs (extending their lifetimes); a call result keeps the
/// call's tensor arguments alive (it may be one of them); an elementwise kernel writes over an
/// input of the same shape and dtype whose buffer dies at that kernel.
FrameLayout plan_frame(const Function& f, const std::vector<TensorMeta>& meta);

}  // namespace mycel::backend::detail
