// The VM: runs a function's instructions over its static register file; calls push a frame
// from a reused stack, tail calls replace the running function (a 10^5-iteration loop runs in
// constant memory), recursive calls save the caller's frame bytes and registers around the call.
// A warm run allocates nothing from the tensor allocator except the outputs it returns.
#include <cmath>
#include <cstring>
#include <iostream>

#include "mycel/backend/detail.h"
#include "mycel/core/between_kernels.h"
#include "mycel/core/rethrow.h"
#include "mycel/core/tensor_format.h"
#include "mycel/core/write_version.h"
#include "mycel/insight/insight.h"
#include "mycel/ir/int_arith.h"
#include "mycel/ir/raised.h"
#include "mycel/ir/value.h"
#include "mycel/kernels/cpu/dnnl_layout.h"
#include "mycel/ops/data_dependent.h"

namespace mycel::backend {
namespace detail {

std::string reg_type_name(RegType t) {
  switch (t) {
    case RegType::kTensor:
      return "tensor";
    case RegType::kInt:
      return "int";
    case RegType::kFloat:
      return "float";
    case RegType::kBool:
      return "bool";
    case RegType::kNone:
      return "None";
  }
  return "?";
}

namespace {

bool truthy(const Reg& r, RegType t) {
  if (t == RegType::kFloat) return r.f != 0;
  if (t != RegType::kTensor) return r.i != 0;
  MYCEL_CHECK(r.t.numel() == 1, ValueError,
              "[switch] the condition must be a one-element tensor, got shape ",
              shape_str(r.t.shape()));
  bool b;
  convert_elements(r.t.data(), r.t.dtype(), &b, DType::bool_, 1);
  return b;
}

double as_float(const Reg& r, RegType t) {
  return t == RegType::kFloat ? r.f : static_cast<double>(r.i);
}

// Python semantics for int/float/bool scalars: ints stay ints except true division.
void scalar_op(ir::Prim p, const Reg& a, RegType ta, const Reg* b, RegType tb, Reg& out,
               RegType to) {
  using ir::Prim;
  const bool ints = ta != RegType::kFloat && (!b || tb != RegType::kFloat);
  const double x = as_float(a, ta), y = b ? as_float(*b, tb) : 0;
  const int64_t i = a.i, j = b ? b->i : 0;
  double f = 0;
  int64_t n = 0;
  switch (p) {
    case Prim::kScalarAdd:
    case Prim::kScalarSub:
    case Prim::kScalarMul:
      if (ints) n = ir::int_arith(p, i, j);
      f = p == Prim::kScalarAdd ? x + y : p == Prim::kScalarSub ? x - y : x * y;
      break;
    case Prim::kScalarDiv:
      MYCEL_CHECK(y != 0 || !ints, ValueError, "division by zero");
      f = x / y;
      break;
    case Prim::kScalarFloorDiv:
      if (ints) n = ir::int_arith(p, i, j);
      f = std::floor(x / y);
      break;
    case Prim::kScalarMod:
      if (ints) n = ir::int_arith(p, i, j);
      f = x - std::floor(x / y) * y;
      break;
    case Prim::kScalarPow:
      f = std::pow(x, y);
      if (ints && j >= 0) n = ir::int_arith(p, i, j);
      break;
    case Prim::kScalarNeg:
      n = ta == RegType::kFloat ? 0 : ir::int_arith(p, i, 0);
      f = -x;
      break;
    case Prim::kScalarEq:
      n = ints ? i == j : x == y;
      break;
    case Prim::kScalarNe:
      n = ints ? i != j : x != y;
      break;
    case Prim::kScalarLt:
      n = ints ? i < j : x < y;
      break;
    case Prim::kScalarLe:
      n = ints ? i <= j : x <= y;
      break;
    case Prim::kScalarGt:
      n = ints ? i > j : x > y;
      break;
    case Prim::kScalarGe:
      n = ints ? i >= j : x >= y;
      break;
    case Prim::kScalarNot:
      n = ta == RegType::kFloat ? x == 0 : i == 0;
      break;
    default:
      MYCEL_THROW(RuntimeError, "[backend] not a scalar primitive: ", ir::prim_name(p));
  }
  const bool int_result = ints && p != Prim::kScalarDiv && !(p == Prim::kScalarPow && j < 0);
  if (to == RegType::kFloat)
    out.f = int_result ? static_cast<double>(n) : f;
  else
    out.i = n;
}

// The output metas of an op for its inputs' run-time shapes (ragged instructions).
std::vector<TensorMeta> infer_now(const Instr& in, const std::vector<Tensor>& inputs) {
  std::vector<TensorMeta> metas(inputs.size());
  std::vector<const TensorMeta*> ptrs(inputs.size(), nullptr);
  for (size_t k = 0; k < inputs.size(); ++k)
    if (inputs[k].defined()) metas[k] = inputs[k].meta(), ptrs[k] = &metas[k];
  try {
    return infer_allowing_data_dependent(*in.op, InferContext{*in.op, ptrs, in.attrs});
  } catch (const Error&) {
    rethrow_with_context("", " (on a value whose shape is known only at run time)");
  }
}

// A ragged instruction's outputs for this launch: ragged ones allocated now (left undefined
// for a data-dependent size, which the kernel allocates; channel-blocked ones with their padded
// size, assign_layouts.cc), fixed ones checked against the plan.
void prepare_ragged(const Function& fn, const Instr& in, FnPlan& fp, KernelSlots& ks) {
  std::vector<TensorMeta> outs = infer_now(in, ks.in);
  for (size_t k = 0; k < in.out.size(); ++k) {
    const int r = in.out[k];
    if (fp.ragged[r]) {
      const TensorMeta& m = outs[k];
      if (has_data_dependent_dim(m))
        ks.out[k] = Tensor();
      else if (fn.regs[r].blocked)
        ks.out[k] =
            Tensor(Storage::allocate(std::max<size_t>(cpu::blocked_nbytes(m.shape, m.dtype), 1)), 0,
                   m.shape, m.dtype);
      else
        ks.out[k] = Tensor::empty(m);
      continue;
    }
    MYCEL_CHECK(outs[k] == fp.meta[r], NotSupported, "[", in.op->name, "] output ", k,
                " has shape ", shape_str(outs[k].shape), " at run time but was planned as ",
                shape_str(fp.meta[r].shape));
  }
  ks.prepared.reset();  // input shapes may differ from the last launch's
}

// What the profiler and debugger say about a kernel instruction: its op, the user's source line
// (the IR node's location), the weights it reads (their names give the Cell scope).
insight::SiteInfo site_info(const Instr& in) {
  insight::SiteInfo s;
  s.op = in.op->name;
  s.graph = true;
  s.collective = in.op->effect && !in.op->record_only;
  for (const InputDef& d : in.op->inputs) s.input_names.push_back(d.name);
  const ir::Node* node = in.node;
  if (!node) return s;
  if (node->loc().known()) {
    const ir::SourceLoc& l = node->loc();
    s.where = l.str();
    if (l.text) {
      std::string t = *l.text;
      size_t b = t.find_first_not_of(" \t");
      t = b == std::string::npos ? std::string() : t.substr(b);
      while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
      s.source = std::move(t);
    }
  }
  for (const ir::InlinedFrame* f = node->loc().inlined_at.get(); f; f = f->site.inlined_at.get())
    if (f->callee) {
      s.cell = *f->callee;
      break;
    }
  if (node->is_apply())
    for (const ir::NodePtr& a : static_cast<const ir::Apply*>(node)->inputs())
      if (const ir::Parameter* p = ir::as_parameter(a); p && p->is_weight())
        s.weights.push_back(p->name());
  return s;
}

class Vm {
 public:
  Vm(ProgramImpl& p, Plan& plan) : p_(p), plan_(plan), arena_(plan.arena.get()) {}

  void run() {
    p_.frames.clear();
    size_t bytes_top = 0, regs_top = 0;
    int f = 0, pc = 0;
    try {
      loop(f, pc, bytes_top, regs_top);
    } catch (
        const Error&) {  // zero cost until thrown: name the user's line the instruction came from
      const ir::Node* node =
          pc < static_cast<int>(p_.fns[f].code.size()) ? p_.fns[f].code[pc].node : nullptr;
      if (!node || !node->loc().known()) throw;
      // The line, then the calls inlining flattened into this program, innermost first.
      std::string context = "\n" + node->loc().line_str();
      for (const std::string& caller : ir::inlined_callers(node->loc())) context += "\n  " + caller;
      rethrow_with_context("", context + "\n  (while the compiled program ran)");
    }
  }

  // The instruction loop; f and pc stay where an instruction threw.
  void loop(int& f, int& pc, size_t& bytes_top, size_t& regs_top) {
    for (;;) {
      const Function& fn = p_.fns[f];
      FnPlan& fp = plan_.fns[f];
      if (pc == static_cast<int>(fn.code.size())) {  // return
        if (p_.frames.empty()) {                     // the top graph's (tail-called) result
          if (f != 0)
            for (size_t k = 0; k < fn.outputs.size(); ++k)
              plan_.fns[0].regs[p_.fns[0].outputs[k]] = fp.regs[fn.outputs[k]];
          return;
        }
        Frame fr = p_.frames.back();
        p_.frames.pop_back();
        finish_call(fr, f, bytes_top, regs_top);
        f = fr.fn;
        pc = fr.pc + 1;
        continue;
      }
      const Instr& in = fn.code[pc];
      switch (in.code) {
        case Code::kKernel: {
          KernelSlots& ks = fp.kernels[pc];
          for (const auto& [slot, r] : ks.refresh) ks.in[slot] = fp.regs[r].t;
          if (fp.ragged_instr[pc]) [[unlikely]]
            prepare_ragged(fn, in, fp, ks);
          if (insight::hooks_on()) [[unlikely]] {  // profiler, debugger: off, this one branch
            auto launch = [&] {
              in.op->kernel(KernelContext{*in.op, ks.in, ks.out, in.attrs, &ks.prepared,
                                          ks.has_params ? &ks.params : nullptr});
            };
            auto site_id = [&] {
              const uint32_t e = insight::profiler::epoch();
              if (fp.site_epoch != e) fp.sites.assign(fn.code.size(), -1), fp.site_epoch = e;
              int32_t& id = fp.sites[pc];
              if (id < 0) id = insight::profiler::add_site(site_info(in));
              return id;
            };
            insight::hooked_launch(in.op->name, ks.in, ks.out, launch, site_id);
          } else {
            in.op->kernel(KernelContext{*in.op, ks.in, ks.out, in.attrs, &ks.prepared,
                                        ks.has_params ? &ks.params : nullptr});
          }
          if (fp.ragged_instr[pc]) [[unlikely]]
            for (size_t k = 0; k < in.out.size(); ++k) {
              MYCEL_CHECK(ks.out[k].defined(), RuntimeError, "[", in.op->name,
                          "] the kernel gave no output ", k);
              if (fp.ragged[in.out[k]]) fp.regs[in.out[k]].t = ks.out[k];
            }
          ++p_.num_launches;
          // Inputs written in place get a new version (caches derived from them, e.g. folded
          // batch norm, see it).
          for (int m : in.op->mutated_inputs)
            if (ks.in[m].defined()) note_write(*ks.in[m].storage());
          if (auto hook = g_between_kernels.load(std::memory_order_relaxed)) [[unlikely]]
            hook();
          break;
        }
        case Code::kView:
          if (fp.ragged_instr[pc]) [[unlikely]] {
            // A view of a value sized at run time: its shape inferred now (reshape checks the
            // element count), and a planned one checked (reshape(unique(x)[0], (3, 3))).
            const Tensor& x = fp.regs[in.in[0]].t;
            const TensorMeta m = infer_now(in, {x})[0];
            const int r = in.out[0];
            MYCEL_CHECK(fp.ragged[r] || m == fp.meta[r], NotSupported, "[", in.op->name,
                        "] output has shape ", shape_str(m.shape),
                        " at run time but was planned as ", shape_str(fp.meta[r].shape));
            fp.regs[r].t = Tensor(x.storage(), x.offset(), m.shape, m.dtype);
          } else if (!fp.elided[pc]) {
            const Tensor& x = fp.regs[in.in[0]].t;
            const TensorMeta& m = fp.meta[in.out[0]];
            Tensor& y = fp.regs[in.out[0]].t;
            // The last run's view where it is the same (planned buffers stay put): a new Tensor
            // copies the shape, a heap allocation per launch.
            if (!y.defined() || y.storage() != x.storage() || y.offset() != x.offset() ||
                y.dtype() != m.dtype || y.shape() != m.shape)
              y = Tensor(x.storage(), x.offset(), m.shape, m.dtype);
          }
          break;
        case Code::kScalar:
          scalar_op(in.prim, fp.regs[in.in[0]], fn.regs[in.in[0]].type,
                    in.in.size() > 1 ? &fp.regs[in.in[1]] : nullptr,
                    in.in.size() > 1 ? fn.regs[in.in[1]].type : RegType::kNone, fp.regs[in.out[0]],
                    fn.regs[in.out[0]].type);
          break;
        case Code::kTensorToScalar: {
          const Tensor& t = fp.regs[in.in[0]].t;
          MYCEL_CHECK(t.numel() == 1, ValueError,
                      "[tensor_to_scalar] needs a one-element tensor, got shape ",
                      shape_str(t.shape()));
          Reg& o = fp.regs[in.out[0]];
          if (fn.regs[in.out[0]].type == RegType::kFloat)
            convert_elements(t.data(), t.dtype(), &o.f, DType::float64, 1);
          else
            convert_elements(t.data(), t.dtype(), &o.i, DType::int64, 1);
          break;
        }
        case Code::kScalarToTensor: {
          const Reg& s = fp.regs[in.in[0]];
          Tensor& o = fp.regs[in.out[0]].t;
          if (fn.regs[in.in[0]].type == RegType::kFloat)
            convert_elements(&s.f, DType::float64, o.data(), in.dtype, 1);
          else
            convert_elements(&s.i, DType::int64, o.data(), in.dtype, 1);
          break;
        }
        case Code::kDim:
          fp.regs[in.out[0]].i = fp.regs[in.in[0]].t.dim(in.axis);
          break;
        case Code::kSelect: {
          bool c = truthy(fp.regs[in.cond], fn.regs[in.cond].type);
          const auto& src = c ? in.in : in.in_b;
          for (size_t k = 0; k < in.out.size(); ++k) fp.regs[in.out[k]] = fp.regs[src[k]];
          break;
        }
        case Code::kPrint:
          print(fn, fp, in);
          break;
        case Code::kRaise:  // the glue raises it as the Python exception
          throw ir::RaisedError(in.raised, in.node ? in.node->loc() : ir::SourceLoc{});
        case Code::kCopy: {
          const Tensor& src = fp.regs[in.in[0]].t;
          if (fp.ragged[in.out[0]]) fp.regs[in.out[0]].t = Tensor::empty(src.meta());
          std::memcpy(fp.regs[in.out[0]].t.data(), src.data(), src.nbytes());
          break;
        }
        case Code::kAssign: {
          Tensor& dst = fp.regs[in.in[0]].t;
          const Tensor& src = fp.regs[in.in[1]].t;
          if (dst.data() != src.data()) std::memcpy(dst.data(), src.data(), dst.nbytes());
          note_write(*dst.storage());  // even when written in place before: new contents
          break;
        }
        case Code::kCall: {
          int ti = in.targets.size() == 1
                       ? 0
                       : (truthy(fp.regs[in.cond], fn.regs[in.cond].type) ? 0 : 1);
          const Target& t = in.targets[ti];
          gather(fp, t);
          bool saved = false;
          size_t mb = bytes_top, mr = regs_top;
          if (!in.tail && t.scc_call) {  // recursion: our frame will be overwritten
            save(f, bytes_top, regs_top);
            saved = true;
          }
          enter(f, t, bytes_top);
          if (!in.tail) p_.frames.push_back(Frame{f, pc, ti, saved, mb, mr});
          f = t.fn;
          pc = 0;
          continue;
        }
      }
      ++pc;
    }
  }

 private:
  bool in_arena(const Tensor& t) const { return t.defined() && t.storage().get() == arena_; }

  std::byte* bytes_at(size_t at, size_t n) {
    if (p_.save_bytes.size() < at + n)
      p_.save_bytes.resize(std::max(at + n, 2 * p_.save_bytes.size()));
    return p_.save_bytes.data() + at;
  }
  Reg& reg_at(size_t at) {
    if (p_.save_regs.size() <= at) p_.save_regs.resize(std::max(at + 1, 2 * p_.save_regs.size()));
    return p_.save_regs[at];
  }

  void gather(FnPlan& fp, const Target& t) {
    if (p_.scratch.size() < t.args.size()) p_.scratch.resize(t.args.size());
    for (size_t k = 0; k < t.args.size(); ++k) p_.scratch[k] = fp.regs[t.args[k]];
  }

  void save(int f, size_t& bytes_top, size_t& regs_top) {
    FnPlan& fp = plan_.fns[f];
    std::memcpy(bytes_at(bytes_top, fp.size), static_cast<char*>(arena_->data()) + fp.base,
                fp.size);
    bytes_top += fp.size;
    for (const Reg& r : fp.regs) reg_at(regs_top++) = r;
  }

  // Moves the gathered arguments into the callee's parameters. Within a call cycle, tensors in
  // the cycle's frames are copied into the callee's parameter homes (via the save stack when a
  // source overlaps a home), since the callee's frame may be the very one they live in.
  void enter(int caller, const Target& t, size_t bytes_top) {
    const Function& c = p_.fns[t.fn];
    FnPlan& cp = plan_.fns[t.fn];
    const size_t lo = cp.block_base;
    char* base = static_cast<char*>(arena_->data());
    bool stage = false;
    if (t.scc_call) {
      for (size_t k = 0; k < t.args.size(); ++k) {
        const Tensor& s = p_.scratch[k].t;
        if (!in_arena(s) || s.offset() < lo) continue;
        for (size_t j = 0; j < c.params.size(); ++j) {
          const Tensor& home = cp.home[c.params[j]];
          if (!home.defined() || (j == k && home.offset() == s.offset())) continue;
          if (s.offset() < home.offset() + home.nbytes() && home.offset() < s.offset() + s.nbytes())
            stage = true;  // e.g. a swap: another argument's home holds this source
        }
      }
    }
    size_t at = bytes_top;
    if (stage)
      for (size_t k = 0; k < t.args.size(); ++k) {
        const Tensor& s = p_.scratch[k].t;
        if (!in_arena(s) || s.offset() < lo) continue;
        std::memcpy(bytes_at(at, s.nbytes()), s.data(), s.nbytes());
        at += s.nbytes();
      }
    at = bytes_top;
    for (size_t k = 0; k < t.args.size(); ++k) {
      Reg& dst = cp.regs[c.params[k]];
      const Reg& s = p_.scratch[k];
      if (t.scc_call && in_arena(s.t) && s.t.offset() >= lo && cp.ragged[c.params[k]]) {
        dst.t = Tensor::empty(s.t.meta());  // sized at run time: no home in the frame
        std::memcpy(dst.t.data(), stage ? p_.save_bytes.data() + at : s.t.data(), s.t.nbytes());
        at += s.t.nbytes();
      } else if (t.scc_call && in_arena(s.t) && s.t.offset() >= lo) {
        const Tensor& home = cp.home[c.params[k]];
        const void* src = stage ? static_cast<const void*>(p_.save_bytes.data() + at) : s.t.data();
        if (home.data() != src) std::memmove(home.data(), src, home.nbytes());
        at += s.t.nbytes();
        dst.t = home;
      } else {
        dst = s;
      }
    }
    (void)base;
    (void)caller;
  }

  // Where a call result is copied: its home, or (a ragged result) a tensor allocated now.
  static Tensor result_home(const FnPlan& fp, int r, const TensorMeta& m) {
    return fp.ragged[r] ? Tensor::empty(m) : fp.home[r];
  }

  // Results of the callee into the caller's registers: results living above the caller's frames
  // (or, after a recursive call, in its cycle's frames, which the restore overwrites) are copied
  // into the caller's result buffers.
  void finish_call(const Frame& fr, int callee, size_t& bytes_top, size_t& regs_top) {
    const Function& cf = p_.fns[callee];
    FnPlan& cp = plan_.fns[callee];
    const Function& fn = p_.fns[fr.fn];
    FnPlan& fp = plan_.fns[fr.fn];
    const Instr& in = fn.code[fr.pc];
    const size_t threshold = fr.saved ? fp.block_base : fp.block_end;
    if (!fr.saved) {
      for (size_t k = 0; k < in.out.size(); ++k) {
        const Reg& s = cp.regs[cf.outputs[k]];
        Reg& d = fp.regs[in.out[k]];
        if (in_arena(s.t) && s.t.offset() >= threshold) {
          d.t = result_home(fp, in.out[k], s.t.meta());
          std::memcpy(d.t.data(), s.t.data(), d.t.nbytes());
        } else {
          d = s;
        }
      }
      return;
    }
    // Stage results above the saved frame, restore the frame, then write the results.
    size_t at = bytes_top, r_at = regs_top;
    for (size_t k = 0; k < in.out.size(); ++k) {
      const Reg& s = cp.regs[cf.outputs[k]];
      reg_at(r_at++) = s;
      if (in_arena(s.t) && s.t.offset() >= threshold) {
        std::memcpy(bytes_at(at, s.t.nbytes()), s.t.data(), s.t.nbytes());
        at += s.t.nbytes();
      }
    }
    std::memcpy(static_cast<char*>(arena_->data()) + fp.base, p_.save_bytes.data() + fr.save_bytes,
                fp.size);
    for (size_t r = 0; r < fp.regs.size(); ++r) fp.regs[r] = p_.save_regs[fr.save_regs + r];
    at = bytes_top;
    r_at = regs_top;
    for (size_t k = 0; k < in.out.size(); ++k) {
      const Reg& s = p_.save_regs[r_at++];
      Reg& d = fp.regs[in.out[k]];
      if (in_arena(s.t) && s.t.offset() >= threshold) {
        d.t = result_home(fp, in.out[k], s.t.meta());
        std::memcpy(d.t.data(), p_.save_bytes.data() + at, d.t.nbytes());
        at += s.t.nbytes();
      } else {
        d = s;
      }
    }
    bytes_top = fr.save_bytes;
    regs_top = fr.save_regs;
  }

  // Writes the pieces one after another (the frontend puts the spaces between print's
  // arguments); tensors as eager print shows them (numpy's str), a tuple's tensors as repr.
  void print(const Function& fn, FnPlan& fp, const Instr& in) {
    std::string s;
    for (size_t k = 0; k < in.in.size(); ++k) {
      if (in.in[k] < 0) {  // a constant string
        s += in.text[-1 - in.in[k]];
        continue;
      }
      const Reg& r = fp.regs[in.in[k]];
      switch (fn.regs[in.in[k]].type) {
        case RegType::kTensor:
          s += in.as_repr[k] ? format_repr(r.t) : format_values(r.t);
          break;
        case RegType::kInt:
          s += std::to_string(r.i);
          break;
        case RegType::kFloat:
          s += format_float(r.f);
          break;
        case RegType::kBool:
          s += r.i ? "True" : "False";
          break;
        case RegType::kNone:
          s += "None";
          break;
      }
    }
    std::cout << s << std::endl;
  }

  ProgramImpl& p_;
  Plan& plan_;
  Storage* arena_;
};

}  // namespace

void execute(ProgramImpl& p, Plan& plan) { Vm(p, plan).run(); }

}  // namespace detail
}  // namespace mycel::backend
