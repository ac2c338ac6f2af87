#include "mycel/ir/abstract.h"

namespace mycel::ir {

bool AbstractTensor::is_dynamic() const {
  for (int64_t d : shape_)
    if (d == kDynamic) return true;
  return false;
}

std::string AbstractTensor::repr() const {
  static const char* n[] = {"bool", "i8",  "u8",  "i16", "i32", "i64", "f16", "bf16",
                            "f32",  "f64", "u16", "u32", "u64", "c64", "c128"};
  static_assert(sizeof(n) / sizeof(n[0]) == kNumDTypes);
  std::string s = std::string(n[static_cast<int>(dtype_)]) + "[";
  for (size_t i = 0; i < shape_.size(); ++i)
    s += (i ? ", " : "") + (shape_[i] == kDynamic ? std::string("?") : std::to_string(shape_[i]));
  return s + "]";
}

bool AbstractTensor::equals(const Abstract& o) const {
  if (o.kind() != AbstractKind::kTensor) return false;
  const auto& b = static_cast<const AbstractTensor&>(o);
  return b.dtype_ == dtype_ && b.shape_ == shape_;
}

std::string AbstractScalar::repr() const {
  static const char* names[] = {"None", "bool", "int", "float", "str", "dtype"};
  int k = static_cast<int>(type_);
  std::string s = k < 6 ? names[k] : "scalar";
  return value_ ? s + "=" + value_->repr() : s;
}

bool AbstractScalar::equals(const Abstract& o) const {
  if (o.kind() != AbstractKind::kScalar) return false;
  const auto& b = static_cast<const AbstractScalar&>(o);
  if (b.type_ != type_) return false;
  if (!b.value_ || !value_) return !b.value_ && !value_;
  return b.value_->equals(*value_);
}

std::string AbstractTuple::repr() const {
  std::string s = is_list_ ? "[" : "(";
  for (size_t i = 0; i < items_.size(); ++i) s += (i ? ", " : "") + items_[i]->repr();
  if (!is_list_ && items_.size() == 1) s += ",";
  return s + (is_list_ ? "]" : ")");
}

bool AbstractTuple::equals(const Abstract& o) const {
  if (o.kind() != AbstractKind::kTuple) return false;
  const auto& b = static_cast<const AbstractTuple&>(o);
  if (b.is_list_ != is_list_ || b.items_.size() != items_.size()) return false;
  for (size_t i = 0; i < items_.size(); ++i)
    if (!items_[i]->equals(*b.items_[i])) return false;
  return true;
}

std::string AbstractFunction::repr() const {
  std::string s = "fn:" + callee_->repr();
  if (bound_.empty()) return s;
  s += "(";
  for (size_t i = 0; i < bound_.size(); ++i) s += (i ? ", " : "") + bound_[i]->repr();
  return s + ", ...)";
}

bool AbstractFunction::equals(const Abstract& o) const {
  if (o.kind() != AbstractKind::kFunction) return false;
  const auto& b = static_cast<const AbstractFunction&>(o);
  if (!b.callee_->equals(*callee_) || b.bound_.size() != bound_.size()) return false;
  for (size_t i = 0; i < bound_.size(); ++i)
    if (!bound_[i]->equals(*b.bound_[i])) return false;
  return true;
}

}  // namespace mycel::ir
