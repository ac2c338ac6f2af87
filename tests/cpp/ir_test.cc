// IR: construction, the text printer, free variables of nested graphs, and the checker.
#include <gtest/gtest.h>

#include "mycel/ir/checker.h"
#include "mycel/ir/printer.h"

namespace mycel::ir {
namespace {

NodePtr op(FuncGraph* g, const std::string& name, std::vector<NodePtr> args,
           std::map<std::string, AttrValue> attrs = {}) {
  const OpDef& d = Registry::get().at(name);
  args.insert(args.begin(), g->constant(op_value(&d, make_attrs(d, attrs))));
  return g->apply(std::move(args));
}

TEST(IR, PrintsStraightLineGraph) {
  Module m;
  FuncGraph* f = m.add_graph("f");
  NodePtr x = f->add_parameter("x"), y = f->add_parameter("y");
  NodePtr s = op(f, "add", {x, y});
  NodePtr r = op(f, "mul", {s, f->constant(floating(2.0))});
  f->set_output(f->prim(Prim::kMakeTuple, {r, s}));
  EXPECT_EQ(print(*f),
            "graph @f(%x, %y) {\n"
            "  %1 = add(%x, %y)\n"
            "  %2 = mul(%1, 2.0)\n"
            "  %3 = make_tuple(%2, %1)\n"
            "  return %3\n"
            "}\n");
  EXPECT_TRUE(check(*f).empty());
}

TEST(IR, PrintsAttributesThatDifferFromDefaults) {
  Module m;
  FuncGraph* f = m.add_graph("f");
  NodePtr x = f->add_parameter("x");
  f->set_output(op(f, "matmul", {x, x}, {{"transpose_b", true}}));
  EXPECT_NE(print(*f).find("matmul[transpose_b=True](%x, %x)"), std::string::npos) << print(*f);
}

TEST(IR, FreeVariablesOfNestedGraphs) {
  // def f(x): a = x * x; def g(y): return y + a; return g(x)
  Module m;
  FuncGraph* f = m.add_graph("f");
  NodePtr x = f->add_parameter("x");
  NodePtr a = op(f, "mul", {x, x});
  FuncGraph* g = m.add_graph("g", f);
  NodePtr y = g->add_parameter("y");
  g->set_output(op(g, "add", {y, a}));
  f->set_output(f->apply({f->constant(graph_value(g)), x}));
  auto fv = g->free_variables();
  ASSERT_EQ(fv.size(), 1u);
  EXPECT_EQ(fv[0], a);
  EXPECT_TRUE(f->free_variables().empty());
  EXPECT_TRUE(check(*f).empty());
  EXPECT_EQ(print(*f),
            "graph @f(%x) {\n"
            "  %1 = mul(%x, %x)\n"
            "  %2 = @g(%x)\n"
            "  return %2\n"
            "}\n"
            "\n"
            "graph @g(%y) {  # in @f\n"
            "  %3 = add(%y, %1)\n"
            "  return %3\n"
            "}\n");
}

TEST(IR, FreeVariablesPropagateThroughIntermediateGraphs) {
  // The innermost graph uses f's node: g (between them) must list it too.
  Module m;
  FuncGraph* f = m.add_graph("f");
  NodePtr x = f->add_parameter("x");
  FuncGraph* g = m.add_graph("g", f);
  FuncGraph* h = m.add_graph("h", g);
  h->set_output(op(h, "neg", {x}));
  g->set_output(g->apply({g->constant(graph_value(h))}));
  f->set_output(f->apply({f->constant(graph_value(g))}));
  ASSERT_EQ(g->free_variables().size(), 1u);
  EXPECT_EQ(g->free_variables()[0], x);
  EXPECT_TRUE(f->free_variables().empty());
}

TEST(IR, NodesUsedOnlyByNestedGraphsAreScheduledInTheirOwnGraph) {
  // def f(x, c): y = x + 1; return switch(c, g_true, g_false)() with g_true using y.
  Module m;
  FuncGraph* f = m.add_graph("f");
  NodePtr x = f->add_parameter("x"), c = f->add_parameter("c");
  NodePtr y = op(f, "add", {x, f->constant(integer(1))});
  FuncGraph* t = m.add_graph("t", f);
  FuncGraph* e = m.add_graph("e", f);
  t->set_output(op(t, "neg", {y}));
  e->set_output(x);
  NodePtr sw =
      f->prim(Prim::kSwitch, {c, f->constant(graph_value(t)), f->constant(graph_value(e))});
  f->set_output(f->apply({sw}));
  auto order = f->toposort();
  ASSERT_EQ(order.size(), 3u);
  EXPECT_EQ(order[0], y);  // before the switch whose branch reads it
  EXPECT_EQ(order.back(), f->output());
  std::string text = print(*f);
  EXPECT_NE(text.find("%1 = add(%x, 1)"), std::string::npos) << text;
  EXPECT_NE(text.find("%4 = neg(%1)"), std::string::npos) << text;
}

TEST(IR, RecursiveGraphIsPrintedOnce) {
  Module m;
  FuncGraph* f = m.add_graph("f");
  NodePtr n = f->add_parameter("n");
  FuncGraph* t = m.add_graph("f_true", f);
  FuncGraph* e = m.add_graph("f_false", f);
  t->set_output(
      t->apply({t->constant(graph_value(f)), op(t, "sub", {n, t->constant(integer(1))})}));
  e->set_output(n);
  NodePtr c = op(f, "greater", {n, f->constant(integer(0))});
  NodePtr sw =
      f->prim(Prim::kSwitch, {c, f->constant(graph_value(t)), f->constant(graph_value(e))});
  f->set_output(f->apply({sw}));
  std::string s = print(*f);
  EXPECT_EQ(s.find("graph @f("), s.rfind("graph @f("));
  EXPECT_NE(s.find("switch(%1, @f_true, @f_false)"), std::string::npos) << s;
  EXPECT_TRUE(check(*f).empty()) << print(*f);
}

TEST(IR, CheckerFindsScopeAndArityErrors) {
  Module m;
  FuncGraph* f = m.add_graph("f");
  FuncGraph* other = m.add_graph("other");
  NodePtr foreign = other->add_parameter("z");
  f->set_output(f->prim(Prim::kTupleGetItem, {foreign}));
  auto errs = check(*f);
  ASSERT_EQ(errs.size(), 2u);
  EXPECT_NE(errs[0].find("does not enclose"), std::string::npos) << errs[0];
  EXPECT_NE(errs[1].find("tuple_getitem takes 2 arguments, got 1"), std::string::npos) << errs[1];
  EXPECT_THROW(verify(*f, "test"), RuntimeError);
}

// The LSTM enclosure error ("graph @Wrap1.1 uses nodes of graph @_run_while.1 that does not
// enclose it") came from a graph constant naming a graph nested in a non-enclosing graph: every
// node was in scope, so the checker passed and only the backend noticed. The checker now names
// the pass that makes such a reference.
TEST(IR, CheckerFindsNestedGraphReferencedOutsideItsParent) {
  Module m;
  FuncGraph* loop = m.add_graph("loop");
  NodePtr i = loop->add_parameter("i");
  FuncGraph* after = m.add_graph("loop_after", loop);
  after->set_output(op(after, "neg", {i}));  // reads the loop's parameter: a free variable
  loop->set_output(loop->apply({loop->constant(graph_value(after))}));
  EXPECT_TRUE(check(*loop).empty()) << print(*loop);

  FuncGraph* top = m.add_graph("top");
  NodePtr x = top->add_parameter("x");
  NodePtr r = top->apply({top->constant(graph_value(loop)), x});
  top->set_output(
      top->prim(Prim::kMakeTuple, {r, top->apply({top->constant(graph_value(after))})}));
  auto errs = check(*top);
  ASSERT_EQ(errs.size(), 1u) << print(*top);
  EXPECT_NE(errs[0].find("@top: refers to @loop_after, nested in @loop, which does not enclose it"),
            std::string::npos)
      << errs[0];
}

TEST(IR, ModuleNamesAreUniqueAndGarbageIsCollected) {
  Module m;
  FuncGraph* a = m.add_graph("f");
  FuncGraph* b = m.add_graph("f");
  EXPECT_EQ(a->name(), "f");
  EXPECT_EQ(b->name(), "f.1");
  a->set_output(a->constant(integer(1)));
  b->set_output(b->constant(integer(2)));
  m.collect_garbage({a});
  ASSERT_EQ(m.graphs().size(), 1u);
  EXPECT_EQ(m.graphs()[0].get(), a);
}

TEST(IR, ValuesCompareStructurally) {
  ValueEq eq;
  EXPECT_TRUE(eq(tuple({integer(1), string("a")}), tuple({integer(1), string("a")})));
  EXPECT_FALSE(eq(tuple({integer(1)}), list({integer(1)})));
  EXPECT_EQ(tuple({integer(1), floating(2.5)})->repr(), "(1, 2.5)");
  EXPECT_EQ(tuple({integer(1)})->repr(), "(1,)");
  EXPECT_EQ(ValueHash()(integer(7)), ValueHash()(integer(7)));
}

}  // namespace
}  // namespace mycel::ir
