#include "mycel/kernels/cpu/matmul_heads_rows.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "mycel/core/error.h"
#include "mycel/core/parallel.h"
#include "mycel/kernels/cpu/head_blocks.h"

namespace mycel::cpu {
namespace {

// At most this much of c a block: a Zen 4 core's L2. Each thread gets one block where that fits
// (the transformer step's 2 MiB of scores on two threads: 1 MiB each): smaller blocks ran slower
// in the step (256 KiB blocks: 3.51 ms of medians for the four fused launches against 3.27 with
// 1 MiB, 2 threads, load 4.6), each block's product a primitive call of its own.
constexpr int64_t kBlockBytes = 1024 * 1024;

// One block's sub-views and its sub-tensors of a, b and c: built when the launch's buffers change
// (the arena's stay put), so that a warm launch allocates nothing (the views' and shapes'
// vectors would be three each a block).
struct Block {
  StridedMatmul sub;
  Tensor a, b, c;
};

struct BlocksPrepared : KernelPrepared {
  int threads = 0;
  int64_t per = 0;                                     // first-dim entries a block
  std::vector<std::unique_ptr<KernelPrepared>> slots;  // each block's matmul_strided state
  std::vector<Block> blocks;
  const void *a = nullptr, *b = nullptr, *c = nullptr;  // the buffers `blocks` view
};

}  // namespace

void matmul_strided_then(const Tensor& a, const Tensor& b, Tensor& c, const StridedMatmul& s,
                         RowEpilogue after, void* ctx, std::unique_ptr<KernelPrepared>* slot) {
  const std::vector<int64_t>& d = s.c.dims;
  MYCEL_CHECK(d.size() == 4 && s.a.dims.size() == 4 && s.b.dims.size() == 4 &&
                  s.a.dims[0] == d[0] && s.b.dims[0] == d[0] && s.c.strides[3] == 1 &&
                  s.c.strides[2] == d[3] && s.c.strides[1] == d[2] * d[3] &&
                  s.c.strides[0] == d[1] * d[2] * d[3] && c.numel() == d[0] * s.c.strides[0],
              RuntimeError,
              "[matmul_strided_then] expects 4-d views of one first dim and a plain c");
  const int64_t A = d[0], rows_per = d[1] * d[2];  // rows of c a first-dim entry
  if (c.numel() == 0) return;
  const int64_t per_bytes = s.c.strides[0] * static_cast<int64_t>(itemsize(c.dtype()));
  std::unique_ptr<BlocksPrepared> local;
  BlocksPrepared& p = prepared_state<BlocksPrepared>(
      slot, local, [&](const BlocksPrepared& q) { return q.threads == num_threads(); },
      [&] {
        auto q = std::make_unique<BlocksPrepared>();
        q->threads = num_threads();
        const char* kb = std::getenv("MYCEL_HEADS_BLOCK_KB");  // block size experiments
        const int64_t bytes = kb ? std::atoll(kb) * 1024 : kBlockBytes;
        const int64_t share = (A + q->threads - 1) / q->threads;
        q->per =
            std::clamp<int64_t>(std::min(share, bytes / std::max<int64_t>(per_bytes, 1)), 1, A);
        q->slots.resize(static_cast<size_t>((A + q->per - 1) / q->per));
        return q;
      });
  const int64_t per = p.per, blocks = static_cast<int64_t>(p.slots.size());
  if (p.a != a.data() || p.b != b.data() || p.c != c.data() ||
      static_cast<int64_t>(p.blocks.size()) != blocks) {
    p.blocks.clear();
    for (int64_t i = 0; i < blocks; ++i) {
      const int64_t i0 = i * per, n = std::min(per, A - i0);
      p.blocks.push_back({{sub_dims(s.a, n), sub_dims(s.b, n), sub_dims(s.c, n)},
                          sub_tensor(a, s.a, i0, n),
                          sub_tensor(b, s.b, i0, n),
                          sub_tensor(c, s.c, i0, n)});
    }
    p.a = a.data(), p.b = b.data(), p.c = c.data();
  }
  auto block = [&](int64_t i) {
    const int64_t i0 = i * per, n = std::min(per, A - i0);
    Block& k = p.blocks[static_cast<size_t>(i)];
    matmul_strided(k.a, k.b, k.c, k.sub, &p.slots[static_cast<size_t>(i)]);
    after(ctx, i0 * rows_per, (i0 + n) * rows_per);
  };
  blocks_on_threads(blocks, block);
}

}  // namespace mycel::cpu
