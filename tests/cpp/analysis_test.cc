// Analysis: specialization of hand-built IR in the canonical unresolved form. Expected IR text
// and eager-mode dtypes are the references.
#include "graph_test_util.h"
#include "mycel/ir/raised.h"

namespace mycel::ir {
namespace {
using namespace testing;
using analysis::specialize;

TEST(Analysis, ResolvesOpsAndPropagatesDynamicDims) {
  // def f(x, w, b): return (x @ w + b).reshape(-1, 4)
  Module m;
  FuncGraph* f = m.add_graph("f");
  NodePtr x = f->add_parameter("x"), w = f->add_parameter("w"), b = f->add_parameter("b");
  NodePtr mm = uop(f, "matmul", {x, w}, {{"transpose_b", f->constant(boolean(true))}});
  NodePtr s = uop(f, "add", {mm, b});
  f->set_output(uop(f, "reshape", {s}, {{"shape", ints(f, {-1, 4})}}));
  const std::string before = text(f);
  FuncGraph* g = specialize(m, f, {tensor({kDynamic, 3}), tensor({8, 3}), tensor({8})});
  EXPECT_EQ(text(g),
            "graph @f.1(%x: f32[?, 3], %w: f32[8, 3], %b: f32[8]) {\n"
            "  %1: f32[?, 8] = matmul[transpose_b=True](%x, %w)\n"
            "  %2: f32[?, 8] = add(%1, %b)\n"
            "  %3: f32[?, 4] = reshape[shape=(-1, 4)](%2)\n"
            "  return %3\n"
            "}\n");
  EXPECT_EQ(text(f), before) << "the input graph must stay untouched";
  EXPECT_TRUE(check(*g).empty());
}

TEST(Analysis, InferErrorCarriesTheUserSourceLine) {
  Module m;
  FuncGraph* f = m.add_graph("f");
  NodePtr x = f->add_parameter("x"), w = f->add_parameter("w");
  f->set_output(uop(f, "matmul", {x, w}, {}, loc(7, "y = ops.matmul(x, w)")));
  try {
    specialize(m, f, {tensor({2, 3}), tensor({4, 5})});
    FAIL() << "expected a ShapeError";
  } catch (const ShapeError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("[matmul]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("\nmodel.py:7: y = ops.matmul(x, w)"), std::string::npos) << msg;
  }
}

TEST(Analysis, DynamicDimsInInferErrorsPrintAsQuestionMarks) {
  Module m;
  FuncGraph* f = m.add_graph("f");
  NodePtr x = f->add_parameter("x"), w = f->add_parameter("w");
  f->set_output(uop(f, "matmul", {x, w}, {}, loc(3, "y = x @ w")));
  try {
    specialize(m, f, {tensor({kDynamic, 3}), tensor({4, 5})});
    FAIL();
  } catch (const ShapeError& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.find("5040"), std::string::npos) << msg;  // the placeholder
    EXPECT_NE(msg.find("?"), std::string::npos) << msg;
  }
}

TEST(Analysis, NonConstantAttributeIsAnErrorNamingOpAttributeAndLine) {
  // def f(x, n): return x.reshape(n)   with n an int known only at run time
  Module m;
  FuncGraph* f = m.add_graph("f");
  NodePtr x = f->add_parameter("x"), n = f->add_parameter("n");
  f->set_output(uop(f, "reshape", {x}, {{"shape", n}}, loc(4, "return x.reshape(n)")));
  try {
    specialize(m, f, {tensor({6}), scalar(ValueKind::kInt)});
    FAIL();
  } catch (const TypeError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("[reshape] attribute 'shape' must be a compile-time constant"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("model.py:4: return x.reshape(n)"), std::string::npos) << msg;
  }
  // The same graph with a constant n resolves.
  FuncGraph* g =
      specialize(m, f, {tensor({6}), scalar(ValueKind::kTuple, tuple({integer(2), integer(3)}))});
  EXPECT_NE(text(g).find("reshape[shape=(2, 3)](%x)"), std::string::npos) << text(g);
}

// Eager dtypes of `op(tensor, scalar)` measured with mycel.ops in PYNATIVE mode.
struct WeakCase {
  const char* op;
  DType tensor;
  ValuePtr scalar;
  DType eager;
};

TEST(Analysis, WeakScalarsGetTheEagerDtype) {
  const std::vector<WeakCase> cases = {
      {"add", DType::bool_, boolean(true), DType::bool_},
      {"add", DType::bool_, integer(3), DType::int64},
      {"add", DType::bool_, floating(2.5), DType::float32},
      {"div", DType::bool_, integer(3), DType::float64},
      {"add", DType::int8, integer(3), DType::int8},
      {"mul", DType::int32, floating(2.5), DType::float32},
      {"div", DType::int32, integer(3), DType::float64},
      {"maximum", DType::int8, floating(2.5), DType::float32},
      {"add", DType::float16, floating(2.5), DType::float16},
      {"mul", DType::float16, integer(3), DType::float16},
      {"add", DType::float32, boolean(true), DType::float32},
  };
  for (const auto& c : cases)
    for (bool scalar_first : {false, true}) {
      Module m;
      FuncGraph* f = m.add_graph("f");
      NodePtr x = f->add_parameter("x");
      NodePtr s = f->constant(c.scalar);
      f->set_output(
          uop(f, c.op, scalar_first ? std::vector<NodePtr>{s, x} : std::vector<NodePtr>{x, s}));
      FuncGraph* g = specialize(m, f, {tensor({2}, c.tensor)});
      auto* out = static_cast<const AbstractTensor*>(g->output()->abstract().get());
      EXPECT_EQ(out->dtype(), c.eager)
          << c.op << " " << dtype_name(c.tensor) << " " << c.scalar->repr();
      // Every input the kernel sees has one dtype (promote_inputs), as in eager mode.
      auto* a = as_apply(g->output());
      auto* i0 = static_cast<const AbstractTensor*>(a->arg(0)->abstract().get());
      auto* i1 = static_cast<const AbstractTensor*>(a->arg(1)->abstract().get());
      EXPECT_EQ(i0->dtype(), i1->dtype()) << text(g);
    }
}

TEST(Analysis, WeakScalarIrShowsConversionsAndCasts) {
  Module m;
  FuncGraph* f = m.add_graph("f");
  NodePtr x = f->add_parameter("x");
  f->set_output(uop(f, "mul", {x, f->constant(floating(2.5))}));
  FuncGraph* g = specialize(m, f, {tensor({2}, DType::int32)});
  EXPECT_EQ(text(g),
            "graph @f.1(%x: i32[2]) {\n"
            "  %1: f32[2] = cast[dtype=float32](%x)\n"
            "  %2: f32[] = scalar_to_tensor(2.5, float32)\n"
            "  %3: f32[2] = mul(%1, %2)\n"
            "  return %3\n"
            "}\n");
}

TEST(Analysis, ConstantConditionSwitchPicksItsBranch) {
  // def f(x, flag): return x * 2 if flag else -x     (flag a compile-time bool)
  Module m;
  FuncGraph* f = m.add_graph("f");
  NodePtr x = f->add_parameter("x"), flag = f->add_parameter("flag");
  FuncGraph* t = m.add_graph("f_true", f);
  t->set_output(uop(t, "mul", {x, t->constant(integer(2))}));
  FuncGraph* e = m.add_graph("f_false", f);
  e->set_output(uop(e, "neg", {x}));
  NodePtr sw =
      f->prim(Prim::kSwitch, {flag, f->constant(graph_value(t)), f->constant(graph_value(e))});
  f->set_output(f->apply({sw}));
  FuncGraph* g = specialize(m, f, {tensor({3}), scalar(ValueKind::kBool, boolean(true))});
  EXPECT_EQ(text(g),
            "graph @f.1(%x: f32[3], %flag: bool=True) {\n"
            "  %1: f32[3] = @f_true.1()\n"
            "  return %1\n"
            "}\n"
            "\n"
            "graph @f_true.1() {  # in @f.1\n"
            "  %2: f32[] = scalar_to_tensor(2, float32)\n"
            "  %3: f32[3] = mul(%x, %2)\n"
            "  return %3\n"
            "}\n");
  EXPECT_TRUE(check(*g).empty()) << text(g);
}

TEST(Analysis, TensorConditionJoinsBranchesAndRejectsMismatches) {
  // if c: y = x.reshape(2, 3) else: y = x.reshape(3, 2)  -> f32[?, ?]; dtype mismatch is an error
  for (bool mismatch : {false, true}) {
    Module m;
    FuncGraph* f = m.add_graph("f");
    NodePtr x = f->add_parameter("x"), c = f->add_parameter("c");
    FuncGraph* t = m.add_graph("t", f);
    t->set_output(uop(t, "reshape", {x}, {{"shape", ints(t, {2, 3})}}));
    FuncGraph* e = m.add_graph("e", f);
    NodePtr r = uop(e, "reshape", {x}, {{"shape", ints(e, {3, 2})}});
    e->set_output(
        mismatch ? uop(e, "cast", {r}, {{"dtype", e->constant(dtype_value(DType::float64))}}) : r);
    NodePtr sw =
        f->prim(Prim::kSwitch, {c, f->constant(graph_value(t)), f->constant(graph_value(e))},
                loc(5, "if c:"));
    f->set_output(f->apply({sw}, loc(5, "if c:")));
    if (!mismatch) {
      FuncGraph* g = specialize(m, f, {tensor({6}), tensor({}, DType::bool_)});
      EXPECT_EQ(g->output()->abstract()->repr(), "f32[?, ?]");
      EXPECT_NE(text(g).find("switch(%c, @t.1, @e.1)"), std::string::npos) << text(g);
    } else {
      try {
        specialize(m, f, {tensor({6}), tensor({}, DType::bool_)});
        FAIL();
      } catch (const TypeError& err) {
        std::string msg = err.what();
        EXPECT_NE(msg.find("f32[2, 3] and f64[3, 2]"), std::string::npos) << msg;
        EXPECT_NE(msg.find("model.py:5: if c:"), std::string::npos) << msg;
      }
    }
  }
}

// An exception object as the frontend holds one (a Python object): only its identity matters here.
struct TestException : Value {
  TestException() : Value(ValueKind::kExternal) {}
  std::string repr() const override { return "py:ValueError('bad')"; }
  bool equals(const Value& o) const override { return &o == this; }
  size_t hash() const override { return 7; }
};

TEST(Analysis, RaiseIsRaisedOnCompileTimePathsAndKeptUnderRunTimeConditions) {
  // def f(x, c): if c: raise ValueError('bad')   else: return -x
  auto exc = std::make_shared<TestException>();
  for (bool runtime : {true, false}) {
    Module m;
    FuncGraph* f = m.add_graph("f");
    NodePtr x = f->add_parameter("x"), c = f->add_parameter("c");
    FuncGraph* t = m.add_graph("f_raise", f);
    t->set_output(t->prim(Prim::kRaise, {t->constant(exc)}, loc(3, "raise ValueError('bad')")));
    FuncGraph* e = m.add_graph("f_else", f);
    e->set_output(uop(e, "neg", {x}));
    NodePtr sw =
        f->prim(Prim::kSwitch, {c, f->constant(graph_value(t)), f->constant(graph_value(e))});
    f->set_output(f->apply({sw}));
    AbstractPtr cond = runtime ? tensor({}, DType::bool_) : scalar(ValueKind::kBool, boolean(true));
    if (runtime) {  // joined away: the other branch gives the type; the raise stays for run time
      FuncGraph* g = specialize(m, f, {tensor({3}), cond});
      EXPECT_EQ(g->output()->abstract()->repr(), "f32[3]");
      EXPECT_NE(text(g).find("raise(py:ValueError('bad'))"), std::string::npos) << text(g);
      continue;
    }
    try {
      specialize(m, f, {tensor({3}), cond});
      FAIL() << "expected a RaisedError";
    } catch (const RaisedError& err) {
      EXPECT_EQ(err.exception, exc);
      EXPECT_EQ(err.loc.line, 3);
    }
  }
}

// def f(x, n): return f(x * 2, n - 1) if n > 0 else x      (n a tensor: data-dependent)
FuncGraph* build_recursive(Module& m) {
  FuncGraph* f = m.add_graph("f");
  NodePtr x = f->add_parameter("x"), n = f->add_parameter("n");
  FuncGraph* t = m.add_graph("f_then", f);
  t->set_output(call(
      t, f,
      {uop(t, "mul", {x, t->constant(integer(2))}), uop(t, "sub", {n, t->constant(integer(1))})}));
  FuncGraph* e = m.add_graph("f_else", f);
  e->set_output(x);
  NodePtr c = uop(f, "greater", {n, f->constant(integer(0))});
  NodePtr sw =
      f->prim(Prim::kSwitch, {c, f->constant(graph_value(t)), f->constant(graph_value(e))});
  f->set_output(f->apply({sw}));
  return f;
}

TEST(Analysis, RecursionOnATensorCounterStaysRecursive) {
  Module m;
  FuncGraph* f = build_recursive(m);
  FuncGraph* g = specialize(m, f, {tensor({3}), tensor({}, DType::int64)});
  const std::string s = text(g);
  EXPECT_EQ(s,
            "graph @f.1(%x: f32[3], %n: i64[]) {\n"
            "  %1: i64[] = scalar_to_tensor(0, int64)\n"
            "  %2: bool[] = greater(%n, %1)\n"
            "  %3: fn:(@f_then.2, @f_else.2) = switch(%2, @f_then.2, @f_else.2)\n"
            "  %4: f32[3] = %3()\n"
            "  return %4\n"
            "}\n"
            "\n"
            "graph @f_then.2() {  # in @f.1\n"
            "  %5: f32[] = scalar_to_tensor(2, float32)\n"
            "  %6: f32[3] = mul(%x, %5)\n"
            "  %7: i64[] = scalar_to_tensor(1, int64)\n"
            "  %8: i64[] = sub(%n, %7)\n"
            "  %9: f32[3] = @f.1(%6, %8)\n"
            "  return %9\n"
            "}\n"
            "\n"
            "graph @f_else.2() {  # in @f.1\n"
            "  return %x\n"
            "}\n");
  EXPECT_TRUE(check(*g).empty());
}

TEST(Analysis, LoopCounterConstantIsWidenedUnderARunTimeCondition) {
  // def loop(x, i): return loop(x * 2, i + 1) if x.sum() < 100 else x     called with i = 0
  Module m;
  FuncGraph* f = m.add_graph("loop");
  NodePtr x = f->add_parameter("x"), i = f->add_parameter("i");
  FuncGraph* t = m.add_graph("body", f);
  t->set_output(call(t, f,
                     {uop(t, "mul", {x, t->constant(integer(2))}),
                      t->prim(Prim::kScalarAdd, {i, t->constant(integer(1))})}));
  FuncGraph* e = m.add_graph("after", f);
  e->set_output(x);
  NodePtr c = uop(f, "less", {uop(f, "sum", {x}), f->constant(integer(100))});
  f->set_output(f->apply(
      {f->prim(Prim::kSwitch, {c, f->constant(graph_value(t)), f->constant(graph_value(e))})}));
  FuncGraph* g = specialize(m, f, {tensor({3}), scalar(ValueKind::kInt, integer(0))});
  const std::string s = text(g);
  // One level with i = 0, then a loop over an int counter.
  EXPECT_NE(s.find("graph @loop.1(%x: f32[3], %i: int=0)"), std::string::npos) << s;
  EXPECT_NE(s.find("graph @loop.2(%x.1: f32[3], %i.2: int)"), std::string::npos) << s;
  EXPECT_NE(s.find("= @loop.2(%"), std::string::npos) << s;
  EXPECT_EQ(s.find("@loop.3"), std::string::npos) << s;
  EXPECT_TRUE(check(*g).empty()) << s;
}

TEST(Analysis, ConstantLoopUnrollsAndFolds) {
  // def f(x, i): return f(x + 1, i - 1) if i > 0 else x    with i = 3: the switch folds each level
  Module m;
  FuncGraph* f = m.add_graph("f");
  NodePtr x = f->add_parameter("x"), i = f->add_parameter("i");
  FuncGraph* t = m.add_graph("t", f);
  t->set_output(call(t, f,
                     {uop(t, "add", {x, t->constant(integer(1))}),
                      t->prim(Prim::kScalarSub, {i, t->constant(integer(1))})}));
  FuncGraph* e = m.add_graph("e", f);
  e->set_output(x);
  NodePtr c = f->prim(Prim::kScalarGt, {i, f->constant(integer(0))});
  f->set_output(f->apply(
      {f->prim(Prim::kSwitch, {c, f->constant(graph_value(t)), f->constant(graph_value(e))})}));
  analysis::SpecializeStats st;
  FuncGraph* g = specialize(m, f, {tensor({2}), scalar(ValueKind::kInt, integer(3))}, {}, &st);
  const std::string s = text(g);
  EXPECT_EQ(s.find("switch"), std::string::npos) << s;
  EXPECT_NE(s.find("int=0) {"), std::string::npos) << s;
  EXPECT_EQ(st.contexts, 8);  // f and t for i = 3, 2, 1; f and e for i = 0
}

TEST(Analysis, ShapeRankDtypeFoldWhenStatic) {
  // def f(x): return x.reshape(x.shape[1], -1) ; plus x.ndim and x.dtype in a tuple
  Module m;
  FuncGraph* f = m.add_graph("f");
  NodePtr x = f->add_parameter("x");
  NodePtr d1 = f->prim(Prim::kTupleGetItem, {f->prim(Prim::kShape, {x}), f->constant(integer(1))});
  NodePtr shp = f->prim(Prim::kMakeTuple, {d1, f->constant(integer(-1))});
  NodePtr r = uop(f, "reshape", {x}, {{"shape", shp}});
  f->set_output(
      f->prim(Prim::kMakeTuple, {r, f->prim(Prim::kRank, {x}), f->prim(Prim::kDTypeOf, {x})}));
  FuncGraph* g = specialize(m, f, {tensor({kDynamic, 5})});
  EXPECT_EQ(text(g),
            "graph @f.1(%x: f32[?, 5]) {\n"
            "  %1: f32[5, ?] = reshape[shape=(5, -1)](%x)\n"
            "  %2: (f32[5, ?], int=2, dtype=float32) = make_tuple(%1, 2, float32)\n"
            "  return %2\n"
            "}\n");
}

// A constant kind analysis cannot interpret, standing for a Python object.
class PyObjectValue : public Value {
 public:
  PyObjectValue() : Value(static_cast<ValueKind>(100)) {}
  std::string repr() const override { return "<py helper>"; }
  bool equals(const Value& o) const override { return &o == this; }
  size_t hash() const override { return 1; }
};

TEST(Analysis, OpaqueCalleesAreEvaluatedByTheHook) {
  analysis::set_const_eval_hook(
      [](const Value& callee, const std::vector<ValuePtr>& args) -> ValuePtr {
        if (callee.repr() != "<py helper>" || args.size() != 1) return nullptr;
        return integer(static_cast<const IntValue&>(*args[0]).value() * 10);
      });
  Module m;
  FuncGraph* f = m.add_graph("f");
  NodePtr x = f->add_parameter("x");
  NodePtr k = f->apply({f->constant(std::make_shared<PyObjectValue>()), f->constant(integer(4))});
  f->set_output(uop(f, "reshape", {x}, {{"shape", f->prim(Prim::kMakeTuple, {k})}}));
  FuncGraph* g = specialize(m, f, {tensor({2, 20})});
  EXPECT_NE(text(g).find("reshape[shape=(40,)](%x)"), std::string::npos) << text(g);
  // Run-time arguments cannot be passed to it.
  FuncGraph* h = m.add_graph("h");
  NodePtr n = h->add_parameter("n");
  h->set_output(
      h->apply({h->constant(std::make_shared<PyObjectValue>()), n}, loc(9, "k = helper(n)")));
  EXPECT_THROW(specialize(m, h, {scalar(ValueKind::kInt)}), NotSupported);
  analysis::set_const_eval_hook(nullptr);
}

TEST(Analysis, ClosureSeesItsParentsSpecializedNodes) {
  // def f(x): a = x * x; def g(y): return y + a; return g(x)
  Module m;
  FuncGraph* f = m.add_graph("f");
  NodePtr x = f->add_parameter("x");
  NodePtr a = uop(f, "mul", {x, x});
  FuncGraph* g = m.add_graph("g", f);
  NodePtr y = g->add_parameter("y");
  g->set_output(uop(g, "add", {y, a}));
  f->set_output(call(f, g, {x}));
  FuncGraph* s = specialize(m, f, {tensor({2}, DType::float64)});
  EXPECT_EQ(text(s),
            "graph @f.1(%x: f64[2]) {\n"
            "  %1: f64[2] = mul(%x, %x)\n"
            "  %2: f64[2] = @g.1(%x)\n"
            "  return %2\n"
            "}\n"
            "\n"
            "graph @g.1(%y: f64[2]) {  # in @f.1\n"
            "  %3: f64[2] = add(%y, %1)\n"
            "  return %3\n"
            "}\n");
  EXPECT_TRUE(check(*s).empty());
}

TEST(Analysis, DictsAreKeyedTuples) {
  // d = {"a": x}; d["b"] = neg(x); d["a"] = y; return d["a"] + d["b"], d.keys()
  Module m;
  FuncGraph* f = m.add_graph("f");
  NodePtr x = f->add_parameter("x"), y = f->add_parameter("y");
  NodePtr d =
      f->prim(Prim::kMakeDict, {f->constant(tuple({string("a")})), f->prim(Prim::kMakeTuple, {x})});
  d = f->prim(Prim::kDictSetItem, {d, f->constant(string("b")), uop(f, "neg", {x})});
  d = f->prim(Prim::kDictSetItem, {d, f->constant(string("a")), y});
  NodePtr a = f->prim(Prim::kDictGetItem, {d, f->constant(string("a"))});
  NodePtr b = f->prim(Prim::kDictGetItem, {d, f->constant(string("b"))});
  f->set_output(f->prim(Prim::kMakeTuple, {uop(f, "add", {a, b}), f->prim(Prim::kDictKeys, {d})}));
  FuncGraph* g = specialize(m, f, {tensor({2}), tensor({2})});
  EXPECT_EQ(text(g),
            "graph @f.1(%x: f32[2], %y: f32[2]) {\n"
            "  %1: f32[2] = neg(%x)\n"
            "  %2: f32[2] = add(%y, %1)\n"
            "  %3: (f32[2], (str=\"a\", str=\"b\")) = make_tuple(%2, (\"a\", \"b\"))\n"
            "  return %3\n"
            "}\n");
  EXPECT_TRUE(check(*g).empty());
}

TEST(Analysis, ReshapeNamingItsDynamicDimBecomesAConstantShape) {
  // x: f32[?, 2, 3]; x.reshape(x.shape[0], -1) -> reshape[shape=(-1, 6)]
  Module m;
  FuncGraph* f = m.add_graph("f");
  NodePtr x = f->add_parameter("x");
  NodePtr n = f->prim(Prim::kTupleGetItem, {f->prim(Prim::kShape, {x}), f->constant(integer(0))});
  f->set_output(uop(f, "reshape", {x},
                    {{"shape", f->prim(Prim::kMakeTuple, {n, f->constant(integer(-1))})}}));
  FuncGraph* g = specialize(m, f, {tensor({kDynamic, 2, 3})});
  EXPECT_NE(text(g).find("reshape[shape=(-1, 6)](%x)"), std::string::npos) << text(g);
  EXPECT_NE(text(g).find("f32[?, 6]"), std::string::npos) << text(g);
}

}  // namespace
}  // namespace mycel::ir
