// Shape plans: for concrete input metas, re-run every op's infer (so kDynamic dims become
// numbers), plan each function's frame, lay frames out in one arena and prebuild the tensors
// every kernel will see. Program caches one plan per input shape signature. A value whose size
// depends on the values (unique, masked_select) and what is computed from it keep their
// abstract shape here ("ragged"): the VM infers and allocates them at each run (vm.cc).
#include <algorithm>
#include <functional>

#include "mycel/backend/memory_plan.h"
#include "mycel/ir/abstract.h"
#include "mycel/ops/data_dependent.h"

namespace mycel::backend::detail {
namespace {

std::string where(const ir::Node* n) {
  if (!n || !n->loc().known()) return "";
  return " at " + n->loc().str() + (n->loc().text ? ": " + *n->loc().text : "");
}

// Concrete metas must agree with the compiler's abstract ones (a kDynamic dim matches anything).
bool fits(const TensorMeta& abstract, const TensorMeta& m) {
  if (abstract.dtype != m.dtype || abstract.shape.size() != m.shape.size()) return false;
  for (size_t d = 0; d < m.shape.size(); ++d)
    if (abstract.shape[d] != ir::kDynamic && abstract.shape[d] != m.shape[d]) return false;
  return true;
}

class ShapePlanner {
 public:
  ShapePlanner(ProgramImpl& p, Plan& plan) : p_(p), plan_(plan) {}

  void run(const std::vector<TensorMeta>& inputs) {
    for (size_t f = 0; f < p_.fns.size(); ++f) {
      const Function& fn = p_.fns[f];
      FnPlan& fp = plan_.fns[f];
      fp.meta.resize(fn.regs.size());
      fp.known.assign(fn.regs.size(), 0);
      fp.ragged.assign(fn.regs.size(), 0);
      for (size_t r = 0; r < fn.regs.size(); ++r)
        if (fn.regs[r].is_const && fn.regs[r].type == RegType::kTensor) set(f, r, fn.regs[r].meta);
    }
    for (size_t k = 0; k < inputs.size(); ++k) set(0, p_.fns[0].params[k], inputs[k]);
    // Rounds until every reachable register is known: results of a recursive call become
    // known only once the callee's base case has been planned.
    for (int round = 0; round < 16; ++round) {
      done_.assign(p_.fns.size(), 0);
      pending_ = false;
      changed_ = false;
      ragged_changed_ = false;
      infer_fn(0);
      if (!pending_ && !ragged_changed_) return;  // ragged marks reach every call site first
      if (!changed_ && !ragged_changed_) break;
    }
    MYCEL_THROW(RuntimeError, "[backend] could not infer the shapes of every value of @",
                p_.fns[0].name, " (a recursive graph without a base case?)");
  }

 private:
  bool known(size_t f, int r) const { return r < 0 || plan_.fns[f].known[r]; }
  bool ragged(size_t f, int r) const { return r >= 0 && plan_.fns[f].ragged[r]; }

  // A value sized at run time: it keeps its abstract meta (kDynamic where data-dependent).
  void set_ragged(size_t f, int r) {
    FnPlan& fp = plan_.fns[f];
    if (!fp.known[r]) changed_ = true;
    if (!fp.ragged[r]) ragged_changed_ = true;
    fp.meta[r] = p_.fns[f].regs[r].meta;
    fp.known[r] = 1;
    fp.ragged[r] = 1;
  }
  // The output of an op with a ragged input: ragged unless analysis knows its whole shape.
  void set_from_ragged(size_t f, int r, const ir::Node* n) {
    const TensorMeta& a = p_.fns[f].regs[r].meta;
    bool fixed = true;
    for (int64_t d : a.shape) fixed = fixed && d != ir::kDynamic;
    if (fixed && !ragged(f, r))
      set(f, r, a, n);
    else
      set_ragged(f, r);
  }
  const TensorMeta& meta(size_t f, int r) const { return plan_.fns[f].meta[r]; }

  void set(size_t f, int r, const TensorMeta& m, const ir::Node* n = nullptr) {
    const Function& fn = p_.fns[f];
    FnPlan& fp = plan_.fns[f];
    if (fp.ragged[r]) return;  // sized at run time
    if (fp.known[r]) {
      MYCEL_CHECK(fp.meta[r] == m, NotSupported, "[backend] a value of @", fn.name,
                  " takes shapes ", shape_str(fp.meta[r].shape), " and ", shape_str(m.shape),
                  " in one run (shapes must not change across calls or loop iterations)", where(n));
      return;
    }
    MYCEL_CHECK(fits(fn.regs[r].meta, m), RuntimeError, "[backend] a value of @", fn.name,
                " was analysed as ", dtype_name(fn.regs[r].meta.dtype),
                shape_str(fn.regs[r].meta.shape), " but is ", dtype_name(m.dtype),
                shape_str(m.shape), " at run time", where(n));
    fp.meta[r] = m;
    fp.known[r] = 1;
    changed_ = true;
  }

  bool tensor(size_t f, int r) const {
    return r >= 0 && p_.fns[f].regs[r].type == RegType::kTensor;
  }

  void infer_fn(size_t f) {
    if (done_[f]) return;
    done_[f] = 1;
    const Function& fn = p_.fns[f];
    for (const Instr& in : fn.code) {
      switch (in.code) {
        case Code::kKernel:
        case Code::kView:
          infer_op(f, in);
          break;
        case Code::kScalarToTensor:
          set(f, in.out[0], TensorMeta{{}, in.dtype}, in.node);
          break;
        case Code::kCopy:
          if (ragged(f, in.in[0]))
            set_ragged(f, in.out[0]);
          else if (known(f, in.in[0]))
            set(f, in.out[0], meta(f, in.in[0]), in.node);
          else
            pending_ = true;
          break;
        case Code::kSelect:
          for (size_t k = 0; k < in.out.size(); ++k) {
            if (!tensor(f, in.out[k])) continue;
            if (ragged(f, in.in[k]) || ragged(f, in.in_b[k])) {
              set_ragged(f, in.out[k]);
              continue;
            }
            int src = known(f, in.in[k]) ? in.in[k] : in.in_b[k];
            if (known(f, src))
              set(f, in.out[k], meta(f, src), in.node);
            else
              pending_ = true;
          }
          break;
        case Code::kCall:
          infer_call(f, in);
          break;
        default:
          break;
      }
    }
    for (int r : fn.outputs)
      if (tensor(f, r) && !known(f, r)) pending_ = true;
  }

  void infer_op(size_t f, const Instr& in) {
    std::vector<const TensorMeta*> ms(in.in.size(), nullptr);
    for (int r : in.in)
      if (ragged(f, r)) {  // inferred again at each launch (vm.cc)
        // A view of a ragged value is ragged even when its shape is static (a reshape of
        // unique(x)[0] into (3, 3)): it aliases memory allocated at run time, not a planned slot.
        for (int o : in.out)
          if (in.code == Code::kView)
            set_ragged(f, o);
          else
            set_from_ragged(f, o, in.node);
        return;
      }
    for (size_t k = 0; k < in.in.size(); ++k) {
      if (in.in[k] < 0) continue;
      if (!known(f, in.in[k])) {
        pending_ = true;
        return;
      }
      ms[k] = &meta(f, in.in[k]);
    }
    const OpDef& op = *in.op;
    if (!op.dtypes.empty() && static_cast<size_t>(op.dtype_input) < ms.size() && ms[op.dtype_input])
      MYCEL_CHECK(op.supports(ms[op.dtype_input]->dtype), TypeError, "[", op.name,
                  "] has no kernel for dtype ", dtype_name(ms[op.dtype_input]->dtype),
                  where(in.node));
    std::vector<TensorMeta> outs =
        infer_allowing_data_dependent(op, InferContext{op, ms, in.attrs});
    MYCEL_CHECK(outs.size() == in.out.size(), RuntimeError, "[", op.name, "] gives ", outs.size(),
                " outputs, the graph expects ", in.out.size(), where(in.node));
    for (size_t k = 0; k < outs.size(); ++k)
      if (has_data_dependent_dim(outs[k]))
        set_ragged(f, in.out[k]);
      else
        set(f, in.out[k], outs[k], in.node);
  }

  bool all_raise(const Instr& in) const {
    for (const Target& t : in.targets)
      if (!p_.fns[t.fn].raises) return false;
    return true;
  }

  void infer_call(size_t f, const Instr& in) {
    for (const Target& t : in.targets) {
      const Function& callee = p_.fns[t.fn];
      for (size_t k = 0; k < t.args.size(); ++k) {
        if (!tensor(f, t.args[k])) continue;
        if (ragged(f, t.args[k]))
          set_ragged(t.fn, callee.params[k]);
        else if (known(f, t.args[k]))
          set(t.fn, callee.params[k], meta(f, t.args[k]), in.node);
        else
          pending_ = true;
      }
      infer_fn(t.fn);
    }
    for (size_t k = 0; k < in.out.size(); ++k) {
      if (!tensor(f, in.out[k])) continue;
      bool got = false;
      for (const Target& t : in.targets) {
        if (p_.fns[t.fn].raises) continue;  // never returns: gives the call no value
        int r = p_.fns[t.fn].outputs[k];
        if (!known(t.fn, r)) continue;
        if (ragged(t.fn, r))
          set_ragged(f, in.out[k]);
        else
          set(f, in.out[k], meta(t.fn, r), in.node);
        got = true;
      }
      if (!got && !all_raise(in)) pending_ = true;
    }
  }

  ProgramImpl& p_;
  Plan& plan_;
  std::vector<char> done_;
  bool pending_ = false, changed_ = false, ragged_changed_ = false;
};

// Frames: a function's frame lies above the frames of all its callers (longest path over the
// call DAG of cycles), so everything on the VM stack is below the running frame; a cycle's
// members get consecutive frames (one block), saved and restored around recursive calls.
void layout(ProgramImpl& p, Plan& plan) {
  const size_t nscc = p.num_scc_members.size();
  std::vector<size_t> block_size(nscc, 0), block_base(nscc, 0);
  for (size_t f = 0; f < p.fns.size(); ++f) {
    FnPlan& fp = plan.fns[f];
    fp.base = block_size[p.fns[f].scc];  // offset inside the block for now
    block_size[p.fns[f].scc] += fp.size;
  }
  // Tarjan numbers components in reverse topological order: callers have larger numbers.
  for (size_t s = nscc; s-- > 0;) {
    for (size_t f = 0; f < p.fns.size(); ++f) {
      if (static_cast<size_t>(p.fns[f].scc) != s) continue;
      for (const Instr& in : p.fns[f].code)
        for (const Target& t : in.targets) {
          size_t c = p.fns[t.fn].scc;
          if (c != s) block_base[c] = std::max(block_base[c], block_base[s] + block_size[s]);
        }
    }
  }
  size_t total = 0;
  for (size_t f = 0; f < p.fns.size(); ++f) {
    FnPlan& fp = plan.fns[f];
    size_t s = p.fns[f].scc;
    fp.base += block_base[s];
    fp.block_base = block_base[s];
    fp.block_end = block_base[s] + block_size[s];
    total = std::max(total, fp.block_end);
  }
  plan.arena_bytes = total;
}

// Registers and kernel argument vectors for one function, viewing the arena.
void prebuild(const Function& fn, FnPlan& fp, const FrameLayout& L, Plan& plan) {
  const size_t nregs = fn.regs.size();
  fp.home.assign(nregs, Tensor());
  fp.is_static.assign(nregs, 0);
  fp.regs.assign(nregs, Reg{});
  fp.kernels.clear();  // move-only slots (prepared state): rebuilt, not copied
  fp.kernels.resize(fn.code.size());
  fp.elided.assign(fn.code.size(), 0);
  fp.ragged_instr.assign(fn.code.size(), 0);
  fp.num_inplace = L.num_inplace;
  for (size_t r = 0; r < nregs; ++r) {
    if (fn.regs[r].is_const) {
      fp.regs[r] = fn.regs[r].value;
      fp.is_static[r] = 1;
    } else if (fn.regs[r].alias_of >= 0) {  // written into its weight (assign_in_place.cc)
      const Tensor& w = fn.regs[fn.regs[r].alias_of].value.t;
      fp.home[r] = Tensor(w.storage(), w.offset(), fp.meta[r].shape, fp.meta[r].dtype);
    } else if (L.offset[r] >= 0 && fp.known[r] && !fp.ragged[r]) {
      fp.home[r] = Tensor(plan.arena, fp.base + L.offset[r], fp.meta[r].shape, fp.meta[r].dtype);
    }
  }
  for (size_t i = 0; i < fn.code.size(); ++i) {
    const Instr& in = fn.code[i];
    for (int r : in.in)
      if (r >= 0 && fp.ragged[r]) fp.ragged_instr[i] = 1;
    for (int r : in.out)
      if (r >= 0 && fp.ragged[r]) fp.ragged_instr[i] = 1;
    switch (in.code) {
      case Code::kKernel: {
        KernelSlots& ks = fp.kernels[i];
        if (in.params) ks.params = *in.params, ks.has_params = true;
        ks.in.resize(in.in.size());
        for (size_t k = 0; k < in.in.size(); ++k) {
          int r = in.in[k];
          if (r < 0) continue;
          if (fp.is_static[r])
            ks.in[k] = fp.regs[r].t;
          else
            ks.refresh.push_back({static_cast<int>(k), r});
        }
        for (int r : in.out) {
          fp.regs[r].t = fp.home[r];  // undefined when ragged: the VM allocates it
          fp.is_static[r] = !fp.ragged[r];
          ks.out.push_back(fp.home[r]);
        }
        break;
      }
      case Code::kScalarToTensor:
      case Code::kCopy:
        fp.regs[in.out[0]].t = fp.home[in.out[0]];
        fp.is_static[in.out[0]] = !fp.ragged[in.out[0]];
        break;
      case Code::kView:
        if (fp.is_static[in.in[0]] && !fp.ragged[in.out[0]]) {  // alias now: nothing at run time
          const Tensor& x = fp.regs[in.in[0]].t;
          const TensorMeta& m = fp.meta[in.out[0]];
          fp.regs[in.out[0]].t = Tensor(x.storage(), x.offset(), m.shape, m.dtype);
          fp.is_static[in.out[0]] = 1;
          fp.elided[i] = 1;
        }
        break;
      default:
        break;
    }
  }
}

}  // namespace

std::unique_ptr<Plan> build_plan(ProgramImpl& p, const std::vector<TensorMeta>& inputs) {
  auto plan = std::make_unique<Plan>();
  plan->fns.resize(p.fns.size());
  ShapePlanner(p, *plan).run(inputs);
  std::vector<FrameLayout> layouts;
  for (size_t f = 0; f < p.fns.size(); ++f) {
    // Ragged values take no arena bytes: every dim 0, also for a ragged value whose shape is
    // static (a view of one), so that no planned value is written in place into its (empty)
    // buffer.
    std::vector<TensorMeta> sizing = plan->fns[f].meta;
    for (size_t r = 0; r < sizing.size(); ++r)
      if (plan->fns[f].ragged[r])
        for (int64_t& d : sizing[r].shape) d = 0;
    layouts.push_back(plan_frame(p.fns[f], sizing));
    plan->fns[f].size = (layouts.back().size + kBufferAlign - 1) / kBufferAlign * kBufferAlign;
  }
  layout(p, *plan);
  plan->arena = Storage::allocate(std::max<size_t>(plan->arena_bytes, kBufferAlign));
  for (size_t f = 0; f < p.fns.size(); ++f) prebuild(p.fns[f], plan->fns[f], layouts[f], *plan);
  return plan;
}

}  // namespace mycel::backend::detail
