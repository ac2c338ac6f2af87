// The offset tables of a gather or scatter-add kernel (transpose, broadcast, slice, strided slice,
// pad, nearest resize, and the gradients of the last four): built on an instruction's first
// launch and kept in its prepared slot while its input and output shapes stay, so graph mode
// builds no tables per launch (an instruction's attributes are fixed; the f32 transformer step's
// transposes made ~200 heap allocations a step building them). A call with no slot (PyNative)
// builds them each time.
#pragma once
#include <memory>
#include <utility>

#include "mycel/kernels/cpu/shape.h"
#include "mycel/kernels/kernel_context.h"

namespace mycel {

struct GatherTables : KernelPrepared {
  Shape in, out;
  cpu::OffsetTables tables;
  int64_t base = 0;  // the offset every element adds (a strided slice's shrunk dims)
};

/// The tables for c's input 0 and output 0 shapes: `build(GatherTables&)` fills tables and base
/// on the first launch (or into `local` when c has no slot).
template <class Build>
const GatherTables& gather_tables(const KernelContext& c, std::unique_ptr<GatherTables>& local,
                                  Build&& build) {
  const Shape &in = c.in(0).shape(), &out = c.out(0).shape();
  return prepared_state<GatherTables>(
      c.prepared, local, [&](const GatherTables& g) { return g.in == in && g.out == out; },
      [&] {
        auto g = std::make_unique<GatherTables>();
        g->in = in;
        g->out = out;
        std::forward<Build>(build)(*g);
        return g;
      });
}

}  // namespace mycel
