// Recording -> compiled gradient program, cached by structure (grad_cache.h).
#include "mycel/pynative/grad_cache.h"

#include "mycel/analysis/analysis.h"
#include "mycel/core/error.h"

namespace mycel::pynative {

GradCache::GradCache(ad::GradSpec spec)
    : spec_(std::move(spec)), options_(pipeline::Options::from_env()) {}

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
    order_.splice(order_.begin(), order_, it->second);
    return it->second->second;
  }
  ad::GradSpec spec = spec_;
  spec.weight_params = r.weight_params;
  std::vector<ir::AbstractPtr> inputs = r.input_abstracts;
  if (spec.sens_param) {
    if (!sens)
      MYCEL_THROW(TypeError, "[grad] sens_param=True needs the sensitivity as the last argument");
    inputs.push_back(sens);
  }
  CompiledGrad c;
  c.step = pipeline::compile_step(r.graph, inputs, &spec, options_);
  c.recording = std::move(r.module);
  c.keep_alive = std::move(r.keep_alive);
  ++compiles_;
  order_.emplace_front(key, std::move(c));
  map_[key] = order_.begin();
  while (order_.size() > options_.max_programs) {
    map_.erase(order_.back().first);
    order_.pop_back();
    ++evictions_;
  }
  return order_.front().second;
}

std::vector<Tensor> GradCache::run(CompiledGrad& c, const Recording& r, std::vector<Tensor> args,
                                   const std::vector<Tensor>& sens) {
  args.insert(args.end(), r.captured.begin(), r.captured.end());
  const std::vector<bool>& folded = c.step.constant_args;
  std::vector<Tensor> in;
  in.reserve(args.size() + sens.size());
  for (size_t i = 0; i < args.size(); ++i)
    if (i >= folded.size() || !folded[i]) in.push_back(std::move(args[i]));
  in.insert(in.end(), sens.begin(), sens.end());
  return c.step.program->run(in);
}

}  // namespace mycel::pynative
