// Recording -> compiled gradient program, cached by structure (grad_cache.h).
#include "mycel/pynative/grad_cache.h"

#include "mycel/analysis/analysis.h"
#include "mycel/core/error.h"
#include "mycel/opt/opt.h"

namespace mycel::pynative {

CompiledGrad& GradCache::get(Recording& r, const ir::AbstractPtr& sens) {
  for (int p : spec_.positions)
    if (p < 0 || static_cast<size_t>(p) >= r.num_arguments)
      MYCEL_THROW(ValueError, "[grad] grad_position ", p, " is out of range: the function takes ",
                  r.num_arguments, " inputs");
  std::string key = r.key;
  if (sens) key += "|sens:" + analysis::signature_key({sens});
  auto it = map_.find(key);
  if (it != map_.end()) {
    ++hits_;
    return it->second;
  }
  ad::GradSpec spec = spec_;
  spec.weight_params = r.weight_params;
  ir::Module& m = *r.module;
  // Differentiate the specialized, optimized recording, then specialize the gradient graph.
  ir::FuncGraph* f = analysis::specialize(m, r.graph, r.input_abstracts);
  opt::optimize(f);
  ir::FuncGraph* g = ad::grad_graph(f, spec);
  std::vector<ir::AbstractPtr> abs = r.input_abstracts;
  if (spec.sens_param) {
    if (!sens)
      MYCEL_THROW(TypeError, "[grad] sens_param=True needs the sensitivity as the last argument");
    abs.push_back(sens);
  }
  CompiledGrad c;  // built fully before it is cached, so a failed compile leaves nothing behind
  c.graph = analysis::specialize(m, g, abs);
  opt::optimize(c.graph);
  c.program = backend::compile(*c.graph);
  c.keep_alive = std::move(r.keep_alive);
  c.module = std::move(r.module);
  ++compiles_;
  return map_[key] = std::move(c);
}

std::vector<Tensor> GradCache::run(CompiledGrad& c, const Recording& r, std::vector<Tensor> args,
                                   const std::vector<Tensor>& sens) {
  args.insert(args.end(), r.captured.begin(), r.captured.end());
  args.insert(args.end(), sens.begin(), sens.end());
  return c.program->run(args);
}

}  // namespace mycel::pynative
