// Allocator calls inside kernels on a warm call: what graph mode's "no allocation for
// intermediates" rests on. oneDNN scratchpads are reused per thread; the kernels listed as
// allocating are reported (not rewritten) -- see docs in src/mycel/backend/program.h.
#include "backend_util.h"

namespace mycel::backend::testing {
namespace {

// Allocator calls of one warm kernel call (the second call: caches are built by the first).
size_t warm_allocs(const std::string& name, std::vector<Tensor> in,
                   std::map<std::string, AttrValue> at = {}) {
  const OpDef& d = Registry::get().at(name);
  Attrs a = make_attrs(d, at);
  auto outs = call_op(d, in, a);
  d.kernel(KernelContext{d, in, outs, a});
  size_t before = allocator_stats().num_allocs;
  d.kernel(KernelContext{d, in, outs, a});
  return allocator_stats().num_allocs - before;
}

TEST(BackendAlloc, WarmKernelsOfAnMlpAndLenetDoNotAllocate) {
  EXPECT_EQ(warm_allocs("matmul", {randn({64, 256}, 1), randn({256, 128}, 2)}), 0u);
  EXPECT_EQ(warm_allocs("dense", {randn({8, 16}, 1), randn({4, 16}, 2), randn({4}, 3)}), 0u);
  EXPECT_EQ(warm_allocs("softmax", {randn({64, 10}, 1)}), 0u);
  EXPECT_EQ(warm_allocs("add", {randn({3, 4}, 1), randn({4}, 2)}), 0u);
  EXPECT_EQ(warm_allocs("relu", {randn({3, 4}, 1)}), 0u);
  EXPECT_EQ(warm_allocs("sum", {randn({3, 4}, 1)}), 0u);
  EXPECT_EQ(
      warm_allocs("max_pool2d", {randn({2, 6, 28, 28}, 1)},
                  {{"kernel_size", std::vector<int64_t>{2}}, {"strides", std::vector<int64_t>{2}}}),
      0u);
}

TEST(BackendAlloc, KernelsThatStillAllocateInternally) {
  // Reported, not rewritten: ints through float-valued unary ops convert to a temporary first;
  // oneDNN convolution reorders its output when oneDNN picks a blocked layout.
  EXPECT_EQ(warm_allocs("exp", {randn({3, 4}, 1).to(DType::int32)}), 1u);
  size_t conv =
      warm_allocs("conv2d", {randn({2, 1, 32, 32}, 1), randn({6, 1, 5, 5}, 2), randn({6}, 3)});
  EXPECT_LE(conv, 2u);
  std::cout << "[report] conv2d warm allocator calls: " << conv << "\n";
}

}  // namespace
}  // namespace mycel::backend::testing
