// The PyNative recorder and gradient cache without Python: eager ops recorded by hand (as the
// eager-op hook does), the recorded IR as text, structural keys, and the compiled gradient
// against the closed form.
#include <gtest/gtest.h>

#include "mycel/ir/printer.h"
#include "mycel/pynative/grad_cache.h"

namespace mycel::pynative {
namespace {

Tensor vec(std::vector<double> v) {
  Tensor t = Tensor::empty({static_cast<int64_t>(v.size())}, DType::float64);
  for (size_t i = 0; i < v.size(); ++i) t.data<double>()[i] = v[i];
  return t;
}

/// Runs op eagerly and records it, like bind_ops.cc's hook; returns the (single) output.
Tensor run(Recorder& r, const std::string& name, std::vector<RecordedArg> in,
           const std::map<std::string, AttrValue>& attrs = {}) {
  const OpDef& op = Registry::get().at(name);
  Attrs a = make_attrs(op, attrs);
  std::vector<Tensor> ts;
  for (const RecordedArg& x : in) ts.push_back(x.tensor);
  std::vector<Tensor> outs = call_op(op, ts, a);
  r.record_op(op, a, in, outs);
  return outs[0];
}

/// f(x) = sum(x * x * c) with c captured (not an argument), recorded for given x and c.
Recording record_f(const Tensor& x, const Tensor& c, bool keep_dims = false) {
  Recorder r("f");
  r.add_argument(x, "x");
  r.activate();
  Tensor y = run(r, "mul", {{x, nullptr}, {x, nullptr}});
  Tensor z = run(r, "mul", {{y, nullptr}, {c, nullptr}});
  Tensor s = run(r, "sum", {{z, nullptr}}, {{"keep_dims", keep_dims}});
  return r.finish(r.input({s, nullptr}));
}

TEST(PynativeRecorder, RecordsOpsWithCapturedInputsAfterArguments) {
  Recording rec = record_f(vec({1, 2}), vec({3, 4}));
  EXPECT_EQ(ir::print(*rec.graph),
            "graph @f(%x, %captured) {\n"
            "  %1 = mul(%x, %x)\n"
            "  %2 = mul(%1, %captured)\n"
            "  %3 = sum(%2)\n"
            "  return %3\n"
            "}\n");
  EXPECT_EQ(rec.num_arguments, 1u);
  ASSERT_EQ(rec.captured.size(), 1u);
  EXPECT_EQ(rec.captured[0].item_as_double(1), 4.0);
  EXPECT_EQ(Recorder::current(), nullptr);  // finish deactivates
}

TEST(PynativeRecorder, KeyDependsOnStructureShapesAndAttrsNotValues) {
  std::string k1 = record_f(vec({1, 2}), vec({3, 4})).key;
  EXPECT_EQ(k1, record_f(vec({5, 6}), vec({7, 8})).key);        // new values: same program
  EXPECT_NE(k1, record_f(vec({1, 2, 3}), vec({3, 4, 5})).key);  // new shapes
  EXPECT_NE(k1, record_f(vec({1, 2}), vec({3, 4}), true).key);  // new attribute
}

TEST(PynativeRecorder, NestedActivationIsRejected) {
  Recorder a("a"), b("b");
  a.activate();
  EXPECT_THROW(b.activate(), NotSupported);
  a.deactivate();
  EXPECT_EQ(Recorder::current(), nullptr);
}

TEST(PynativeGradCache, CompilesOncePerStructureAndMatchesClosedForm) {
  ad::GradSpec spec;
  spec.positions = {0};
  GradCache cache(spec);
  for (double base : {1.0, 2.0, 3.0}) {
    Tensor x = vec({base, -base}), c = vec({0.5, 2.0});
    Recording rec = record_f(x, c);
    CompiledGrad& g = cache.get(rec, nullptr);
    std::vector<Tensor> out = cache.run(g, rec, {x}, {});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_DOUBLE_EQ(out[0].item_as_double(0), 2 * base * 0.5);  // d/dx sum(x*x*c) = 2xc
    EXPECT_DOUBLE_EQ(out[0].item_as_double(1), -2 * base * 2.0);
  }
  EXPECT_EQ(cache.compiles(), 1);
  EXPECT_EQ(cache.hits(), 2);
}

TEST(PynativeGradCache, PositionOutOfRangeNamesIt) {
  ad::GradSpec spec;
  spec.positions = {1};
  GradCache cache(spec);
  Recording rec = record_f(vec({1}), vec({2}));
  EXPECT_THROW(cache.get(rec, nullptr), ValueError);
}

}  // namespace
}  // namespace mycel::pynative

namespace mycel::pynative {
namespace {

// The pipeline on its own (graph mode's path, no Python): a recorded graph compiled forward and
// as its gradient, one module per step, and the step cache's bound.
TEST(Pipeline, CompilesForwardAndGradientOfOneGraph) {
  Tensor x = vec({1.0, -2.0}), c = vec({0.5, 2.0});
  Recording rec = record_f(x, c);
  pipeline::Options o;
  pipeline::Step fwd = pipeline::compile_step(rec.graph, rec.input_abstracts, nullptr, o);
  std::vector<Tensor> y = fwd.program->run({x, c});
  EXPECT_DOUBLE_EQ(y[0].item_as_double(0), 1 * 1 * 0.5 + 2 * 2 * 2.0);
  EXPECT_NE(fwd.graph->module(), rec.graph->module());  // the step owns its graphs
  ad::GradSpec spec;
  spec.positions = {0};
  pipeline::Step grad = pipeline::compile_step(rec.graph, rec.input_abstracts, &spec, o);
  std::vector<Tensor> g = grad.program->run({x, c});
  EXPECT_DOUBLE_EQ(g[0].item_as_double(0), 2 * 1.0 * 0.5);
  EXPECT_DOUBLE_EQ(g[0].item_as_double(1), 2 * -2.0 * 2.0);
}

TEST(Pipeline, StepCacheEvictsLeastRecentlyUsed) {
  Recording rec = record_f(vec({1.0}), vec({2.0}));
  pipeline::StepCache cache(2);
  auto step = [&] { return pipeline::compile_step(rec.graph, rec.input_abstracts, nullptr, {}); };
  cache.insert("a", step());
  cache.insert("b", step());
  ASSERT_NE(cache.find("a"), nullptr);  // a is now the most recent
  cache.insert("c", step());            // evicts b
  EXPECT_EQ(cache.find("b"), nullptr);
  EXPECT_NE(cache.find("a"), nullptr);
  EXPECT_NE(cache.find("c"), nullptr);
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.evictions(), 1);
}

}  // namespace
}  // namespace mycel::pynative
