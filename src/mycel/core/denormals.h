// Flush-to-zero (FTZ) and denormals-are-zero (DAZ) for the threads that run kernels: an opt-in
// (PyTorch's set_flush_denormal), off by default so that float32 results keep IEEE subnormals.
// On Intel cores each subnormal operand or result takes a microcode assist of ~100 cycles: a
// LeNet5 step on a saturated batch (every label one class, after an epoch) took 14-33 ms instead
// of 3.1-3.3 on an Ice Lake Xeon, its gradients full of subnormals.
#pragma once

namespace mycel {

/// Sets (on) or clears FTZ and DAZ in the MXCSR of the calling thread and of every thread of the
/// OpenMP pool (one parallel region over it); threads created later by this one inherit it.
/// Returns false where there is no such control (not x86-64 with SSE), changing nothing.
bool set_flush_denormal(bool on);

/// Whether FTZ and DAZ are both set on the calling thread.
bool flush_denormal();

/// Applies the setting of the last set_flush_denormal call to the whole pool again (when it was
/// on): set_num_threads calls it, since a larger team may take threads that never ran the region.
void refresh_flush_denormal();

}  // namespace mycel
