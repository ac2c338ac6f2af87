// A kernel whose output is only copied into a weight by a later assign (an optimizer's update:
// `m = m * momentum + g; assign(m, ...)`) writes straight into the weight, so the assign copies
// nothing. On two cores the copy was the dearer half: its source had been written by the other
// core, and a 1.6 MB assign cost 400 us of a 6 ms MLP step (one core: 45 us).
#include <algorithm>

#include "mycel/backend/fuse_util.h"

namespace mycel::backend::detail {
namespace {

bool is_static_tensor(const Function& f, int r) {
  if (r < 0 || f.regs[r].type != RegType::kTensor || f.regs[r].blocked) return false;
  for (int64_t d : f.regs[r].meta.shape)
    if (d == ir::kDynamic) return false;
  return true;
}

// Registers that may hold the weight's memory: weights sharing its storage and static views of
// any of them (a view is lowered as kView of its input).
std::vector<char> aliases_of(const Function& f, int w) {
  std::vector<char> a(f.regs.size(), 0);
  const Storage* s = f.regs[w].value.t.storage().get();
  for (size_t r = 0; r < f.regs.size(); ++r)
    if (f.regs[r].is_const && f.regs[r].type == RegType::kTensor && f.regs[r].value.t.defined() &&
        f.regs[r].value.t.storage().get() == s)
      a[r] = 1;
  for (const Instr& in : f.code)
    if (in.code == Code::kView && a[in.in[0]]) a[in.out[0]] = 1;
  return a;
}

bool reads_any(const Instr& in, const std::vector<char>& set) {
  auto hit = [&](int r) { return r >= 0 && set[r]; };
  if (std::any_of(in.in.begin(), in.in.end(), hit)) return true;
  if (std::any_of(in.in_b.begin(), in.in_b.end(), hit)) return true;
  if (hit(in.cond)) return true;
  for (const Target& t : in.targets)
    if (std::any_of(t.args.begin(), t.args.end(), hit)) return true;
  return false;
}

// Whether assign j (weight w := register o, made by kernel i) may become a write of kernel i
// into w.
bool can_write_in_place(const Function& f, int i, int j, const std::vector<int>& writers) {
  const Instr& k = f.code[i];
  const int w = f.code[j].in[0], o = f.code[j].in[1];
  // (A kernel of several outputs: only the fused elementwise chains, which store each block's
  // results after reading its operands, fuse_elementwise.cc.)
  if (k.code != Code::kKernel || k.out.empty() || (k.out.size() > 1 && !k.op->elementwise) ||
      k.op->effect || !k.op->mutated_inputs.empty())
    return false;
  if (!f.regs[w].is_const || !f.regs[w].value.t.defined() || !is_static_tensor(f, o) ||
      f.regs[w].meta != f.regs[o].meta || f.regs[o].alias_of >= 0)
    return false;
  const std::vector<char> alias = aliases_of(f, w);
  // w is written once in this function (by this assign), so whoever reads o later reads w's
  // new contents for good.
  for (int r = 0; r < static_cast<int>(f.regs.size()); ++r)
    if (alias[r] && writers[r] != (r == w ? 1 : 0)) return false;
  // The kernel may read w only element by element (an elementwise op, same shape: no
  // broadcast), which is what in-place memory planning already relies on.
  for (int r : k.in)
    if (r >= 0 && alias[r] && (!k.op->elementwise || f.regs[r].meta != f.regs[o].meta))
      return false;
  // Nothing between the kernel and the assign may read the weight's old value, and nothing
  // whose reads are unknown here (calls) may run there.
  for (int m = i + 1; m < j; ++m) {
    const Instr& in = f.code[m];
    if (in.code != Code::kKernel && in.code != Code::kView && in.code != Code::kScalar &&
        in.code != Code::kAssign)
      return false;
    if (reads_any(in, alias)) return false;
    if (in.code == Code::kKernel)
      for (int mi : in.op->mutated_inputs)
        if (mi < static_cast<int>(in.in.size()) && in.in[mi] >= 0 && alias[in.in[mi]]) return false;
  }
  // o's readers: kernels and this assign only (a call, select or function output would pass
  // the weight's memory on).
  for (int r : f.outputs)
    if (r == o) return false;
  std::vector<char> just_o(f.regs.size(), 0);
  just_o[o] = 1;
  for (int m = i + 1; m < static_cast<int>(f.code.size()); ++m) {
    const Instr& in = f.code[m];
    if (!reads_any(in, just_o)) continue;
    if (in.code == Code::kKernel && std::find(in.in.begin(), in.in.end(), o) != in.in.end()) {
      for (int mi : in.op->mutated_inputs)
        if (mi < static_cast<int>(in.in.size()) && in.in[mi] == o) return false;
      continue;
    }
    if (m == j) continue;
    return false;
  }
  return true;
}

void rewrite(Function& f) {
  if (f.recursive) return;  // frames are saved and restored: keep every value in the arena
  // Per register: the instructions that write it (assign targets, mutated kernel inputs).
  std::vector<int> writers(f.regs.size(), 0);
  std::vector<int> producer(f.regs.size(), -1);
  for (int i = 0; i < static_cast<int>(f.code.size()); ++i) {
    const Instr& in = f.code[i];
    if (in.code == Code::kAssign) ++writers[in.in[0]];
    if (in.code == Code::kKernel)
      for (int mi : in.op->mutated_inputs)
        if (mi < static_cast<int>(in.in.size()) && in.in[mi] >= 0) ++writers[in.in[mi]];
    for (int r : in.out)
      if (r >= 0) producer[r] = producer[r] == -1 ? i : -2;  // -2: more than one writer
  }
  for (int j = 0; j < static_cast<int>(f.code.size()); ++j) {
    const Instr& a = f.code[j];
    if (a.code != Code::kAssign || a.in.size() != 2) continue;
    const int o = a.in[1];
    if (o < 0 || producer[o] < 0 || producer[o] >= j) continue;
    if (!can_write_in_place(f, producer[o], j, writers)) continue;
    f.regs[o].alias_of = a.in[0];
  }
}

}  // namespace

void assign_in_place(ProgramImpl& p) {
  for (Function& f : p.fns) rewrite(f);
}

}  // namespace mycel::backend::detail
