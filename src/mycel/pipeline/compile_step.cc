// The compile pipeline as named stages: specialize, fold constant inputs, optimize, (shard for
// semi-auto parallel,) expand inner gradients, (differentiate and again), lower. Each optimize call
// dumps to its own folder when MYCEL_DUMP_IR is set, so the dumps of one step do not overwrite each
// other.
#include <atomic>
#include <cstdlib>

#include "mycel/analysis/analysis.h"
#include "mycel/core/error.h"
#include "mycel/pipeline/pipeline.h"
#include "mycel/pipeline/semi_auto.h"

namespace mycel::pipeline {

namespace {

std::atomic<int64_t> g_compiles{0};

// Optimizer options for one stage: the dump folder gets the graph's and the stage's name.
opt::OptOptions stage(const Options& o, const ir::FuncGraph& g, const char* name) {
  opt::OptOptions s = o.opt;
  if (!s.dump_dir.empty()) s.dump_dir += "/" + g.name() + "." + name;
  if (!s.dump_dir.empty()) std::system(("mkdir -p '" + s.dump_dir + "'").c_str());
  return s;
}

// Gradients taken inside the graph become calls of gradient graphs, one round per nesting level;
// each round specializes and optimizes the whole graph again.
ir::FuncGraph* expand_grads(ir::Module& m, ir::FuncGraph* g,
                            const std::vector<ir::AbstractPtr>& abs, const Options& o) {
  // vmap calls inside the graph expand in the same rounds (vmap of grad, grad of vmap).
  auto expand = [](ir::FuncGraph* g) {
    bool v = ad::expand_vmap_calls(g);
    bool d = ad::expand_grad_calls(g);
    if (!v && !d && ad::has_vmap_calls(g))
      MYCEL_THROW(RuntimeError,
                  "[vmap] vmap calls inside the graph could not be expanded (a cycle?)");
    return v || d;
  };
  // Semi-auto parallel rewrites forward graphs before AD sees them (a no-op when off or done).
  for (int round = 0;; ++round) {
    parallel::shard_graph(g, parallel::semi_auto_config());
    if (!expand(g)) break;
    if (round >= o.max_grad_nesting)
      MYCEL_THROW(NotSupported, "[grad] gradients nested more than ", o.max_grad_nesting, " deep");
    g = analysis::specialize(m, g, abs);
    opt::optimize(g, stage(o, *g, "expand_grads"));
  }
  return g;
}

}  // namespace

Options Options::from_env() {
  Options o;
  if (const char* e = std::getenv("MYCEL_DUMP_IR")) o.opt.dump_dir = e;
  if (const char* e = std::getenv("MYCEL_MAX_PROGRAMS")) {
    long n = std::strtol(e, nullptr, 10);
    if (n > 0) o.max_programs = static_cast<size_t>(n);
  }
  return o;  // OptOptions and CompileOptions read their own variables in their defaults
}

Step compile_step(ir::FuncGraph* entry, const std::vector<ir::AbstractPtr>& inputs,
                  const ad::GradSpec* grad, const Options& o) {
  ++g_compiles;
  Step s;  // built fully before a cache holds it, so a failed compile leaves nothing behind
  s.module = std::make_unique<ir::Module>();
  ir::Module& m = *s.module;
  if (grad) {
    std::vector<ir::AbstractPtr> fabs = inputs;
    if (grad->sens_param) {
      if (fabs.empty())
        MYCEL_THROW(TypeError, "[grad] sens_param=True needs the sensitivity as the last argument");
      fabs.pop_back();
    }
    ir::FuncGraph* f = analysis::specialize(m, entry, fabs);
    opt::bind_constant_inputs(f, /*drop=*/false);  // scalars fold before differentiation
    opt::optimize(f, stage(o, *f, "forward"));
    // f is the differentiated forward (AUTO_PARALLEL searches it); its hints apply here too.
    parallel::shard_graph(f, parallel::semi_auto_config(), /*root_is_forward=*/true);
    f = expand_grads(m, f, fabs, o);
    s.graph = analysis::specialize(m, ad::grad_graph(f, *grad), inputs);
  } else {
    s.graph = analysis::specialize(m, entry, inputs);
  }
  opt::optimize(s.graph, stage(o, *s.graph, "step"));
  s.graph = expand_grads(m, s.graph, inputs, o);
  // the output structure the Program computes: after optimization, which may fold parts of it
  // (a tuple of Python scalars passed in and its None gradient)
  s.output = s.graph->output()->abstract();
  s.constant_args = opt::bind_constant_inputs(s.graph);
  s.program = backend::compile(*s.graph, o.backend);
  return s;
}

Step compile_transformed(ir::FuncGraph* entry, const std::vector<ir::AbstractPtr>& inputs,
                         const std::vector<Transform>& chain, const Options& o) {
  // The inputs each level's graph takes, outermost (the call's) first.
  const size_t n = chain.size();
  std::vector<std::vector<ir::AbstractPtr>> sig(n +
                                                1);  // sig[i + 1]: what transform i's graph takes
  std::vector<std::vector<ad::BatchAxes>> expanded(n);
  std::vector<int64_t> batch(n, 0);
  sig[n] = inputs;
  for (size_t i = n; i-- > 0;) {
    const Transform& t = chain[i];
    if (t.kind == Transform::Kind::kVmap) {
      sig[i] = ad::unbatched_inputs(sig[i + 1], t.vmap, batch[i], expanded[i]);
    } else {
      sig[i] = sig[i + 1];
      if (t.grad.sens_param) {
        if (sig[i].empty())
          MYCEL_THROW(TypeError,
                      "[grad] sens_param=True needs the sensitivity as the last argument");
        sig[i].pop_back();
      }
    }
  }
  ++g_compiles;
  Step s;
  s.module = std::make_unique<ir::Module>();
  ir::Module& m = *s.module;
  ir::FuncGraph* f = analysis::specialize(m, entry, sig[0]);
  opt::bind_constant_inputs(f, /*drop=*/false);
  opt::optimize(f, stage(o, *f, "forward"));
  f = expand_grads(m, f, sig[0], o);
  for (size_t i = 0; i < n; ++i) {
    const Transform& t = chain[i];
    ir::FuncGraph* g = t.kind == Transform::Kind::kGrad
                           ? ad::grad_graph(f, t.grad)
                           : ad::vmap_graph(f, t.vmap, expanded[i], sig[i + 1], batch[i]);
    f = analysis::specialize(m, g, sig[i + 1]);
    opt::optimize(f, stage(o, *f, t.kind == Transform::Kind::kGrad ? "grad" : "vmap"));
    f = expand_grads(m, f, sig[i + 1], o);
  }
  s.graph = f;
  s.output = s.graph->output()->abstract();
  s.constant_args = opt::bind_constant_inputs(s.graph);
  s.program = backend::compile(*s.graph, o.backend);
  return s;
}

void plan_sharding(ir::FuncGraph* entry, const std::vector<ir::AbstractPtr>& inputs,
                   const Options& o) {
  const parallel::SemiAutoConfig& cfg = parallel::semi_auto_config();
  if (!cfg.enabled) return;
  // The same stages compile_step runs on a gradient's forward before the pass, so the pass sees
  // the graph it will see inside the step; the module (and the rewritten graph) is dropped.
  ir::Module m;
  ir::FuncGraph* f = analysis::specialize(m, entry, inputs);
  opt::bind_constant_inputs(f, /*drop=*/false);
  opt::optimize(f, stage(o, *f, "plan"));
  parallel::shard_graph(f, cfg, /*root_is_forward=*/true);
}

int64_t compile_count() { return g_compiles.load(); }

Step* StepCache::find(const std::string& key) {
  auto it = map_.find(key);
  if (it == map_.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  order_.splice(order_.begin(), order_, it->second);
  return &it->second->second;
}

Step& StepCache::insert(const std::string& key, Step step) {
  auto it = map_.find(key);
  if (it != map_.end()) {
    order_.erase(it->second);
    map_.erase(it);
  }
  order_.emplace_front(key, std::move(step));
  map_[key] = order_.begin();
  set_capacity(capacity_);
  return order_.front().second;
}

void StepCache::set_capacity(size_t n) {
  capacity_ = n < 1 ? 1 : n;
  while (order_.size() > capacity_) {
    map_.erase(order_.back().first);
    order_.pop_back();
    ++evictions_;
  }
}

}  // namespace mycel::pipeline
