// Placement of split collectives (backend/place_split.cc): a start moves, with the ops that only
// feed it, to just after what it needs; a wait moves to just before its first user; the program
// still computes what eager calls compute.
#include "backend_util.h"
#include "mycel/parallel/communicator.h"

namespace mycel::backend::testing {
namespace {

size_t at(const std::string& dump, const std::string& what, bool last = false) {
  size_t p = last ? dump.rfind(what) : dump.find(what);
  EXPECT_NE(p, std::string::npos) << what << " not in\n" << dump;
  return p;
}

TEST(PlaceSplit, EarlyGradientStartsBeforeTheLongChainAndWaitsSinkToTheirUsers) {
  parallel::init();  // a world of one: the split allreduce is a copy
  Module m;
  FuncGraph* g = m.add_graph("step");
  NodePtr x = param(g, "x", tensor_abs({4, 8}));
  // A backward in miniature: a chain neg -> exp -> sin whose values the step also returns; the
  // "early" gradient tanh(neg) is ready after the chain's first op, the "late" one cos(sin) at
  // its end. The output lists the late one first, so a depth-first schedule would start the
  // early bucket only after the whole chain.
  NodePtr n1 = op(g, "neg", {x});
  NodePtr n3 = op(g, "sin", {op(g, "exp", {n1})});
  NodePtr late = op(g, "cos", {n3}), early = op(g, "tanh", {n1});
  NodePtr r_late = op(g, "all_reduce_wait", {op(g, "all_reduce_start", {late})});
  NodePtr r_early = op(g, "all_reduce_wait", {op(g, "all_reduce_start", {early})});
  NodePtr a = op(g, "mul", {r_late, r_late}), b = op(g, "mul", {r_early, r_early});
  g->set_output(prim(g, Prim::kMakeTuple, {a, b, n3},
                     std::make_shared<AbstractTuple>(
                         std::vector<AbstractPtr>{a->abstract(), b->abstract(), n3->abstract()})));
  auto prog = compile(*g, CompileOptions{false});
  const std::string d = prog->dump();
  SCOPED_TRACE(d);
  // neg; tanh and its start; the rest of the chain; cos and its start; each wait just before
  // its mul
  EXPECT_LT(at(d, "neg"), at(d, "tanh"));
  EXPECT_LT(at(d, "tanh"), at(d, "all_reduce_start"));
  EXPECT_LT(at(d, "all_reduce_start"), at(d, "exp"));
  EXPECT_LT(at(d, "sin"), at(d, "cos"));
  EXPECT_LT(at(d, "cos"), at(d, "all_reduce_start", true));
  EXPECT_LT(at(d, "all_reduce_start", true), at(d, "all_reduce_wait"));
  EXPECT_LT(at(d, "all_reduce_wait"), at(d, "mul"));
  EXPECT_LT(at(d, "mul"), at(d, "all_reduce_wait", true));
  EXPECT_LT(at(d, "all_reduce_wait", true), at(d, "mul", true));

  Tensor xv = randn({4, 8}, 5);
  auto out = prog->run({xv});
  ASSERT_EQ(out.size(), 3u);
  Tensor nx = eager("neg", {xv})[0], s = eager("sin", {eager("exp", {nx})[0]})[0];
  Tensor l = eager("cos", {s})[0], e = eager("tanh", {nx})[0];
  expect_same(out[2], s);
  expect_same(out[0], eager("mul", {l, l})[0]);
  expect_same(out[1], eager("mul", {e, e})[0]);
  EXPECT_EQ(parallel::pending_allreduces(), 0);
}

}  // namespace
}  // namespace mycel::backend::testing
