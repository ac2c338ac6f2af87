// The registry traits analysis and the backend read instead of op names (ops/registry.h
// PyOperator, FillTrait, BackendTraits, placement, record_only), checked against what the ops
// actually compute.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>

#include "mycel/kernels/cpu/fused_elementwise.h"
#include "mycel/ops/registry.h"
#include "mycel/parallel/communicator.h"

namespace mycel {
namespace {

Tensor random_f32(int64_t n, uint32_t seed, bool positive) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(positive ? 0.1f : -3.f, 3.f);
  Tensor t = Tensor::empty({n}, DType::float32);
  for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = d(gen);
  return t;
}

// An op whose trait says it maps 0 to 0 does so (the layout step relies on it for the zero
// padding channels of blocked tensors).
TEST(RegistryTraits, KeepsZeroOpsMapZerosToZero) {
  int checked = 0;
  for (const OpDef* op : Registry::get().ops()) {
    if (!op->backend.keeps_zero) continue;
    EXPECT_TRUE(op->elementwise) << op->name;
    std::vector<Tensor> ins(op->inputs.size(), Tensor::zeros({8}, DType::float32));
    Tensor y = call_op(*op, ins, make_attrs(*op, std::map<std::string, AttrValue>{}))[0];
    for (int64_t i = 0; i < y.numel(); ++i) EXPECT_EQ(y.item_as_double(i), 0.0) << op->name;
    ++checked;
  }
  EXPECT_EQ(checked, 9);  // add sub mul maximum minimum neg abs relu square
}

// Each op that names a fused-chain step computes, in one-step chains, exactly what its own
// kernel computes (bit for bit), with the step's arity; and no two ops claim one step.
TEST(RegistryTraits, ElementwiseStepsEqualTheirOpsKernels) {
  std::set<int> steps;
  for (const OpDef* op : Registry::get().ops()) {
    if (!op->backend.fuses_elementwise) continue;
    const cpu::EwOp e = op->backend.ew;
    EXPECT_TRUE(steps.insert(static_cast<int>(e)).second) << op->name;
    ASSERT_EQ(static_cast<int>(op->inputs.size()), cpu::ew_arity(e)) << op->name;
    EXPECT_STREQ(cpu::ew_op_name(e), op->name.c_str());
    if (e == cpu::EwOp::kCast || e == cpu::EwOp::kGreater || e == cpu::EwOp::kLess)
      continue;  // bool sides
    const bool positive =
        e == cpu::EwOp::kSqrt || e == cpu::EwOp::kDiv || e == cpu::EwOp::kReciprocal;
    std::vector<Tensor> ins;
    for (size_t k = 0; k < op->inputs.size(); ++k)
      ins.push_back(random_f32(1000, static_cast<uint32_t>(7 + k), positive));
    Tensor want = call_op(*op, ins, make_attrs(*op, std::map<std::string, AttrValue>{}))[0];
    cpu::EwProgram p;
    p.num_inputs = static_cast<int>(ins.size());
    p.steps.push_back({e, 0, ins.size() > 1 ? 1 : 0});
    Tensor got = Tensor::empty({1000}, DType::float32);
    cpu::run_fused_elementwise(p, ins, got);
    EXPECT_EQ(std::memcmp(got.data<float>(), want.data<float>(), 1000 * sizeof(float)), 0)
        << op->name;
  }
  EXPECT_EQ(steps.size(), 19u);  // every step of the chain kernel has its op
}

// Post-op producers and consumers, windows and Python operators sit on the ops one expects.
TEST(RegistryTraits, BackendAndAnalysisTraitsAreWhereExpected) {
  const Registry& r = Registry::get();
  EXPECT_EQ(r.at("conv2d").backend.accepts_post_ops, kPostRelu | kPostRelu6 | kPostChannelAffine);
  EXPECT_EQ(r.at("dense").backend.accepts_post_ops, kPostRelu | kPostAddRow | kPostChannelAffine);
  EXPECT_EQ(r.at("matmul").backend.accepts_post_ops, kPostRelu | kPostAddRow);
  EXPECT_EQ(r.at("relu").backend.as_post_op, kPostRelu);
  EXPECT_EQ(r.at("relu6").backend.as_post_op, kPostRelu6);
  EXPECT_EQ(r.at("add").backend.as_post_op, kPostAddRow);
  EXPECT_EQ(r.at("batch_norm").backend.as_post_op, kPostChannelAffine);
  EXPECT_EQ(r.at("max_pool2d").backend.window, WindowKind::kMaxPool);
  EXPECT_EQ(r.at("avg_pool2d").backend.window, WindowKind::kAvgPool);
  EXPECT_TRUE(r.at("conv2d").backend.absorbs_max_pool);
  EXPECT_EQ(r.at("sum").backend.reduce, ReduceFusion::kSum);
  EXPECT_EQ(r.at("mean").backend.reduce, ReduceFusion::kMean);
  EXPECT_EQ(r.at("max").backend.reduce, ReduceFusion::kMax);
  EXPECT_EQ(r.at("min").backend.reduce, ReduceFusion::kMin);
  EXPECT_EQ(r.at("prod").backend.reduce, ReduceFusion::kNone);
  EXPECT_EQ(r.at("strided_slice").py_operator, PyOperator::kGetItem);
  EXPECT_EQ(r.at("ones").fill.value, 1.0);
  EXPECT_EQ(r.at("fill").fill.value_attr, "value");
  EXPECT_EQ(r.at("reshape").dynamic_shape_attr, "shape");
  int operators = 0, fills = 0;
  for (const OpDef* op : r.ops()) {
    operators += op->py_operator != PyOperator::kNone;
    fills += op->fill.on;
    if (op->fill.on) {
      EXPECT_GE(op->attr_index("shape"), 0) << op->name;
    }
    if (!op->dynamic_shape_attr.empty()) {
      EXPECT_GE(op->attr_index(op->dynamic_shape_attr), 0) << op->name;
    }
  }
  EXPECT_EQ(operators, 14);  // + - * / // % ** == != < <= > >= and t[...]
  EXPECT_EQ(fills, 3);
}

// Record-only ops are the summary ops: effects (never dropped) that are not collectives, whose
// output is the placeholder int32 [1] whatever they record, and that have no gradient.
TEST(RegistryTraits, RecordOnlyOpsAreEffectsWithAPlaceholderOutput) {
  std::set<std::string> names;
  for (const OpDef* op : Registry::get().ops()) {
    if (!op->record_only) continue;
    names.insert(op->name);
    EXPECT_TRUE(op->effect) << op->name;
    EXPECT_EQ(op->grad, "none") << op->name;
    Tensor x = op->name == "image_summary"    ? Tensor::zeros({2, 3, 4, 4}, DType::float32)
               : op->name == "scalar_summary" ? Tensor::zeros({}, DType::float32)
                                              : random_f32(5, 3, false);
    std::map<std::string, AttrValue> name{{"name", std::string("t")}};
    Tensor y = call_op(*op, {x}, make_attrs(*op, name))[0];
    EXPECT_EQ(y.dtype(), DType::int32) << op->name;
    EXPECT_EQ(y.shape(), (Shape{1})) << op->name;
  }
  EXPECT_EQ(names, (std::set<std::string>{"scalar_summary", "image_summary", "histogram_summary",
                                          "tensor_summary"}));
}

// The registry refuses a record-only op that is not an effect: the optimizer would drop it.
TEST(RegistryTraits, RecordOnlyWithoutEffectIsRefused) {
  const OpDef& like = Registry::get().at("tensor_summary");
  OpDef d = make_op("record_only_without_effect_test", "RecordOnlyWithoutEffectTest", "test",
                    {{"value"}}, {}, like.infer, like.kernel, all_dtypes(), "none");
  d.record_only = true;
  EXPECT_THROW(Registry::get().add(d), RuntimeError);
  EXPECT_EQ(Registry::get().find(d.name), nullptr);
}

// Only the split AllReduce is placed: its start early, its wait late. Both are elementwise
// effects (the planner writes each output over its input; nothing merges or drops them), and the
// wait completes what the start began.
TEST(RegistryTraits, PlacementIsOnTheSplitAllReduceOnly) {
  std::map<std::string, Placement> placed;
  for (const OpDef* op : Registry::get().ops())
    if (op->placement != Placement::kAny) placed[op->name] = op->placement;
  EXPECT_EQ(placed, (std::map<std::string, Placement>{{"all_reduce_start", Placement::kEarly},
                                                      {"all_reduce_wait", Placement::kLate}}));
  const OpDef& start = Registry::get().at("all_reduce_start");
  const OpDef& wait = Registry::get().at("all_reduce_wait");
  for (const OpDef* op : {&start, &wait}) {
    EXPECT_TRUE(op->effect) << op->name;
    EXPECT_TRUE(op->elementwise) << op->name;
    EXPECT_FALSE(op->record_only) << op->name;
  }
  // In a world of one the pair is a copy: what the wait returns is the start's input.
  parallel::init();
  Tensor x = random_f32(15, 11, false);
  Tensor buf = call_op(start, {x}, make_attrs(start, std::map<std::string, AttrValue>{}))[0];
  Tensor y = call_op(wait, {buf}, make_attrs(wait, std::map<std::string, AttrValue>{}))[0];
  ASSERT_EQ(y.shape(), x.shape());
  EXPECT_EQ(std::memcmp(y.data<float>(), x.data<float>(), 15 * sizeof(float)), 0);
}

}  // namespace
}  // namespace mycel
