// Kernels of geqrf/orgqr/ormqr (ops/householder.cc): LAPACK's Householder QR in its packed form,
// float32/float64, over batches of matrices.
#pragma once
#include "mycel/kernels/kernel_context.h"

namespace mycel::cpu {

void geqrf_kernel(const KernelContext& c);  // (a) -> (packed r and reflectors, tau)
void orgqr_kernel(const KernelContext& c);  // (a, tau) -> q's first n columns
void ormqr_kernel(const KernelContext& c);  // (a, tau, other) -> q @ other, other @ q, ...

}  // namespace mycel::cpu
