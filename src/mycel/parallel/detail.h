// Internals of the Communicator: MPI type and op mapping, and the byte shuffles of alltoall.
#pragma once
#include <cstdint>
#include <string>

#include "mycel/core/tensor.h"
#include "mycel/parallel/communicator.h"

#if MYCEL_WITH_MPI
#include <mpi.h>
#endif

namespace mycel::parallel::detail {

/// Tag of collective handshakes; users' send/receive tags must stay below it.
inline constexpr int kMetaTag = 30000;
/// Tag of the handshake of create_group's members.
inline constexpr int kGroupTag = 30001;

/// A shape seen as (outer, n, inner bytes) around dimension `dim` split in n equal parts.
struct Blocks {
  int64_t outer;
  size_t inner;
};
Blocks blocks(const Shape& shape, int dim, int n, size_t itemsize);
/// dst[j][i] = src[i][j] for src of (a, b) blocks of `inner` bytes.
void transpose_blocks(const char* src, char* dst, int64_t a, int64_t b, size_t inner);

#if MYCEL_WITH_MPI
MPI_Datatype mpi_type(DType t);
MPI_Op mpi_op(ReduceOp r);
std::string mpi_error_string(int rc);
#endif

}  // namespace mycel::parallel::detail
