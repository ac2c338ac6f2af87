// Abstract values: what analysis knows about a node without running it. A tensor's shape may hold
// kDynamic dims (known only at run time); a scalar may carry its constant value.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "mycel/core/tensor.h"
#include "mycel/ir/value.h"

namespace mycel::ir {

inline constexpr int64_t kDynamic = -1;  // a dimension known only at run time

class Abstract;
using AbstractPtr = std::shared_ptr<const Abstract>;

enum class AbstractKind { kTensor, kScalar, kTuple, kFunction, kNone };

class Abstract {
 public:
  explicit Abstract(AbstractKind k) : kind_(k) {}
  virtual ~Abstract() = default;
  AbstractKind kind() const { return kind_; }
  /// Printer form: "f32[2, 3]", "f32[?, 10]", "int=3", "(f32[2], int)".
  virtual std::string repr() const = 0;
  virtual bool equals(const Abstract& o) const = 0;

 private:
  AbstractKind kind_;
};

/// A tensor of known dtype and (partly) known shape.
class AbstractTensor : public Abstract {
 public:
  AbstractTensor(Shape shape, DType dtype)
      : Abstract(AbstractKind::kTensor), shape_(std::move(shape)), dtype_(dtype) {}
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  bool is_dynamic() const;
  std::string repr() const override;
  bool equals(const Abstract& o) const override;

 private:
  Shape shape_;
  DType dtype_;
};

/// A Python scalar (bool, int, float, str, dtype): its type and, when constant, its value.
class AbstractScalar : public Abstract {
 public:
  AbstractScalar(ValueKind type, ValuePtr value)
      : Abstract(AbstractKind::kScalar), type_(type), value_(std::move(value)) {}
  ValueKind type() const { return type_; }
  const ValuePtr& value() const { return value_; }  // nullptr when only the type is known
  std::string repr() const override;
  bool equals(const Abstract& o) const override;

 private:
  ValueKind type_;
  ValuePtr value_;
};

/// A tuple or list of abstract values.
class AbstractTuple : public Abstract {
 public:
  AbstractTuple(std::vector<AbstractPtr> items, bool is_list = false)
      : Abstract(AbstractKind::kTuple), items_(std::move(items)), is_list_(is_list) {}
  const std::vector<AbstractPtr>& items() const { return items_; }
  bool is_list() const { return is_list_; }
  std::string repr() const override;
  bool equals(const Abstract& o) const override;

 private:
  std::vector<AbstractPtr> items_;
  bool is_list_;
};

/// A function: a graph (possibly a closure), an op, a graph primitive, or a partial application.
class AbstractFunction : public Abstract {
 public:
  explicit AbstractFunction(ValuePtr callee, std::vector<AbstractPtr> bound_args = {})
      : Abstract(AbstractKind::kFunction),
        callee_(std::move(callee)),
        bound_(std::move(bound_args)) {}
  const ValuePtr& callee() const { return callee_; }
  const std::vector<AbstractPtr>& bound_args() const { return bound_; }
  std::string repr() const override;
  bool equals(const Abstract& o) const override;

 private:
  ValuePtr callee_;
  std::vector<AbstractPtr> bound_;
};

/// None.
class AbstractNone : public Abstract {
 public:
  AbstractNone() : Abstract(AbstractKind::kNone) {}
  std::string repr() const override { return "None"; }
  bool equals(const Abstract& o) const override { return o.kind() == AbstractKind::kNone; }
};

}  // namespace mycel::ir
