#include "mycel/kernels/kernel_context.h"

namespace mycel {

const char* attr_kind_name(AttrKind k) {
  switch (k) {
    case AttrKind::kBool:
      return "bool";
    case AttrKind::kInt:
      return "int";
    case AttrKind::kFloat:
      return "float";
    case AttrKind::kStr:
      return "str";
    case AttrKind::kInts:
      return "tuple of int";
    case AttrKind::kFloats:
      return "tuple of float";
    case AttrKind::kDType:
      return "dtype";
  }
  return "?";
}

int OpSchema::attr_index(std::string_view n) const {
  for (size_t i = 0; i < attrs.size(); ++i) {
    if (attrs[i].name == n) return static_cast<int>(i);
    for (const auto& a : attrs[i].aliases)
      if (a == n) return static_cast<int>(i);
  }
  return -1;
}

bool Attrs::has(std::string_view name) const {
  int i = op_ ? op_->attr_index(name) : -1;
  return i >= 0 && !std::holds_alternative<std::monostate>(values_[i]);
}

const AttrValue& Attrs::get(std::string_view name) const {
  int i = op_ ? op_->attr_index(name) : -1;
  if (i < 0)
    MYCEL_THROW(RuntimeError, "[", op_ ? op_->name : "?", "] has no attribute '", name, "'");
  return values_[i];
}

namespace {
template <class T>
const T& get_as(const Attrs& a, std::string_view name) {
  const AttrValue& v = a.get(name);
  if (auto* p = std::get_if<T>(&v)) return *p;
  MYCEL_THROW(RuntimeError, "[", a.op()->name, "] attribute '", name,
              "' is unset or of another kind");
}
}  // namespace

bool Attrs::get_bool(std::string_view n) const { return get_as<bool>(*this, n); }
int64_t Attrs::get_int(std::string_view n) const { return get_as<int64_t>(*this, n); }
double Attrs::get_float(std::string_view n) const { return get_as<double>(*this, n); }
const std::string& Attrs::get_str(std::string_view n) const {
  return get_as<std::string>(*this, n);
}
const std::vector<int64_t>& Attrs::get_ints(std::string_view n) const {
  return get_as<std::vector<int64_t>>(*this, n);
}
const std::vector<double>& Attrs::get_floats(std::string_view n) const {
  return get_as<std::vector<double>>(*this, n);
}
DType Attrs::get_dtype(std::string_view n) const { return get_as<DType>(*this, n); }

}  // namespace mycel
