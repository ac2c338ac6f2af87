#include "mycel/backend/memory_plan.h"

#include <algorithm>
#include <numeric>

#include "mycel/kernels/cpu/dnnl_layout.h"

namespace mycel::backend::detail {
namespace {

size_t align_up(size_t n) { return (n + kBufferAlign - 1) / kBufferAlign * kBufferAlign; }

MemoryPlan place(const std::vector<BufferReq>& bufs, const std::vector<int>& order) {
  MemoryPlan plan;
  plan.offsets.assign(bufs.size(), 0);
  std::vector<int> placed;
  std::vector<std::pair<size_t, size_t>> busy;  // [offset, end) of time-overlapping buffers
  for (int b : order) {
    const BufferReq& r = bufs[b];
    size_t size = align_up(r.size);
    busy.clear();
    for (int o : placed) {
      const BufferReq& q = bufs[o];
      if (q.start <= r.end && r.start <= q.end && q.size > 0)
        busy.push_back({plan.offsets[o], plan.offsets[o] + align_up(q.size)});
    }
    std::sort(busy.begin(), busy.end());
    // Best fit: the smallest gap between busy ranges that holds the buffer, else the top.
    size_t best = SIZE_MAX, best_gap = SIZE_MAX, prev = 0;
    for (const auto& [lo, hi] : busy) {
      if (lo > prev && lo - prev >= size && lo - prev < best_gap) {
        best = prev;
        best_gap = lo - prev;
      }
      prev = std::max(prev, hi);
    }
    plan.offsets[b] = best == SIZE_MAX ? prev : best;
    plan.total = std::max(plan.total, plan.offsets[b] + size);
    placed.push_back(b);
  }
  return plan;
}

}  // namespace

MemoryPlan plan_memory(const std::vector<BufferReq>& bufs) {
  std::vector<int> order(bufs.size());
  std::iota(order.begin(), order.end(), 0);
  auto by = [&](auto key) {
    std::vector<int> o = order;
    std::stable_sort(o.begin(), o.end(), [&](int a, int b) { return key(bufs[a]) > key(bufs[b]); });
    return o;
  };
  std::vector<std::vector<int>> orders = {
      by([](const BufferReq& r) { return static_cast<long>(r.size); }),
      by([](const BufferReq& r) { return -static_cast<long>(r.start); }),
      by([](const BufferReq& r) { return static_cast<long>(r.end - r.start); }),
  };
  MemoryPlan best;
  bool first = true;
  for (const auto& o : orders) {
    MemoryPlan p = place(bufs, o);
    if (first || p.total < best.total) best = std::move(p);
    first = false;
  }
  return best;
}

FrameLayout plan_frame(const Function& f, const std::vector<TensorMeta>& meta) {
  const int n = static_cast<int>(f.code.size());
  const size_t nregs = f.regs.size();
  auto is_tensor = [&](int r) { return r >= 0 && f.regs[r].type == RegType::kTensor; };
  auto bytes = [&](int r) {
    if (f.regs[r].blocked) return cpu::blocked_nbytes(meta[r].shape, meta[r].dtype);
    return static_cast<size_t>(numel(meta[r].shape)) * itemsize(meta[r].dtype);
  };

  // Last use of every register.
  std::vector<int> last(nregs, -1);
  auto use = [&](int r, int t) {
    if (r >= 0) last[r] = std::max(last[r], t);
  };
  for (int i = 0; i < n; ++i) {
    const Instr& in = f.code[i];
    for (int r : in.in) use(r, i + 1);
    for (int r : in.in_b) use(r, i + 1);
    use(in.cond, i + 1);
    for (const Target& t : in.targets)
      for (int r : t.args) use(r, i + 1);
  }
  for (int r : f.outputs) use(r, n + 1);

  FrameLayout L;
  L.buffer_of.assign(nregs, -1);
  std::vector<std::vector<int>> refs(nregs);  // buffers a register's tensor may live in
  auto touch = [&](int r) {
    for (int b : refs[r]) L.buffers[b].end = std::max(L.buffers[b].end, last[r]);
  };
  auto own = [&](int r, int t) {
    L.buffers.push_back(BufferReq{bytes(r), t, t});
    L.buffer_of[r] = static_cast<int>(L.buffers.size()) - 1;
    refs[r] = {L.buffer_of[r]};
    touch(r);
  };
  if (f.recursive)
    for (int p : f.params)
      if (is_tensor(p)) own(p, 0);

  for (int i = 0; i < n; ++i) {
    const Instr& in = f.code[i];
    const int t = i + 1;
    switch (in.code) {
      case Code::kKernel: {
        if (std::all_of(in.out.begin(), in.out.end(),
                        [&](int r) { return f.regs[r].alias_of >= 0; }))
          break;  // writes weights only
        bool elementwise = in.op->elementwise && in.out.size() == 1;
        int o = in.out[0];
        int reuse = -1;
        if (elementwise)
          for (int r : in.in)
            if (is_tensor(r) && refs[r].size() == 1 && meta[r] == meta[o] &&
                f.regs[r].blocked == f.regs[o].blocked && !f.regs[r].is_const &&
                L.buffers[refs[r][0]].end == t) {
              reuse = refs[r][0];
              break;
            }
        if (reuse >= 0) {
          L.buffer_of[o] = reuse;
          refs[o] = {reuse};
          touch(o);
          ++L.num_inplace;
        } else {
          for (int r : in.out)
            if (f.regs[r].alias_of < 0) own(r, t);  // (an output written into a weight: none)
        }
        break;
      }
      case Code::kScalarToTensor:
      case Code::kCopy:
        own(in.out[0], t);
        break;
      case Code::kView:
        refs[in.out[0]] = refs[in.in[0]];
        touch(in.out[0]);
        break;
      case Code::kSelect:
        for (size_t k = 0; k < in.out.size(); ++k) {
          if (!is_tensor(in.out[k])) continue;
          auto& r = refs[in.out[k]];
          r = refs[in.in[k]];
          r.insert(r.end(), refs[in.in_b[k]].begin(), refs[in.in_b[k]].end());
          touch(in.out[k]);
        }
        break;
      case Code::kCall:
        for (int o : in.out) {
          if (!is_tensor(o)) continue;
          own(o, t);
          for (const Target& tg : in.targets)
            for (int a : tg.args)
              if (is_tensor(a)) refs[o].insert(refs[o].end(), refs[a].begin(), refs[a].end());
          touch(o);
        }
        break;
      default:
        break;
    }
  }
  MemoryPlan mp = plan_memory(L.buffers);
  L.size = mp.total;
  L.offset.assign(nregs, -1);
  for (size_t r = 0; r < nregs; ++r)
    if (L.buffer_of[r] >= 0) L.offset[r] = static_cast<long>(mp.offsets[L.buffer_of[r]]);
  return L;
}

}  // namespace mycel::backend::detail
