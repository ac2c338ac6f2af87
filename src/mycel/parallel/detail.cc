// MPI type/op mapping and alltoall's block shuffles (see detail.h).
#include "mycel/parallel/detail.h"

#include <cstring>

#include "mycel/core/error.h"

namespace mycel::parallel::detail {

Blocks blocks(const Shape& shape, int dim, int n, size_t itemsize) {
  Blocks b{1, itemsize};
  for (int d = 0; d < static_cast<int>(shape.size()); ++d) {
    if (d < dim)
      b.outer *= shape[d];
    else if (d == dim)
      b.inner *= static_cast<size_t>(shape[d] / n);
    else
      b.inner *= static_cast<size_t>(shape[d]);
  }
  return b;
}

void transpose_blocks(const char* src, char* dst, int64_t a, int64_t b, size_t inner) {
  for (int64_t i = 0; i < a; ++i)
    for (int64_t j = 0; j < b; ++j)
      std::memcpy(dst + (j * a + i) * inner, src + (i * b + j) * inner, inner);
}

#if MYCEL_WITH_MPI
MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::bool_:
    case DType::uint8:
      return MPI_UINT8_T;  // bool max/min act on its 0/1 byte
    case DType::int8:
      return MPI_INT8_T;
    case DType::int16:
      return MPI_INT16_T;
    case DType::int32:
      return MPI_INT32_T;
    case DType::int64:
      return MPI_INT64_T;
    case DType::float32:
      return MPI_FLOAT;
    case DType::float64:
      return MPI_DOUBLE;
    default:
      MYCEL_THROW(TypeError, "[communicator] no MPI reduction type for ", dtype_name(t));
  }
}

MPI_Op mpi_op(ReduceOp r) {
  switch (r) {
    case ReduceOp::kSum:
      return MPI_SUM;
    case ReduceOp::kMax:
      return MPI_MAX;
    case ReduceOp::kMin:
      return MPI_MIN;
    case ReduceOp::kProd:
      return MPI_PROD;
  }
  return MPI_SUM;
}

std::string mpi_error_string(int rc) {
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, buf, &len);
  return std::string(buf, len);
}
#endif

}  // namespace mycel::parallel::detail
