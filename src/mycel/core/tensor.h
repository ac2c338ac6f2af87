// Tensor: shape, dtype and a contiguous row-major view into shared Storage. Reshape-like ops
// return views that share storage; every other op materializes its result.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "mycel/core/dtype.h"
#include "mycel/core/shape.h"
#include "mycel/core/storage.h"

namespace mycel {

/// Shape and dtype without data: what shape inference computes.
struct TensorMeta {
  Shape shape;
  DType dtype = DType::float32;
  bool operator==(const TensorMeta& o) const { return shape == o.shape && dtype == o.dtype; }
};

/// A contiguous n-d array. Copying a Tensor shares its storage (like a shared_ptr).
class Tensor {
 public:
  Tensor() = default;  // undefined: an absent optional input
  Tensor(std::shared_ptr<Storage> storage, size_t offset, Shape shape, DType dtype);

  /// Uninitialized tensor from the caching allocator.
  static Tensor empty(const Shape& shape, DType dtype);
  static Tensor empty(const TensorMeta& m) { return empty(m.shape, m.dtype); }
  static Tensor zeros(const Shape& shape, DType dtype);
  /// 0-d tensor holding v converted to dtype.
  static Tensor scalar(double v, DType dtype);

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  TensorMeta meta() const { return {shape_, dtype_}; }
  int64_t ndim() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t i) const { return shape_[i < 0 ? i + ndim() : i]; }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * itemsize(dtype_); }

  void* data() const { return static_cast<char*>(storage_->data()) + offset_; }
  template <class T>
  T* data() const {
    return static_cast<T*>(data());
  }
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  size_t offset() const { return offset_; }

  /// Same storage, new shape with the same element count.
  Tensor view(const Shape& shape) const;
  /// Same storage, the n outer-dimension slices starting at `start` (x[start:start+n]).
  Tensor narrow0(int64_t start, int64_t n) const;
  /// A copy with its own storage.
  Tensor clone() const;
  /// Copies into a new tensor of dtype (returns *this when already of that dtype).
  Tensor to(DType dtype) const;
  /// Element i (row-major) as double; for tests and printing.
  double item_as_double(int64_t i = 0) const;

 private:
  std::shared_ptr<Storage> storage_;
  size_t offset_ = 0;
  Shape shape_;
  int64_t numel_ = 0;
  DType dtype_ = DType::float32;
};

/// Converts n elements from one dtype to another (numpy's astype semantics: C++ casts, bool = !=0).
void convert_elements(const void* src, DType src_dtype, void* dst, DType dst_dtype, int64_t n);

}  // namespace mycel
