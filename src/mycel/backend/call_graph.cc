// The call graph: argument checks at every call, and its strongly connected components --
// a component with a cycle is recursion, whose frames the VM saves around non-tail calls.
#include <cstdlib>
#include <functional>
#include <string>

#include "mycel/backend/detail.h"
#include "mycel/backend/fuse_bias_grad.h"
#include "mycel/backend/fuse_util.h"

namespace mycel::backend {
namespace detail {
namespace {

std::string where(const ir::Node* n) {
  if (!n || !n->loc().known()) return "";
  return " at " + n->loc().str() + (n->loc().text ? ": " + *n->loc().text : "");
}

// A function whose result is a call of functions that all raise raises too (a helper that
// raises, called last and not inlined).
void mark_raising(ProgramImpl& p) {
  for (bool changed = true; changed;) {
    changed = false;
    for (Function& f : p.fns) {
      if (f.raises) continue;
      for (const Instr& in : f.code) {
        if (in.code != Code::kCall || in.node != f.output_node) continue;
        bool all = true;
        for (const Target& t : in.targets) all = all && p.fns[t.fn].raises;
        if (all) f.raises = changed = true;
      }
    }
  }
}

void check_calls(ProgramImpl& p) {
  for (Function& f : p.fns)
    for (Instr& in : f.code)
      for (Target& t : in.targets) {
        const Function& c = p.fns[t.fn];
        MYCEL_CHECK(t.args.size() == c.params.size(), TypeError, "[backend] @", f.name, " calls @",
                    c.name, " with ", t.args.size(), " values, it takes ", c.params.size(),
                    where(in.node));
        for (size_t k = 0; k < t.args.size(); ++k)
          MYCEL_CHECK(f.regs[t.args[k]].type == c.regs[c.params[k]].type, TypeError, "[backend] @",
                      f.name, " passes a ", reg_type_name(f.regs[t.args[k]].type),
                      " as parameter '", c.param_names[k], "' of @", c.name, " (expects ",
                      reg_type_name(c.regs[c.params[k]].type), ")", where(in.node));
        MYCEL_CHECK(c.raises || in.out.size() == c.outputs.size(), TypeError, "[backend] @", c.name,
                    " returns ", c.outputs.size(), " values, its call in @", f.name, " expects ",
                    in.out.size(), where(in.node));
      }
}

// Tarjan's strongly connected components over call edges: a cycle is recursion.
void find_cycles(ProgramImpl& p) {
  int n = static_cast<int>(p.fns.size()), counter = 0, sccs = 0;
  std::vector<int> idx(n, -1), low(n, 0), stack;
  std::vector<char> on(n, 0);
  std::function<void(int)> visit = [&](int v) {
    idx[v] = low[v] = counter++;
    stack.push_back(v);
    on[v] = 1;
    for (const Instr& in : p.fns[v].code)
      for (const Target& t : in.targets) {
        if (idx[t.fn] < 0) {
          visit(t.fn);
          low[v] = std::min(low[v], low[t.fn]);
        } else if (on[t.fn]) {
          low[v] = std::min(low[v], idx[t.fn]);
        }
      }
    if (low[v] != idx[v]) return;
    int members = 0;
    for (int w = -1; w != v;) {
      w = stack.back();
      stack.pop_back();
      on[w] = 0;
      p.fns[w].scc = sccs;
      ++members;
    }
    p.num_scc_members.push_back(members);
    ++sccs;
  };
  for (int v = 0; v < n; ++v)
    if (idx[v] < 0) visit(v);
  for (Function& f : p.fns) {
    f.recursive = p.num_scc_members[f.scc] > 1;
    for (const Instr& in : f.code)
      for (const Target& t : in.targets)
        if (t.fn == &f - p.fns.data()) f.recursive = true;
  }
  for (Function& f : p.fns)
    for (Instr& in : f.code)
      for (Target& t : in.targets) t.scc_call = p.fns[t.fn].scc == f.scc && f.recursive;
}

}  // namespace

void analyse_calls(ProgramImpl& p) {
  mark_raising(p);
  check_calls(p);
  find_cycles(p);
}

}  // namespace detail

bool CompileOptions::default_fuse() {
  const char* v = std::getenv("MYCEL_FUSE");
  return !(v && v[0] == '0');
}

CompileOptions::Layout CompileOptions::default_layout() {
  const char* v = std::getenv("MYCEL_LAYOUT");
  if (v && v[0] == '0') return Layout::kOff;
  if (v && std::string(v) == "all") return Layout::kAlways;
  return Layout::kAuto;
}

size_t CompileOptions::default_max_plans() {
  const char* v = std::getenv("MYCEL_MAX_SHAPE_PLANS");
  long n = v ? std::strtol(v, nullptr, 10) : 0;
  return n > 0 ? static_cast<size_t>(n) : 16;
}

std::unique_ptr<Program> compile(const ir::FuncGraph& g, const CompileOptions& opts) {
  MYCEL_CHECK(opts.max_plans >= 1, ValueError,
              "[backend] CompileOptions::max_plans must be >= 1, got ", opts.max_plans);
  auto impl = std::make_unique<detail::ProgramImpl>();
  impl->max_plans = opts.max_plans;
  detail::lower(g, *impl);
  if (opts.fuse) {
    detail::fold_batch_norm(*impl);
    detail::fuse_post_ops(*impl);
    detail::fuse_conv_pool(*impl);
    detail::fuse_reduce_te(*impl);  // unless MYCEL_TE_FUSION=0
    detail::fuse_elementwise(*impl);
    detail::fuse_mask_product(*impl);
    detail::fold_head_transposes(*impl);
    detail::fuse_add_norm_grad(*impl);
  }
  if (opts.layout != CompileOptions::Layout::kOff)
    detail::assign_layouts(*impl, opts.layout == CompileOptions::Layout::kAlways);
  detail::analyse_calls(*impl);
  if (opts.fuse) {
    detail::assign_in_place(*impl);
    detail::fuse_matmul_update(*impl);
    detail::keep_master_copies(*impl);
    detail::fuse_dense_grad_pair(*impl);
    detail::fuse_bias_grad(*impl);
  }
  for (int r : impl->fns[0].params)
    MYCEL_CHECK(impl->fns[0].regs[r].type == detail::RegType::kTensor, NotSupported,
                "[backend] graph @", g.name(),
                " takes a Python scalar parameter; Program inputs "
                "must be tensors (analysis specializes scalars as constants)");
  // A fully static graph gets its plan now, so the first run plans nothing.
  std::vector<TensorMeta> metas;
  bool is_static = true;
  for (int r : impl->fns[0].params) {
    const TensorMeta& m = impl->fns[0].regs[r].meta;
    for (int64_t d : m.shape) is_static = is_static && d != ir::kDynamic;
    metas.push_back(m);
  }
  if (is_static) {
    std::vector<Shape> sig;
    for (const auto& m : metas) sig.push_back(m.shape);
    impl->plans[sig] = detail::build_plan(*impl, metas);
    impl->plan_lru.push_back(sig);
  }
  return std::make_unique<Program>(std::move(impl));
}

}  // namespace mycel::backend
