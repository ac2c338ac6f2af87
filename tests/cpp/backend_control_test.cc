// Backend control flow: switch between closures, data-dependent loops as tail recursion (also
// 10^5 iterations in constant memory), non-tail recursion, run-time scalars, dynamic batch.
#include "backend_util.h"
#include "mycel/backend/detail.h"
#include "mycel/ir/raised.h"

namespace mycel::backend::testing {
namespace {

NodePtr tconst(FuncGraph* g, double v) {
  NodePtr c = g->constant(tensor_value(Tensor::scalar(v, DType::float32)));
  c->set_abstract(tensor_abs({}));
  return c;
}
NodePtr iconst(FuncGraph* g, int64_t v) {
  NodePtr c = g->constant(integer(v));
  c->set_abstract(std::make_shared<AbstractScalar>(ValueKind::kInt, integer(v)));
  return c;
}
NodePtr switch_call(FuncGraph* g, NodePtr cond, FuncGraph* t, FuncGraph* f, AbstractPtr out,
                    std::vector<NodePtr> args = {}) {
  NodePtr sw = g->prim(Prim::kSwitch, {cond, gconst(g, t), gconst(g, f)});
  args.insert(args.begin(), sw);
  return call(g, std::move(args), std::move(out));
}
AbstractPtr pair_abs(AbstractPtr a, AbstractPtr b) {
  return std::make_shared<AbstractTuple>(std::vector<AbstractPtr>{std::move(a), std::move(b)});
}

TEST(BackendControl, SwitchBetweenClosuresUsingParentNodes) {
  // def f(x, y): a = x * y
  //   if sum(x) > 0: r = a + x            (closure over a, x)
  //   else: def h(): return a - y; r = h() * y   (nested closure two levels deep)
  //   return r * 2
  Module m;
  FuncGraph* f = m.add_graph("f");
  NodePtr x = param(f, "x", tensor_abs({2, 3})), y = param(f, "y", tensor_abs({2, 3}));
  NodePtr a = op(f, "mul", {x, y});
  FuncGraph* t = m.add_graph("f_true", f);
  t->set_output(op(t, "add", {a, x}));
  FuncGraph* e = m.add_graph("f_false", f);
  FuncGraph* h = m.add_graph("h", e);
  h->set_output(op(h, "sub", {a, y}));
  e->set_output(op(e, "mul", {call(e, {gconst(e, h)}, tensor_abs({2, 3})), y}));
  NodePtr c = op(f, "greater", {op(f, "sum", {x}), tconst(f, 0)});
  NodePtr r = switch_call(f, c, t, e, tensor_abs({2, 3}));
  f->set_output(op(f, "mul", {r, tconst(f, 2)}));
  auto prog = compile(*f);
  Tensor two = Tensor::scalar(2, DType::float32);
  for (double sign : {1.0, -1.0}) {
    Tensor X = eager(
        "mul", {eager("abs", {randn({2, 3}, 1)})[0], Tensor::scalar(sign, DType::float32)})[0];
    Tensor Y = randn({2, 3}, 2);
    Tensor A = eager("mul", {X, Y})[0];
    Tensor R = sign > 0 ? eager("add", {A, X})[0] : eager("mul", {eager("sub", {A, Y})[0], Y})[0];
    expect_same(prog->run({X, Y})[0], eager("mul", {R, two})[0]);
  }
}

struct TestException : Value {
  TestException() : Value(ValueKind::kExternal) {}
  std::string repr() const override { return "py:ValueError('negative')"; }
  bool equals(const Value& o) const override { return &o == this; }
  size_t hash() const override { return 7; }
};

TEST(BackendControl, RaiseInABranchThrowsWhenTheProgramTakesIt) {
  // def f(x): if sum(x) < 0: raise ValueError('negative')   else: return x * 2
  // The raising branch returns no value the call expects: it never returns.
  auto exc = std::make_shared<TestException>();
  Module m;
  FuncGraph* f = m.add_graph("f");
  NodePtr x = param(f, "x", tensor_abs({3}));
  FuncGraph* bad = m.add_graph("f_raise", f);
  SourceLoc at;
  at.line = 4;
  NodePtr r = bad->prim(Prim::kRaise, {bad->constant(exc)}, at);
  r->set_abstract(std::make_shared<AbstractNone>());
  bad->set_output(r);
  FuncGraph* ok = m.add_graph("f_ok", f);
  ok->set_output(op(ok, "mul", {x, tconst(ok, 2)}));
  NodePtr c = op(f, "less", {op(f, "sum", {x}), tconst(f, 0)});
  f->set_output(switch_call(f, c, bad, ok, tensor_abs({3})));
  auto prog = compile(*f);
  EXPECT_NE(prog->dump().find("raise py:ValueError('negative')"), std::string::npos)
      << prog->dump();
  Tensor pos = eager("abs", {randn({3}, 1)})[0];
  expect_same(prog->run({pos})[0], eager("mul", {pos, Tensor::scalar(2, DType::float32)})[0]);
  try {
    prog->run({eager("neg", {pos})[0]});
    FAIL() << "expected a RaisedError";
  } catch (const RaisedError& e) {
    EXPECT_EQ(e.exception, exc);
    EXPECT_EQ(e.loc.line, 4);
  }
  expect_same(prog->run({pos})[0],
              eager("mul", {pos, Tensor::scalar(2, DType::float32)})[0]);  // runs again
}

// def f(x, c): while sum(x) <= c: x = x * 2; return x   -- as loop(x) = switch(...)()
struct DoublingLoop {
  Module m;
  FuncGraph* top;
  explicit DoublingLoop(Shape s) {
    top = m.add_graph("f");
    NodePtr x = param(top, "x", tensor_abs(s)), c = param(top, "c", tensor_abs({}));
    FuncGraph* loop = m.add_graph("while", top);
    NodePtr xi = param(loop, "x", tensor_abs(s));
    FuncGraph* body = m.add_graph("while_body", loop);
    body->set_output(
        call(body, {gconst(body, loop), op(body, "mul", {xi, tconst(body, 2)})}, tensor_abs(s)));
    FuncGraph* done = m.add_graph("while_exit", loop);
    done->set_output(xi);
    NodePtr cond = op(loop, "greater", {op(loop, "sum", {xi}), c});
    loop->set_output(switch_call(loop, cond, done, body, tensor_abs(s)));
    top->set_output(call(top, {gconst(top, loop), x}, tensor_abs(s)));
  }
  static Tensor reference(Tensor x, const Tensor& c) {
    while (!eager("greater", {eager("sum", {x})[0], c})[0].item_as_double())
      x = eager("mul", {x, Tensor::scalar(2, DType::float32)})[0];
    return x;
  }
};

TEST(BackendControl, DataDependentLoopMatchesACppLoop) {
  DoublingLoop l({2, 2});
  auto prog = compile(*l.top);
  Tensor X = eager("abs", {randn({2, 2}, 3)})[0];
  for (double c : {0.5, 10.0, 1000.0}) {
    Tensor C = Tensor::scalar(c, DType::float32);
    expect_same(prog->run({X, C})[0], DoublingLoop::reference(X, C));
  }
  EXPECT_NE(prog->dump().find("tail_call @while("), std::string::npos) << prog->dump();
}

TEST(BackendControl, HundredThousandIterationsRunInConstantMemory) {
  // def f(x): i = 0; while i < 100000: x = x + 1; i = i + 1; return x, i
  Module m;
  FuncGraph* top = m.add_graph("f");
  NodePtr x = param(top, "x", tensor_abs({4}));
  FuncGraph* loop = m.add_graph("while", top);
  NodePtr xi = param(loop, "x", tensor_abs({4}));
  NodePtr i = param(loop, "i", scalar_abs(ValueKind::kInt));
  AbstractPtr out = pair_abs(tensor_abs({4}), scalar_abs(ValueKind::kInt));
  FuncGraph* body = m.add_graph("while_body", loop);
  body->set_output(
      call(body,
           {gconst(body, loop), op(body, "add", {xi, tconst(body, 1)}),
            prim(body, Prim::kScalarAdd, {i, iconst(body, 1)}, scalar_abs(ValueKind::kInt))},
           out));
  FuncGraph* done = m.add_graph("while_exit", loop);
  done->set_output(prim(done, Prim::kMakeTuple, {xi, i}, out));
  NodePtr cond =
      prim(loop, Prim::kScalarLt, {i, iconst(loop, 100000)}, scalar_abs(ValueKind::kBool));
  loop->set_output(switch_call(loop, cond, body, done, out));
  top->set_output(call(top, {gconst(top, loop), x, iconst(top, 0)}, out));
  auto prog = compile(*top);
  Tensor X = Tensor::zeros({4}, DType::float32);
  prog->run({X});  // warm
  auto& impl = prog->impl();
  size_t allocs = allocator_stats().num_allocs, frames = impl.frames.capacity();
  auto res = prog->run({X});
  EXPECT_EQ(allocator_stats().num_allocs - allocs, 2u) << "only the two outputs";
  EXPECT_EQ(impl.frames.capacity(), frames);
  EXPECT_EQ(impl.save_bytes.size(), 0u);
  EXPECT_EQ(res[1].dtype(), DType::int64);
  EXPECT_EQ(res[1].item_as_double(), 100000.0);
  for (int k = 0; k < 4; ++k) EXPECT_EQ(res[0].data<float>()[k], 100000.0f);
  EXPECT_EQ(prog->stats().num_kernel_launches, 100000u);
}

TEST(BackendControl, NonTailRecursionKeepsEachFramesValues) {
  // def f(x, n): if n > 0: y = x * 2; return f(y, n - 1) + y  else: return x
  Module m;
  FuncGraph* f = m.add_graph("f");
  NodePtr x = param(f, "x", tensor_abs({3})), n = param(f, "n", scalar_abs(ValueKind::kInt));
  FuncGraph* t = m.add_graph("f_true", f);
  NodePtr y = op(t, "mul", {x, tconst(t, 2)});
  NodePtr n1 = prim(t, Prim::kScalarSub, {n, iconst(t, 1)}, scalar_abs(ValueKind::kInt));
  t->set_output(op(t, "add", {call(t, {gconst(t, f), y, n1}, tensor_abs({3})), y}));
  FuncGraph* e = m.add_graph("f_false", f);
  e->set_output(x);
  NodePtr cond = prim(f, Prim::kScalarGt, {n, iconst(f, 0)}, scalar_abs(ValueKind::kBool));
  f->set_output(switch_call(f, cond, t, e, tensor_abs({3})));
  // The Program's top takes tensors only: wrap f(x, 5).
  FuncGraph* top = m.add_graph("top");
  NodePtr X = param(top, "x", tensor_abs({3}));
  top->set_output(call(top, {gconst(top, f), X, iconst(top, 5)}, tensor_abs({3})));
  auto prog = compile(*top);
  std::function<Tensor(Tensor, int)> ref = [&](Tensor v, int k) -> Tensor {
    if (k <= 0) return v;
    Tensor w = eager("mul", {v, Tensor::scalar(2, DType::float32)})[0];
    return eager("add", {ref(w, k - 1), w})[0];
  };
  Tensor in = randn({3}, 9);
  expect_same(prog->run({in})[0], ref(in, 5));
  expect_same(prog->run({in})[0], ref(in, 5));
}

TEST(BackendControl, TensorConditionFromTensorToScalarAndSelect) {
  // r = switch(tensor_to_scalar(all(x > 0)), x, -x) as values (no call)
  Module m;
  FuncGraph* g = m.add_graph("g");
  NodePtr x = param(g, "x", tensor_abs({3}));
  NodePtr pos = op(g, "greater", {op(g, "min", {x}), tconst(g, 0)});
  NodePtr c = prim(g, Prim::kTensorToScalar, {pos}, scalar_abs(ValueKind::kBool));
  NodePtr r = prim(g, Prim::kSwitch, {c, x, op(g, "neg", {x})}, tensor_abs({3}));
  g->set_output(op(g, "exp", {r}));
  auto prog = compile(*g);
  Tensor a = eager("abs", {randn({3}, 1)})[0], b = randn({3}, 2);
  b.data<float>()[0] = -1;
  expect_same(prog->run({a})[0], eager("exp", {a})[0]);
  expect_same(prog->run({b})[0], eager("exp", {eager("neg", {b})[0]})[0]);
}

TEST(BackendControl, DynamicBatchReusesCachedPlans) {
  // dense MLP with x: f32[?, 8]; a loop over a dynamic batch too.
  Module m;
  FuncGraph* g = m.add_graph("mlp");
  NodePtr x = param(g, "x", tensor_abs({kDynamic, 8}));
  Tensor w = randn({8, 4}, 1), b = randn({4}, 2);
  NodePtr W = weight(g, "w", w), B = weight(g, "b", b);
  NodePtr h = op(g, "relu", {op(g, "add", {op(g, "matmul", {x, W}), B})});
  NodePtr flat = op(g, "reshape", {h}, {{"shape", std::vector<int64_t>{-1}}});
  flat->set_abstract(tensor_abs({kDynamic}));  // (? * 4,)
  g->set_output(op(g, "softmax", {flat}));
  auto prog = compile(*g);
  EXPECT_EQ(prog->stats().num_plans, 0u);
  auto ref = [&](const Tensor& X) {
    Tensor hh = eager("relu", {eager("add", {eager("matmul", {X, w})[0], b})[0]})[0];
    return eager("softmax", {eager("reshape", {hh}, {{"shape", std::vector<int64_t>{-1}}})[0]})[0];
  };
  Tensor x3 = randn({3, 8}, 3), x5 = randn({5, 8}, 4);
  expect_same(prog->run({x3})[0], ref(x3));
  size_t arena3 = prog->stats().arena_bytes;
  expect_same(prog->run({x5})[0], ref(x5));
  EXPECT_GT(prog->stats().arena_bytes, arena3);
  Tensor ref3 = ref(x3);
  size_t allocs = allocator_stats().num_allocs;
  Tensor y3 = prog->run({x3})[0];
  EXPECT_EQ(allocator_stats().num_allocs - allocs, 1u) << "cached plan: only the output";
  expect_same(y3, ref3);
  EXPECT_EQ(prog->stats().num_plans, 2u);
  EXPECT_EQ(prog->stats().arena_bytes, arena3);
  EXPECT_THROW(prog->run({randn({3, 7}, 1)}), ValueError);
}

TEST(BackendControl, ShapePlansAreBoundedLeastRecentlyUsed) {
  Module m;
  FuncGraph* g = m.add_graph("mlp");
  NodePtr x = param(g, "x", tensor_abs({kDynamic, 8}));
  Tensor w = randn({8, 4}, 1);
  NodePtr W = weight(g, "w", w);
  g->set_output(op(g, "relu", {op(g, "matmul", {x, W})}));
  CompileOptions opts;
  opts.max_plans = 4;
  auto prog = compile(*g, opts);
  auto ref = [&](const Tensor& X) { return eager("relu", {eager("matmul", {X, w})[0]})[0]; };
  for (int64_t n = 1; n <= 40; ++n) {
    Tensor X = randn({n, 8}, static_cast<uint32_t>(n));
    expect_same(prog->run({X})[0], ref(X));
    EXPECT_LE(prog->stats().num_plans, 4u) << "after batch " << n;
  }
  EXPECT_EQ(prog->stats().num_plans, 4u);
  // Batch 37 is still cached (no new plan: one allocation, the output); batch 2 was evicted.
  Tensor X37 = randn({37, 8}, 37), X2 = randn({2, 8}, 2), want37 = ref(X37);
  size_t allocs = allocator_stats().num_allocs;
  Tensor y37 = prog->run({X37})[0];
  EXPECT_EQ(allocator_stats().num_allocs - allocs, 1u);
  expect_same(y37, want37);
  expect_same(prog->run({X2})[0], ref(X2));
  EXPECT_EQ(prog->stats().num_plans, 4u);
  opts.max_plans = 0;
  EXPECT_THROW(compile(*g, opts), ValueError);
}

TEST(BackendControl, DynamicBatchThroughALoopAndShapePrim) {
  DoublingLoop l({kDynamic, 2});
  auto prog = compile(*l.top);
  Tensor C = Tensor::scalar(50, DType::float32);
  for (int64_t n : {3, 5, 3}) {
    Tensor X = eager("abs", {randn({n, 2}, static_cast<uint32_t>(n))})[0];
    expect_same(prog->run({X, C})[0], DoublingLoop::reference(X, C));
  }
  EXPECT_EQ(prog->stats().num_plans, 2u);
}

TEST(BackendControl, ShapeOfADynamicDimIsARunTimeScalar) {
  // return x * float(x.shape[0])  -> scalar_to_tensor(shape(x)[0], f32)
  Module m;
  FuncGraph* g = m.add_graph("g");
  NodePtr x = param(g, "x", tensor_abs({kDynamic, 2}));
  auto shp = std::make_shared<AbstractTuple>(std::vector<AbstractPtr>{
      scalar_abs(ValueKind::kInt), std::make_shared<AbstractScalar>(ValueKind::kInt, integer(2))});
  NodePtr s = prim(g, Prim::kShape, {x}, shp);
  NodePtr d0 = prim(g, Prim::kTupleGetItem, {s, iconst(g, 0)}, scalar_abs(ValueKind::kInt));
  NodePtr dt = g->constant(dtype_value(DType::float32));
  NodePtr t = prim(g, Prim::kScalarToTensor, {d0, dt}, tensor_abs({}));
  g->set_output(op(g, "mul", {x, t}));
  auto prog = compile(*g);
  for (int64_t n : {2, 7}) {
    Tensor X = randn({n, 2}, 1);
    expect_same(prog->run({X})[0], eager("mul", {X, Tensor::scalar(double(n), DType::float32)})[0]);
  }
}

TEST(BackendControl, SelfTailCallSwapsTensorsThroughParameterHomes) {
  // def fib(a, b, i): return fib(b, a + b, i + 1) if i < 20 else a   -- switch of partials,
  // so fib tail-calls itself with arguments living in its own frame.
  Module m;
  FuncGraph* fib = m.add_graph("fib");
  NodePtr a = param(fib, "a", tensor_abs({3})), b = param(fib, "b", tensor_abs({3}));
  NodePtr i = param(fib, "i", scalar_abs(ValueKind::kInt));
  FuncGraph* id = m.add_graph("identity");
  id->set_output(param(id, "v", tensor_abs({3})));
  NodePtr ab = op(fib, "add", {a, b});
  NodePtr i1 = prim(fib, Prim::kScalarAdd, {i, iconst(fib, 1)}, scalar_abs(ValueKind::kInt));
  NodePtr again = fib->prim(Prim::kPartial, {gconst(fib, fib), b, ab, i1});
  NodePtr stop = fib->prim(Prim::kPartial, {gconst(fib, id), a});
  NodePtr c = prim(fib, Prim::kScalarLt, {i, iconst(fib, 20)}, scalar_abs(ValueKind::kBool));
  NodePtr sw = fib->prim(Prim::kSwitch, {c, again, stop});
  fib->set_output(call(fib, {sw}, tensor_abs({3})));
  FuncGraph* top = m.add_graph("top");
  NodePtr x = param(top, "x", tensor_abs({3})), y = param(top, "y", tensor_abs({3}));
  top->set_output(call(top, {gconst(top, fib), x, y, iconst(top, 0)}, tensor_abs({3})));
  auto prog = compile(*top);
  EXPECT_NE(prog->dump().find("tail_call switch("), std::string::npos) << prog->dump();
  Tensor X = randn({3}, 1), Y = randn({3}, 2), ra = X, rb = Y;
  for (int k = 0; k < 20; ++k) {
    Tensor s = eager("add", {ra, rb})[0];
    ra = rb;
    rb = s;
  }
  expect_same(prog->run({X, Y})[0], ra);
  expect_same(prog->run({X, Y})[0], ra);
}

TEST(BackendControl, TwoCallsOfOneGraphKeepBothResults) {
  // def g(v): return exp(v) * 2;  def f(x, y): return g(x) - g(y)
  Module m;
  FuncGraph* g = m.add_graph("g");
  NodePtr v = param(g, "v", tensor_abs({2, 2}));
  g->set_output(op(g, "mul", {op(g, "exp", {v}), tconst(g, 2)}));
  FuncGraph* f = m.add_graph("f");
  NodePtr x = param(f, "x", tensor_abs({2, 2})), y = param(f, "y", tensor_abs({2, 2}));
  NodePtr gx = call(f, {gconst(f, g), x}, tensor_abs({2, 2}));
  NodePtr gy = call(f, {gconst(f, g), y}, tensor_abs({2, 2}));
  f->set_output(op(f, "sub", {gx, gy}));
  auto prog = compile(*f, CompileOptions{false});  // the listing below is the unfused one
  Tensor X = randn({2, 2}, 1), Y = randn({2, 2}, 2), two = Tensor::scalar(2, DType::float32);
  Tensor ref = eager("sub", {eager("mul", {eager("exp", {X})[0], two})[0],
                             eager("mul", {eager("exp", {Y})[0], two})[0]})[0];
  expect_same(prog->run({X, Y})[0], ref);
  EXPECT_EQ(prog->dump(),
            "function @f(r0, r1)\n"
            "  r2 = call @g(r0)\n"
            "  r3 = call @g(r1)\n"
            "  r4 = sub(r2, r3)\n"
            "  return r4\n"
            "function @g(r0)\n"
            "  r1 = exp(r0)\n"
            "  r3 = mul(r1, r2)\n"
            "  return r3\n");
}

TEST(BackendControl, SelfTailCallSwappingParameters) {
  // def swap(a, b, i): return swap(-b, a, i + 1) if i < 3 else (a, b)
  Module m;
  FuncGraph* sw = m.add_graph("swap");
  NodePtr a = param(sw, "a", tensor_abs({2})), b = param(sw, "b", tensor_abs({2}));
  NodePtr i = param(sw, "i", scalar_abs(ValueKind::kInt));
  AbstractPtr out = pair_abs(tensor_abs({2}), tensor_abs({2}));
  FuncGraph* done = m.add_graph("done");
  NodePtr p = param(done, "p", tensor_abs({2})), q = param(done, "q", tensor_abs({2}));
  done->set_output(prim(done, Prim::kMakeTuple, {p, q}, out));
  NodePtr nb = op(sw, "neg", {b});  // from the second iteration on, a lives in its home
  NodePtr i1 = prim(sw, Prim::kScalarAdd, {i, iconst(sw, 1)}, scalar_abs(ValueKind::kInt));
  NodePtr again = sw->prim(Prim::kPartial, {gconst(sw, sw), nb, a, i1});
  NodePtr stop = sw->prim(Prim::kPartial, {gconst(sw, done), a, b});
  NodePtr c = prim(sw, Prim::kScalarLt, {i, iconst(sw, 3)}, scalar_abs(ValueKind::kBool));
  sw->set_output(call(sw, {sw->prim(Prim::kSwitch, {c, again, stop})}, out));
  FuncGraph* top = m.add_graph("top");
  NodePtr x = param(top, "x", tensor_abs({2})), y = param(top, "y", tensor_abs({2}));
  top->set_output(call(top, {gconst(top, sw), x, y, iconst(top, 0)}, out));
  auto prog = compile(*top);
  Tensor X = randn({2}, 1), Y = randn({2}, 2);
  auto r = prog->run({X, Y});
  // (a, b) -> (-b, a) three times: (-y, x) -> (-x, -y) -> (y, -x); the third call moves a's
  // home into b's while -b goes into a's home, so the arguments are staged.
  expect_same(r[0], Y);
  expect_same(r[1], eager("neg", {X})[0]);
}

}  // namespace
}  // namespace mycel::backend::testing
