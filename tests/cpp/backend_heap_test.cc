// Heap allocations (operator new) of a warm compiled training step -- forward and backward of
// a small conv net, compiled by the same pipeline graph mode uses -- counted by replacing the
// global operator new in this test binary (issue 19 item 4). The tensor allocator's calls are
// counted separately (allocator_stats): a warm run makes exactly one per returned output.
// Run alone for the figure: build/dev/mycel_tests --gtest_filter='BackendHeap*'
#include <atomic>
#include <cstdlib>
#include <new>

#include "backend_util.h"
#include "graph_test_util.h"
#include "mycel/pipeline/pipeline.h"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<size_t> g_news{0};
}  // namespace

// Replacements for the whole binary; they count only while a test asks (g_counting). new is
// malloc here, so free is the matching release (GCC cannot see that through the replacement).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t n) {
  if (g_counting.load(std::memory_order_relaxed)) g_news.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void* operator new(std::size_t n, std::align_val_t al) {
  if (g_counting.load(std::memory_order_relaxed)) g_news.fetch_add(1, std::memory_order_relaxed);
  size_t a = static_cast<size_t>(al);
  if (void* p = std::aligned_alloc(a, (n + a - 1) / a * a)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t al) { return operator new(n, al); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace mycel::backend::testing {
namespace {

using ir::testing::ints;
using ir::testing::uop;

/// Heap allocations of fn(), counted on every thread (OpenMP workers included).
template <class F>
size_t heap_allocs(F&& fn) {
  g_news = 0;
  g_counting = true;
  fn();
  g_counting = false;
  return g_news.load();
}

// conv(1->6, 5x5, bias) -> relu -> max_pool 2x2 -> flatten -> dense(6*6*6 -> 10) -> softmax CE, and
// the gradient w.r.t. the four weights: LeNet's kernels, forward and backward.
struct ConvNetStep {
  ir::Module m;
  pipeline::Step step;
  std::vector<Tensor> inputs{randn({8, 1, 16, 16}, 1), Tensor::empty({8}, DType::int32)};

  ConvNetStep() {
    for (int i = 0; i < 8; ++i) inputs[1].data<int32_t>()[i] = i;
    FuncGraph* g = m.add_graph("loss");
    NodePtr x = g->add_parameter("x"), y = g->add_parameter("y");
    NodePtr w = weight(g, "conv.weight", randn({6, 1, 5, 5}, 2));
    NodePtr cb = weight(g, "conv.bias", randn({6}, 5));
    NodePtr fw = weight(g, "fc.weight", randn({10, 216}, 3));
    NodePtr fb = weight(g, "fc.bias", randn({10}, 4));
    NodePtr h = uop(g, "relu", {uop(g, "conv2d", {x, w, cb})});
    h = uop(g, "max_pool2d", {h}, {{"kernel_size", ints(g, {2})}, {"strides", ints(g, {2})}});
    h = uop(g, "reshape", {h}, {{"shape", ints(g, {8, 216})}});
    NodePtr logits = uop(g, "dense", {h, fw, fb});
    g->set_output(uop(g, "sparse_softmax_cross_entropy_with_logits", {logits, y}));
    ad::GradSpec spec;
    spec.with_weights = true;
    spec.return_value = true;
    spec.weight_params = {2, 3, 4, 5};
    std::vector<ir::AbstractPtr> abs{tensor_abs({8, 1, 16, 16}), tensor_abs({8}, DType::int32)};
    step = pipeline::compile_step(g, abs, &spec, pipeline::Options::from_env());
  }
};

TEST(BackendHeap, WarmTrainingStepHeapAllocations) {
  ConvNetStep net;
  backend::Program& p = *net.step.program;
  for (int i = 0; i < 3; ++i) p.run(net.inputs);  // warm-up: plans, primitives, scratch buffers
  std::vector<Tensor> outs;
  size_t tensor_allocs = allocator_stats().num_allocs;
  size_t news = heap_allocs([&] { outs = p.run(net.inputs); });
  tensor_allocs = allocator_stats().num_allocs - tensor_allocs;
  ASSERT_EQ(outs.size(), 5u);  // the loss and four weight gradients
  std::cout << "[report] warm training step: " << news << " operator new calls, " << tensor_allocs
            << " tensor allocator calls, " << p.stats().num_kernel_launches << " kernel launches\n";
  EXPECT_EQ(tensor_allocs, outs.size());  // the tensor allocator: only the returned outputs
  // Not yet 0 (issue 19 item 4 remains open): measured 295 for 15 launches. Each oneDNN call
  // builds its string cache key (dnnl_util::key), dnnl::memory wrappers and an argument map per
  // call, and oneDNN's own execute allocates its execution context; shape helpers (matmul_geom,
  // plan_reduce, run_fused_elementwise) build small vectors. Prepared per-instruction state
  // (primitives, memory objects, geometry) made at plan time would remove all but oneDNN's.
  // This bound only guards against regressions.
  EXPECT_LE(news, 20 * p.stats().num_kernel_launches);
}

}  // namespace
}  // namespace mycel::backend::testing
