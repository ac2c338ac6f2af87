#include "mycel/ir/value.h"

#include <sstream>

#include "mycel/ir/func_graph.h"

namespace mycel::ir {

template <>
std::string BoolValue::repr() const {
  return v_ ? "True" : "False";
}
template <>
std::string IntValue::repr() const {
  return std::to_string(v_);
}
template <>
std::string FloatValue::repr() const {
  std::ostringstream os;
  os.precision(17);
  os << v_;
  std::string s = os.str();
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}
template <>
std::string StrValue::repr() const {
  return "\"" + v_ + "\"";
}
template <>
std::string DTypeValue::repr() const {
  return dtype_name(v_);
}

namespace {
const char* short_dtype(DType t) {
  static const char* n[] = {"bool", "i8",  "u8",  "i16", "i32", "i64", "f16", "bf16",
                            "f32",  "f64", "u16", "u32", "u64", "c64", "c128"};
  static_assert(sizeof(n) / sizeof(n[0]) == kNumDTypes);
  return n[static_cast<int>(t)];
}
}  // namespace

std::string TensorValue::repr() const {
  std::ostringstream os;
  os << "Tensor<" << short_dtype(t_.dtype()) << shape_str(t_.shape()) << ">";
  if (t_.numel() == 1) os << "{" << t_.item_as_double(0) << "}";
  return os.str();
}
bool TensorValue::equals(const Value& o) const {
  if (o.kind() != ValueKind::kTensor) return false;
  const Tensor& u = static_cast<const TensorValue&>(o).t_;
  return u.storage() == t_.storage() && u.offset() == t_.offset() && u.meta() == t_.meta();
}
size_t TensorValue::hash() const {
  return std::hash<const void*>()(t_.defined() ? t_.data() : nullptr);
}

std::string SequenceValue::repr() const {
  bool is_list = kind() == ValueKind::kList;
  std::string s = is_list ? "[" : "(";
  for (size_t i = 0; i < items_.size(); ++i) s += (i ? ", " : "") + items_[i]->repr();
  if (!is_list && items_.size() == 1) s += ",";
  return s + (is_list ? "]" : ")");
}
bool SequenceValue::equals(const Value& o) const {
  if (o.kind() != kind()) return false;
  const auto& b = static_cast<const SequenceValue&>(o).items_;
  if (b.size() != items_.size()) return false;
  for (size_t i = 0; i < b.size(); ++i)
    if (!items_[i]->equals(*b[i])) return false;
  return true;
}
size_t SequenceValue::hash() const {
  size_t h = static_cast<size_t>(kind()) * 31;
  for (const auto& v : items_) h = h * 1000003u ^ v->hash();
  return h;
}

std::string DictValue::repr() const {
  std::string s = "{";
  for (size_t i = 0; i < items_.size(); ++i)
    s += (i ? ", " : "") + items_[i].first->repr() + ": " + items_[i].second->repr();
  return s + "}";
}
bool DictValue::equals(const Value& o) const {
  if (o.kind() != ValueKind::kDict) return false;
  const auto& b = static_cast<const DictValue&>(o).items_;
  if (b.size() != items_.size()) return false;
  for (size_t i = 0; i < b.size(); ++i)
    if (!items_[i].first->equals(*b[i].first) || !items_[i].second->equals(*b[i].second))
      return false;
  return true;
}
size_t DictValue::hash() const {
  size_t h = 0xd1c7;
  for (const auto& [k, v] : items_) h = (h * 1000003u ^ k->hash()) * 31 ^ v->hash();
  return h;
}

namespace {
std::string attr_repr(const AttrValue& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using X = std::decay_t<decltype(x)>;
        std::ostringstream os;
        if constexpr (std::is_same_v<X, std::monostate>)
          os << "None";
        else if constexpr (std::is_same_v<X, bool>)
          os << (x ? "True" : "False");
        else if constexpr (std::is_same_v<X, std::string>)
          os << '"' << x << '"';
        else if constexpr (std::is_same_v<X, DType>)
          os << dtype_name(x);
        else if constexpr (std::is_same_v<X, std::vector<int64_t>> ||
                           std::is_same_v<X, std::vector<double>>) {
          os << "(";
          for (size_t i = 0; i < x.size(); ++i) os << (i ? ", " : "") << x[i];
          os << (x.size() == 1 ? ",)" : ")");
        } else
          os << x;
        return os.str();
      },
      v);
}
}  // namespace

std::string OpValue::repr() const {
  // Attributes equal to their defaults are left out, so printed IR stays short.
  std::string s = op_->name;
  std::string a;
  for (size_t i = 0; i < op_->attrs.size() && i < attrs_.values().size(); ++i) {
    const AttrValue& v = attrs_.values()[i];
    if (v == op_->attrs[i].default_value) continue;
    a += (a.empty() ? "" : ", ") + op_->attrs[i].name + "=" + attr_repr(v);
  }
  return a.empty() ? s : s + "[" + a + "]";
}
bool OpValue::equals(const Value& o) const {
  if (o.kind() != ValueKind::kOp) return false;
  const auto& b = static_cast<const OpValue&>(o);
  return b.op_ == op_ && b.attrs_.values() == attrs_.values();
}
size_t OpValue::hash() const { return std::hash<std::string>()(repr()); }

std::string GraphValue::repr() const { return "@" + g_->name(); }

ValuePtr none() {
  static ValuePtr v = std::make_shared<NoneValue>();
  return v;
}
ValuePtr boolean(bool v) { return std::make_shared<BoolValue>(v); }
ValuePtr integer(int64_t v) { return std::make_shared<IntValue>(v); }
ValuePtr floating(double v) { return std::make_shared<FloatValue>(v); }
ValuePtr string(std::string v) { return std::make_shared<StrValue>(std::move(v)); }
ValuePtr dtype_value(DType t) { return std::make_shared<DTypeValue>(t); }
ValuePtr tensor_value(Tensor t) { return std::make_shared<TensorValue>(std::move(t)); }
ValuePtr tuple(std::vector<ValuePtr> items) {
  return std::make_shared<SequenceValue>(ValueKind::kTuple, std::move(items));
}
ValuePtr list(std::vector<ValuePtr> items) {
  return std::make_shared<SequenceValue>(ValueKind::kList, std::move(items));
}
ValuePtr op_value(const OpDef* op, Attrs attrs) {
  return std::make_shared<OpValue>(op, std::move(attrs));
}
ValuePtr prim_value(Prim p) { return std::make_shared<PrimValue>(p); }
ValuePtr graph_value(FuncGraph* g) { return std::make_shared<GraphValue>(g); }

}  // namespace mycel::ir

namespace mycel::ir {

std::string BatchAxes::repr() const {
  if (leaf) return mapped ? std::to_string(axis) : "None";
  std::string s = "(";
  for (size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + items[i].repr();
  return s + (items.size() == 1 ? ",)" : ")");
}

std::string GradFlags::repr() const {
  std::string s = "grad_op[";
  if (all_positions) {
    s += "all";
  } else {
    s += "pos=(";
    for (size_t i = 0; i < positions.size(); ++i)
      s += (i ? "," : "") + std::to_string(positions[i]);
    s += positions_tuple ? ",)" : ")";
  }
  if (with_weights) s += " weights";
  if (return_value) s += " value";
  if (has_aux) s += " aux";
  if (sens_param) s += " sens";
  return s + "]";
}

}  // namespace mycel::ir
