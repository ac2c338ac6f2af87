#include "backend_util.h"
namespace mycel::backend::testing {
TEST(Probe, KernelAllocs) {
  auto probe = [](const std::string& name, std::vector<Tensor> in, std::map<std::string, AttrValue> at = {}) {
    const OpDef& d = Registry::get().at(name);
    Attrs a = make_attrs(d, at);
    auto outs = call_op(d, in, a);
    for (int rep = 0; rep < 2; ++rep) {
      auto s0 = allocator_stats();
      d.kernel(KernelContext{d, in, outs, a});
      auto s1 = allocator_stats();
      printf("%-12s rep%d allocs=%zu in_use_delta=%zd\n", name.c_str(), rep, s1.num_allocs - s0.num_allocs,
             (ssize_t)s1.bytes_in_use - (ssize_t)s0.bytes_in_use);
    }
  };
  probe("matmul", {randn({3, 8}, 1), randn({8, 4}, 2)});
  probe("matmul", {randn({5, 8}, 1), randn({8, 16}, 2)});
  probe("matmul", {randn({64, 256}, 1), randn({256, 128}, 2)});
  probe("softmax", {randn({12}, 1)});
  probe("softmax", {randn({5, 4}, 1)});
  probe("softmax", {randn({64, 10}, 1)});
  probe("add", {randn({3, 4}, 1), randn({4}, 2)});
  probe("relu", {randn({3, 4}, 1)});
  probe("exp", {randn({3, 4}, 1).to(DType::int32)});
  probe("sum", {randn({3, 4}, 1)});
}
}
