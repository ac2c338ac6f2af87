// Helpers for backend tests: resolved, monomorphic IR built by hand (abstracts set on every
// node), random inputs, exact comparison with eager results.
#pragma once
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "mycel/backend/program.h"
#include "mycel/ir/func_graph.h"

namespace mycel::backend::testing {

using namespace mycel::ir;

inline AbstractPtr tensor_abs(Shape s, DType d = DType::float32) {
  return std::make_shared<AbstractTensor>(std::move(s), d);
}
inline AbstractPtr scalar_abs(ValueKind k) { return std::make_shared<AbstractScalar>(k, nullptr); }

inline NodePtr param(FuncGraph* g, const std::string& name, AbstractPtr a) {
  NodePtr p = g->add_parameter(name);
  p->set_abstract(std::move(a));
  return p;
}

inline NodePtr weight(FuncGraph* g, const std::string& name, Tensor t) {
  NodePtr p = g->add_parameter(name);
  as_parameter(p)->bind(t);
  p->set_abstract(tensor_abs(t.shape(), t.dtype()));
  return p;
}

/// A resolved op call whose abstract comes from the op's infer; kDynamic dims are inferred with
/// a sentinel size and mapped back, so the abstract keeps "?" where the inputs had it.
inline NodePtr op(FuncGraph* g, const std::string& name, std::vector<NodePtr> args,
                  std::map<std::string, AttrValue> attrs = {}) {
  constexpr int64_t kSentinel = 7919;
  const OpDef& d = Registry::get().at(name);
  Attrs at = make_attrs(d, attrs);
  std::vector<TensorMeta> metas;
  std::vector<const TensorMeta*> ptrs;
  metas.reserve(args.size());
  for (const NodePtr& a : args) {
    auto* t = dynamic_cast<const AbstractTensor*>(a->abstract().get());
    if (!t) {
      ptrs.push_back(nullptr);
      continue;
    }
    Shape s = t->shape();
    for (auto& x : s)
      if (x == kDynamic) x = kSentinel;
    metas.push_back({s, t->dtype()});
    ptrs.push_back(&metas.back());
  }
  auto outs = d.infer(InferContext{d, ptrs, at});
  std::vector<AbstractPtr> abs;
  for (auto& m : outs) {
    for (auto& x : m.shape)
      if (x == kSentinel) x = kDynamic;
    abs.push_back(tensor_abs(m.shape, m.dtype));
  }
  args.insert(args.begin(), g->constant(op_value(&d, at)));
  NodePtr n = g->apply(std::move(args));
  n->set_abstract(abs.size() == 1 ? abs[0] : std::make_shared<AbstractTuple>(abs));
  return n;
}

inline NodePtr prim(FuncGraph* g, Prim p, std::vector<NodePtr> args, AbstractPtr a) {
  NodePtr n = g->prim(p, std::move(args));
  n->set_abstract(std::move(a));
  return n;
}

inline NodePtr call(FuncGraph* g, std::vector<NodePtr> inputs, AbstractPtr a) {
  NodePtr n = g->apply(std::move(inputs));
  n->set_abstract(std::move(a));
  return n;
}

inline NodePtr gconst(FuncGraph* g, FuncGraph* callee) { return g->constant(graph_value(callee)); }

inline Tensor randn(Shape s, uint32_t seed, DType d = DType::float32) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> dist;
  Tensor t = Tensor::empty(s, DType::float64);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = dist(rng);
  return t.to(d);
}

inline void expect_same(const Tensor& a, const Tensor& b) {
  ASSERT_TRUE(a.defined() && b.defined());
  ASSERT_EQ(a.shape(), b.shape());
  ASSERT_EQ(a.dtype(), b.dtype());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.nbytes()), 0) << "contents differ";
}

inline std::vector<Tensor> eager(const std::string& name, std::vector<Tensor> in,
                                 const std::map<std::string, AttrValue>& attrs = {}) {
  return call_op(name, std::move(in), attrs);
}

}  // namespace mycel::backend::testing
