// Optimizer passes on small specialized IR: before/after text, idempotence, and the pipeline's
// promise that a straight-line model ends flat.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <variant>

#include "graph_test_util.h"
#include "mycel/opt/opt.h"

namespace mycel::ir {
namespace {
using namespace testing;
using opt::OptOptions;

OptOptions checked() {
  OptOptions o;
  o.verify = true;
  return o;
}

// Runs a pass, checks the IR, and checks that a second run changes nothing.
template <class Pass>
std::string run_pass(Pass pass, FuncGraph* g) {
  EXPECT_TRUE(pass(g, checked())) << "pass did nothing on\n" << text(g);
  verify(*g, "test");
  std::string once = text(g);
  EXPECT_FALSE(pass(g, checked())) << "pass is not idempotent:\n" << text(g);
  EXPECT_EQ(text(g), once);
  return once;
}

TEST(Opt, InlineCallsCopiesBodiesAndKeepsRecursion) {
  // def h(y): return y * y ;  def f(x): return h(x) + h(x)
  Module m;
  FuncGraph* h = m.add_graph("h");
  NodePtr y = h->add_parameter("y");
  h->set_output(uop(h, "mul", {y, y}));
  FuncGraph* f = m.add_graph("f");
  NodePtr x = f->add_parameter("x");
  f->set_output(uop(f, "add", {call(f, h, {x}), call(f, h, {x})}));
  FuncGraph* g = analysis::specialize(m, f, {tensor({2})});
  EXPECT_EQ(run_pass(opt::inline_calls, g),
            "graph @f.1(%x: f32[2]) {\n"
            "  %1: f32[2] = mul(%x, %x)\n"
            "  %2: f32[2] = mul(%x, %x)\n"
            "  %3: f32[2] = add(%1, %2)\n"
            "  return %3\n"
            "}\n");
}

TEST(Opt, InlineLeavesRecursiveGraphs) {
  Module m;
  FuncGraph* f = m.add_graph("f");
  NodePtr n = f->add_parameter("n");
  FuncGraph* t = m.add_graph("t", f);
  t->set_output(call(t, f, {uop(t, "sub", {n, t->constant(integer(1))})}));
  FuncGraph* e = m.add_graph("e", f);
  e->set_output(n);
  f->set_output(f->apply(
      {f->prim(Prim::kSwitch, {uop(f, "greater", {n, f->constant(integer(0))}),
                               f->constant(graph_value(t)), f->constant(graph_value(e))})}));
  FuncGraph* g = analysis::specialize(m, f, {tensor({}, DType::int32)});
  std::string before = text(g);
  EXPECT_FALSE(opt::inline_calls(g, checked()));
  EXPECT_EQ(text(g), before);
}

TEST(Opt, EliminateTuplesFoldsGetItemOfMakeTuple) {
  Module m;
  FuncGraph* f = m.add_graph("f");
  NodePtr x = f->add_parameter("x"), y = f->add_parameter("y");
  NodePtr t = f->prim(Prim::kMakeTuple, {uop(f, "neg", {x}), y});
  NodePtr a = f->prim(Prim::kTupleGetItem, {t, f->constant(integer(0))});
  NodePtr b = f->prim(Prim::kTupleGetItem, {t, f->constant(integer(-1))});
  f->set_output(uop(f, "add", {a, b}));
  FuncGraph* g = analysis::specialize(m, f, {tensor({2}), tensor({2})});
  EXPECT_EQ(run_pass(opt::eliminate_tuples, g),
            "graph @f.1(%x: f32[2], %y: f32[2]) {\n"
            "  %1: f32[2] = neg(%x)\n"
            "  %2: f32[2] = add(%1, %y)\n"
            "  return %2\n"
            "}\n");
}

TEST(Opt, EliminateClosuresTurnsCalledPartialsIntoCalls) {
  // p = partial(h, x); return p(y)
  Module m;
  FuncGraph* h = m.add_graph("h");
  NodePtr a = h->add_parameter("a"), b = h->add_parameter("b");
  h->set_output(uop(h, "sub", {a, b}));
  FuncGraph* f = m.add_graph("f");
  NodePtr x = f->add_parameter("x"), y = f->add_parameter("y");
  NodePtr p = f->prim(Prim::kPartial, {f->constant(graph_value(h)), x});
  f->set_output(f->apply({p, y}));
  FuncGraph* g = analysis::specialize(m, f, {tensor({2}), tensor({2})});
  EXPECT_EQ(run_pass(opt::eliminate_closures, g),
            "graph @f.1(%x: f32[2], %y: f32[2]) {\n"
            "  %1: f32[2] = @h.1(%x, %y)\n"
            "  return %1\n"
            "}\n"
            "\n"
            "graph @h.1(%a: f32[2], %b: f32[2]) {\n"
            "  %2: f32[2] = sub(%a, %b)\n"
            "  return %2\n"
            "}\n");
}

TEST(Opt, CseMergesPureOpsButNotRandomOnes) {
  Module m;
  FuncGraph* f = m.add_graph("f");
  NodePtr x = f->add_parameter("x");
  NodePtr s = uop(f, "add", {uop(f, "exp", {x}), uop(f, "exp", {x})});
  f->set_output(s);
  FuncGraph* g = analysis::specialize(m, f, {tensor({2})});
  EXPECT_EQ(run_pass(opt::eliminate_common_subexpressions, g),
            "graph @f.1(%x: f32[2]) {\n"
            "  %1: f32[2] = exp(%x)\n"
            "  %2: f32[2] = add(%1, %1)\n"
            "  return %2\n"
            "}\n");
  // Random ops draw new numbers each time: never merged.
  const OpDef* rnd = nullptr;
  auto all_defaulted = [](const OpDef* d) {  // callable with no attributes given
    return std::all_of(d->attrs.begin(), d->attrs.end(), [](const AttrDef& a) {
      return a.optional || !std::holds_alternative<std::monostate>(a.default_value);
    });
  };
  for (const OpDef* d : Registry::get().ops())
    if (d->random && d->inputs.size() == 1 && !d->inputs[0].optional && all_defaulted(d)) rnd = d;
  if (!rnd) GTEST_SKIP() << "no unary random op registered";
  Module m2;
  FuncGraph* f2 = m2.add_graph("f");
  NodePtr x2 = f2->add_parameter("x");
  NodePtr r1 =
      f2->apply({f2->constant(op_value(rnd, make_attrs(*rnd, std::vector<AttrValue>{}))), x2});
  NodePtr r2 =
      f2->apply({f2->constant(op_value(rnd, make_attrs(*rnd, std::vector<AttrValue>{}))), x2});
  r1->set_abstract(tensor({2}));
  r2->set_abstract(tensor({2}));
  f2->set_output(f2->prim(Prim::kMakeTuple, {r1, r2}));
  EXPECT_FALSE(opt::eliminate_common_subexpressions(f2, checked()));
}

TEST(Opt, DeadCodeDropsPureDependsAndUnusedParameters) {
  // def h(a, unused): return -a ;  def f(x): return depend(h(x, x * 2), x + 1)
  Module m;
  FuncGraph* h = m.add_graph("h");
  NodePtr a = h->add_parameter("a");
  h->add_parameter("unused");
  h->set_output(uop(h, "neg", {a}));
  FuncGraph* f = m.add_graph("f");
  NodePtr x = f->add_parameter("x");
  NodePtr c = call(f, h, {x, uop(f, "mul", {x, f->constant(integer(2))})});
  f->set_output(f->prim(Prim::kDepend, {c, uop(f, "add", {x, f->constant(integer(1))})}));
  FuncGraph* g = analysis::specialize(m, f, {tensor({2})});
  EXPECT_EQ(run_pass(opt::eliminate_dead_code, g),
            "graph @f.1(%x: f32[2]) {\n"
            "  %1: f32[2] = @h.1(%x)\n"
            "  return %1\n"
            "}\n"
            "\n"
            "graph @h.1(%a: f32[2]) {\n"
            "  %2: f32[2] = neg(%a)\n"
            "  return %2\n"
            "}\n");
}

TEST(Opt, DeadCodeKeepsPrint) {
  Module m;
  FuncGraph* f = m.add_graph("f");
  NodePtr x = f->add_parameter("x");
  f->set_output(f->prim(Prim::kDepend, {x, f->prim(Prim::kPrint, {x})}));
  FuncGraph* g = analysis::specialize(m, f, {tensor({2})});
  EXPECT_FALSE(opt::eliminate_dead_code(g, checked()));
  EXPECT_NE(text(g).find("print(%x)"), std::string::npos);
}

TEST(Opt, FoldConstantsRunsSmallOpsWithTheirKernels) {
  // return x * (exp(0.0) + 2)    -> x * Tensor{3}
  Module m;
  FuncGraph* f = m.add_graph("f");
  NodePtr x = f->add_parameter("x");
  NodePtr z = f->constant(tensor_value(Tensor::scalar(0.0, DType::float32)));
  NodePtr k = uop(f, "add", {uop(f, "exp", {z}), f->constant(integer(2))});
  f->set_output(uop(f, "mul", {x, k}));
  FuncGraph* g = analysis::specialize(m, f, {tensor({2})});
  opt::OptOptions o = checked();
  while (opt::fold_constants(g, o)) {
  }
  EXPECT_EQ(text(g),
            "graph @f.1(%x: f32[2]) {\n"
            "  %1: f32[2] = mul(%x, Tensor<f32()>{3})\n"
            "  return %1\n"
            "}\n");
  EXPECT_FALSE(opt::fold_constants(g, o));
}

TEST(Opt, SimplifyAlgebraIdentities) {
  // ((x * 1 + 0) - 0) / 1 -> x ; 1 * x with broadcasting to a bigger shape stays
  Module m;
  FuncGraph* f = m.add_graph("f");
  NodePtr x = f->add_parameter("x");
  NodePtr e =
      uop(f, "div",
          {uop(f, "sub",
               {uop(f, "add",
                    {uop(f, "mul", {x, f->constant(integer(1))}), f->constant(floating(0.0))}),
                f->constant(integer(0))}),
           f->constant(integer(1))});
  NodePtr ones = f->constant(tensor_value(call_op(
      "add", {Tensor::zeros({2, 3}, DType::float32), Tensor::scalar(1, DType::float32)})[0]));
  NodePtr b = uop(f, "mul", {ones, x});  // broadcasts x: [3] -> [2, 3], must stay
  f->set_output(f->prim(Prim::kMakeTuple, {e, b}));
  FuncGraph* g = analysis::specialize(m, f, {tensor({3})});
  opt::fold_constants(g, checked());  // scalar_to_tensor constants become tensors
  run_pass(opt::simplify_algebra, g);
  std::string s = text(g);
  EXPECT_NE(s.find("make_tuple(%x, %"), std::string::npos) << s;
  EXPECT_NE(s.find("mul(Tensor<f32(2, 3)>, %x)"), std::string::npos) << s;
}

TEST(Opt, SimplifyAlgebraOnesLikeZerosLike) {
  // x * ones_like(y) -> x and zeros_like(y) + x -> x when the shapes agree; a broadcasting one
  // stays.
  Module m;
  FuncGraph* f = m.add_graph("f");
  NodePtr x = f->add_parameter("x");
  NodePtr y = f->add_parameter("y");
  NodePtr a =
      uop(f, "add", {uop(f, "zeros_like", {y}), uop(f, "mul", {x, uop(f, "ones_like", {y})})});
  NodePtr z = f->add_parameter("z");
  NodePtr b = uop(f, "mul", {uop(f, "ones_like", {z}), x});  // [2, 3] result: x broadcasts, stays
  f->set_output(f->prim(Prim::kMakeTuple, {a, b}));
  FuncGraph* g = analysis::specialize(m, f, {tensor({3}), tensor({3}), tensor({2, 3})});
  run_pass(opt::simplify_algebra, g);
  opt::eliminate_dead_code(g, checked());
  std::string s = text(g);
  EXPECT_NE(s.find("make_tuple(%x, %"), std::string::npos) << s;
  EXPECT_NE(s.find("mul(%"), std::string::npos) << s;
  EXPECT_EQ(s.find("zeros_like"), std::string::npos) << s;
}

TEST(Opt, SimplifyAlgebraTransposeReshapeCast) {
  Module m;
  FuncGraph* f = m.add_graph("f");
  NodePtr x = f->add_parameter("x");
  NodePtr t1 = uop(f, "transpose", {x}, {{"perm", ints(f, {1, 2, 0})}});
  NodePtr t2 = uop(f, "transpose", {t1}, {{"perm", ints(f, {2, 0, 1})}});  // back to x
  NodePtr t3 = uop(f, "transpose", {uop(f, "transpose", {x}, {{"perm", ints(f, {1, 0, 2})}})},
                   {{"perm", ints(f, {0, 2, 1})}});  // composed
  NodePtr r = uop(f, "reshape", {uop(f, "reshape", {x}, {{"shape", ints(f, {6, 4})}})},
                  {{"shape", ints(f, {3, 8})}});
  NodePtr same = uop(f, "reshape", {x}, {{"shape", ints(f, {2, 3, 4})}});
  NodePtr c = uop(f, "cast", {x}, {{"dtype", f->constant(dtype_value(DType::float32))}});
  NodePtr id = uop(f, "identity", {x});
  f->set_output(f->prim(Prim::kMakeTuple, {t2, t3, r, same, c, id}));
  FuncGraph* g = analysis::specialize(m, f, {tensor({2, 3, 4})});
  EXPECT_EQ(
      run_pass(opt::simplify_algebra, g),
      "graph @f.1(%x: f32[2, 3, 4]) {\n"
      "  %1: f32[3, 4, 2] = transpose[perm=(1, 2, 0)](%x)\n"
      "  %2: f32[3, 8] = reshape[shape=(3, 8)](%x)\n"
      "  %3: (f32[2, 3, 4], f32[3, 4, 2], f32[3, 8], f32[2, 3, 4], f32[2, 3, 4], f32[2, 3, 4]) = "
      "make_tuple(%x, %1, %2, %x, %x, %x)\n"
      "  return %3\n"
      "}\n");
}

TEST(Opt, PipelineFlattensAStraightLineModelAndDumps) {
  // A Cell: top(x) calls dense(x) (a sub-cell graph using the weight w as a free variable) and
  // returns (out, ) through a tuple and a partial.
  Module m;
  FuncGraph* top = m.add_graph("net");
  NodePtr x = top->add_parameter("x");
  NodePtr w = top->add_parameter("w");
  as_parameter(w)->bind(Tensor::zeros({4, 3}, DType::float32));
  FuncGraph* dense = m.add_graph("dense", top);
  NodePtr in = dense->add_parameter("in");
  NodePtr mm = uop(dense, "matmul", {in, w});
  dense->set_output(
      dense->prim(Prim::kMakeTuple, {uop(dense, "mul", {mm, dense->constant(integer(1))}), mm}));
  FuncGraph* act = m.add_graph("act", top);
  NodePtr u = act->add_parameter("u"), v = act->add_parameter("v");
  act->set_output(uop(act, "add", {u, v}));
  NodePtr d = call(top, dense, {x});
  NodePtr p =
      top->prim(Prim::kPartial, {top->constant(graph_value(act)),
                                 top->prim(Prim::kTupleGetItem, {d, top->constant(integer(0))})});
  NodePtr o = top->apply({p, top->prim(Prim::kTupleGetItem, {d, top->constant(integer(1))})});
  top->set_output(top->prim(Prim::kMakeTuple, {uop(top, "exp", {o})}));
  FuncGraph* g = analysis::specialize(m, top, {tensor({kDynamic, 4})});
  auto dir = std::filesystem::temp_directory_path() / "mycel_dump_ir_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  OptOptions opts = checked();
  opts.dump_dir = dir.string();
  opt::optimize(g, opts);
  EXPECT_EQ(text(g),
            "graph @net.1(%x: f32[?, 4], %w: f32[4, 3]) {\n"
            "  %1: f32[?, 3] = matmul(%x, %w)\n"
            "  %2: f32[?, 3] = add(%1, %1)\n"
            "  %3: f32[?, 3] = exp(%2)\n"
            "  %4: (f32[?, 3],) = make_tuple(%3)\n"
            "  return %4\n"
            "}\n");
  EXPECT_TRUE(g->used_graphs().empty()) << "no graph calls, closures or partials left";
  EXPECT_EQ(text(g).find("tuple_getitem"), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(dir / "000_input.ir"));
  EXPECT_TRUE(std::filesystem::exists(dir / "001_inline_calls.ir"));
  std::filesystem::remove_all(dir);
}

TEST(Opt, PipelineKeepsDataDependentRecursion) {
  // def f(n): return f(n - 1) if n > 0 else n   (n a tensor): stays a loop, IR stays valid
  Module m;
  FuncGraph* f = m.add_graph("f");
  NodePtr n = f->add_parameter("n");
  FuncGraph* t = m.add_graph("t", f);
  t->set_output(call(t, f, {uop(t, "sub", {n, t->constant(integer(1))})}));
  FuncGraph* e = m.add_graph("e", f);
  e->set_output(n);
  f->set_output(f->apply(
      {f->prim(Prim::kSwitch, {uop(f, "greater", {n, f->constant(integer(0))}),
                               f->constant(graph_value(t)), f->constant(graph_value(e))})}));
  FuncGraph* g = analysis::specialize(m, f, {tensor({}, DType::int32)});
  opt::optimize(g, checked());
  std::string s = text(g);
  EXPECT_NE(s.find("switch(%1, @t.2, @e.2)"), std::string::npos) << s;
  EXPECT_NE(s.find("@f.1(%4)"), std::string::npos) << s;
}

}  // namespace
}  // namespace mycel::ir
