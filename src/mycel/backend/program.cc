// Program: input checks, the plan cache keyed by the input shapes, output copy-out, stats, dump.
#include <cstring>
#include <sstream>

#include "mycel/backend/detail.h"
#include "mycel/core/cpu_keeper.h"
#include "mycel/insight/insight.h"

namespace mycel::backend {

using detail::Code;
using detail::RegType;

Program::Program(std::unique_ptr<detail::ProgramImpl> impl) : impl_(std::move(impl)) {
  impl_->frames.reserve(64);
  impl_->last_sig.reserve(impl_->fns[0].params.size());
  if (impl_->plans.size() == 1) {
    impl_->plan = impl_->plans.begin()->second.get();
    impl_->last_sig = impl_->plans.begin()->first;
  }
}

Program::~Program() = default;

namespace {

// Checks inputs against the top graph's parameter abstracts; kDynamic dims accept any size.
void check_inputs(const detail::Function& top, const std::vector<Tensor>& inputs) {
  if (inputs.size() != top.params.size()) {
    std::ostringstream names;
    for (size_t k = 0; k < top.param_names.size(); ++k)
      names << (k ? ", " : "") << top.param_names[k];
    MYCEL_THROW(TypeError, "[graph @", top.name, "] takes ", top.params.size(), " inputs (",
                names.str(), "), got ", inputs.size());
  }
  for (size_t k = 0; k < inputs.size(); ++k) {
    const TensorMeta& want = top.regs[top.params[k]].meta;
    const Tensor& x = inputs[k];
    const std::string& name = top.param_names[k];
    MYCEL_CHECK(x.defined(), TypeError, "[graph @", top.name, "] input '", name,
                "' must be a tensor, got None");
    MYCEL_CHECK(x.dtype() == want.dtype, TypeError, "[graph @", top.name, "] input '", name,
                "' expects dtype ", dtype_name(want.dtype), ", got ", dtype_name(x.dtype()));
    bool ok = x.shape().size() == want.shape.size();
    for (size_t d = 0; ok && d < want.shape.size(); ++d)
      ok = want.shape[d] == ir::kDynamic || want.shape[d] == x.shape()[d];
    if (!ok) {
      std::ostringstream w;
      w << "(";
      for (size_t d = 0; d < want.shape.size(); ++d)
        w << (d ? ", " : "")
          << (want.shape[d] == ir::kDynamic ? std::string("?") : std::to_string(want.shape[d]));
      w << (want.shape.size() == 1 ? ",)" : ")");
      MYCEL_THROW(ValueError, "[graph @", top.name, "] input '", name, "' expects shape ", w.str(),
                  ", got ", shape_str(x.shape()));
    }
  }
}

bool same_sig(const std::vector<Shape>& sig, const std::vector<Tensor>& inputs) {
  if (sig.size() != inputs.size()) return false;
  for (size_t k = 0; k < inputs.size(); ++k)
    if (sig[k] != inputs[k].shape()) return false;
  return true;
}

// The plan for the inputs' shapes: cached, most recently used last; past max_plans the least
// recently used one is dropped (never the one returned).
detail::Plan* plan_for(detail::ProgramImpl& p, const std::vector<Tensor>& inputs) {
  std::vector<Shape> sig;
  for (const Tensor& x : inputs) sig.push_back(x.shape());
  auto it = p.plans.find(sig);
  if (it != p.plans.end()) {
    for (auto l = p.plan_lru.begin(); l != p.plan_lru.end(); ++l)
      if (*l == sig) {
        p.plan_lru.splice(p.plan_lru.end(), p.plan_lru, l);
        break;
      }
  } else {
    while (p.plans.size() >= p.max_plans && !p.plan_lru.empty()) {
      p.plans.erase(p.plan_lru.front());
      p.plan_lru.pop_front();
    }
    std::vector<TensorMeta> metas;
    for (const Tensor& x : inputs) metas.push_back(x.meta());
    it = p.plans.emplace(sig, detail::build_plan(p, metas)).first;
    p.plan_lru.push_back(sig);
  }
  p.last_sig = std::move(sig);
  return it->second.get();
}

}  // namespace

namespace {
// The profiler's step trace and the debugger's step ends: an outermost run is one step (a
// Program that runs inside another's kernel, e.g. a nested jit, is part of its step).
thread_local int t_run_depth = 0;
void run_hooked(detail::ProgramImpl& p) {
  struct Depth {
    Depth() { ++t_run_depth; }
    ~Depth() { --t_run_depth; }
  } depth;
  const bool outer = t_run_depth == 1;
  const int64_t t0 = insight::profiler::now_ns();
  detail::execute(p, *p.plan);
  if (!outer) return;
  if (insight::profiler::on())
    insight::profiler::span("step", "step", t0, insight::profiler::now_ns(),
                            static_cast<int64_t>(p.plan->arena_bytes));
  if (insight::debugger::on()) insight::debugger::step_end();
}
}  // namespace

std::vector<Tensor> Program::run(const std::vector<Tensor>& inputs) {
  std::vector<Tensor> outs;
  run(inputs, outs);
  return outs;
}

namespace {

// The outermost run on this thread keeps the pool's CPUs awake from its start until a linger
// after its end (cpu_keeper.h), also when it throws.
class KeepAwake {
 public:
  KeepAwake() {
    if (depth_++ == 0) keep_cpus_awake(true);
  }
  ~KeepAwake() {
    if (--depth_ == 0) keep_cpus_awake(false);
  }
  KeepAwake(const KeepAwake&) = delete;
  KeepAwake& operator=(const KeepAwake&) = delete;

 private:
  static thread_local int depth_;
};
thread_local int KeepAwake::depth_ = 0;

}  // namespace

void Program::run(const std::vector<Tensor>& inputs, std::vector<Tensor>& outs) {
  detail::ProgramImpl& p = *impl_;
  const KeepAwake awake;
  std::lock_guard<std::mutex> lock(p.run_mutex);
  const detail::Function& top = p.fns[0];
  check_inputs(top, inputs);
  if (!p.plan || !same_sig(p.last_sig, inputs)) p.plan = plan_for(p, inputs);
  detail::FnPlan& fp = p.plan->fns[0];
  for (size_t k = 0; k < inputs.size(); ++k) fp.regs[top.params[k]].t = inputs[k];
  p.num_launches = 0;
  if (insight::hooks_on()) [[unlikely]] {
    run_hooked(p);
  } else {
    detail::execute(p, *p.plan);
  }

  outs.resize(top.outputs.size());
  // A caller's tensor of the right meta that nobody else holds takes the value in place.
  auto reusable = [&](const Tensor& o, const Shape& s, DType d) {
    return o.defined() && o.storage().use_count() == 1 && o.offset() == 0 && o.dtype() == d &&
           o.shape() == s;
  };
  for (size_t k = 0; k < top.outputs.size(); ++k) {
    const int r = top.outputs[k];
    const detail::Reg& v = fp.regs[r];
    Tensor& o = outs[k];
    switch (top.regs[r].type) {
      case RegType::kTensor:
        if (v.t.storage() == p.plan->arena) {  // copy out: the arena is reused by the next run
          if (!reusable(o, v.t.shape(), v.t.dtype())) o = Tensor::empty(v.t.meta());
          std::memcpy(o.data(), v.t.data(), v.t.nbytes());
        } else {
          o = v.t;
        }
        break;
      case RegType::kInt:  // exact: through a double, ints above 2**53 would round
        if (!reusable(o, Shape{}, DType::int64)) o = Tensor::empty({}, DType::int64);
        *o.data<int64_t>() = v.i;
        break;
      case RegType::kFloat:
        if (!reusable(o, Shape{}, DType::float64)) o = Tensor::empty({}, DType::float64);
        *o.data<double>() = v.f;
        break;
      case RegType::kBool:
        if (!reusable(o, Shape{}, DType::bool_)) o = Tensor::empty({}, DType::bool_);
        *o.data<bool>() = v.i != 0;
        break;
      case RegType::kNone:
        o = Tensor();
        break;
    }
  }
  // Drop references to the caller's inputs so they are not kept alive by the Program (the
  // registers keep their shape buffers: the next run's inputs are assigned without allocating).
  std::vector<Tensor>& blanks = p.plan->input_blanks;
  if (blanks.size() != inputs.size()) {
    blanks.clear();
    for (const Tensor& x : inputs) blanks.emplace_back(nullptr, 0, x.shape(), x.dtype());
  }
  for (size_t k = 0; k < inputs.size(); ++k) fp.regs[top.params[k]].t = blanks[k];
}

ProgramStats Program::stats() const {
  std::lock_guard<std::mutex> lock(impl_->run_mutex);
  const detail::ProgramImpl& p = *impl_;
  ProgramStats s;
  s.num_plans = p.plans.size();
  s.num_fused = p.num_fused;
  s.num_kernel_launches = p.num_launches;
  for (size_t f = 0; f < p.fns.size(); ++f)
    for (size_t i = 0; i < p.fns[f].code.size(); ++i)
      if (!p.plan || !p.plan->fns[f].elided[i]) ++s.num_instructions;
  if (p.plan) {
    s.arena_bytes = p.plan->arena_bytes;
    for (const auto& fp : p.plan->fns) s.num_inplace += fp.num_inplace;
  }
  return s;
}

std::string Program::dump() const {
  const detail::ProgramImpl& p = *impl_;
  std::ostringstream os;
  auto regs = [&](const std::vector<int>& rs) {
    std::string s;
    for (size_t k = 0; k < rs.size(); ++k)
      s += (k ? ", " : "") + (rs[k] < 0 ? std::string("None") : "r" + std::to_string(rs[k]));
    return s;
  };
  for (const detail::Function& f : p.fns) {
    os << "function @" << f.name << "(" << regs(f.params) << ")"
       << (f.recursive ? "  # recursive" : "") << "\n";
    for (const detail::Instr& in : f.code) {
      os << "  " << (in.out.empty() ? "" : regs(in.out) + " = ");
      switch (in.code) {
        case Code::kKernel:
          os << in.op->name << "(" << regs(in.in) << ")";
          for (size_t k = 0, n = 0; k < in.out.size(); ++k)
            if (f.regs[in.out[k]].alias_of >= 0)
              os << (n++ ? ", r" : "  # into r") << f.regs[in.out[k]].alias_of;
          break;
        case Code::kView:
          os << "view " << in.op->name << "(" << regs(in.in) << ")";
          break;
        case Code::kScalar:
          os << ir::prim_name(in.prim) << "(" << regs(in.in) << ")";
          break;
        case Code::kTensorToScalar:
          os << "tensor_to_scalar(" << regs(in.in) << ")";
          break;
        case Code::kScalarToTensor:
          os << "scalar_to_tensor(" << regs(in.in) << ", " << dtype_name(in.dtype) << ")";
          break;
        case Code::kDim:
          os << "dim(" << regs(in.in) << ", " << in.axis << ")";
          break;
        case Code::kSelect:
          os << "select(r" << in.cond << ", [" << regs(in.in) << "], [" << regs(in.in_b) << "])";
          break;
        case Code::kPrint:
          os << "print(" << regs(in.in) << ")";
          break;
        case Code::kAssign:
          os << "assign(" << regs(in.in) << ")";
          break;
        case Code::kCopy:
          os << "copy(" << regs(in.in) << ")";
          break;
        case Code::kRaise:
          os << "raise " << in.raised->repr();
          break;
        case Code::kCall:
          os << (in.tail ? "tail_call " : "call ");
          if (in.targets.size() == 2) os << "switch(r" << in.cond << ") ";
          for (size_t t = 0; t < in.targets.size(); ++t)
            os << (t ? " | " : "") << "@" << p.fns[in.targets[t].fn].name << "("
               << regs(in.targets[t].args) << ")";
          break;
      }
      os << "\n";
    }
    os << "  return " << regs(f.outputs) << "\n";
  }
  return os.str();
}

}  // namespace mycel::backend
