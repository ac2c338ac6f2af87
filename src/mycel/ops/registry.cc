#include "mycel/ops/registry.h"

#include <sstream>

#include "mycel/core/suggest.h"
#include "mycel/core/write_version.h"
#include "mycel/insight/insight.h"
#include "mycel/ops/data_dependent.h"
#include "mycel/ops/keywords.h"

namespace mycel {

// ---- OpDef ----

std::vector<std::string> attr_names(const OpDef& op) {
  std::vector<std::string> names;
  for (const AttrDef& a : op.attrs) {
    names.push_back(a.name);
    names.insert(names.end(), a.aliases.begin(), a.aliases.end());
  }
  return names;
}

std::vector<std::string> keyword_names(const OpDef& op) {
  std::vector<std::string> names;
  for (const InputDef& i : op.inputs) names.push_back(i.name);
  for (std::string& a : attr_names(op)) names.push_back(std::move(a));
  return names;
}

bool OpDef::supports(DType t) const {
  for (DType d : dtypes)
    if (d == t) return true;
  return false;
}

// ---- Registry ----

Registry& Registry::get() {
  static auto* r = new Registry();
  return *r;
}

void Registry::add(OpDef def) {
  auto fail = [&](const char* what) {
    MYCEL_THROW(RuntimeError, "op '", def.name, "' registered without ", what);
  };
  if (def.name.empty()) fail("a name");
  if (def.class_name.empty()) fail("a class name");
  if (def.doc.empty()) fail("a doc line");
  if (!def.infer) fail("infer");
  if (!def.kernel) fail("a CPU kernel");
  if (def.record_only && !def.effect) fail("`effect` (record-only ops are effects)");
  if (by_name_.count(def.name)) MYCEL_THROW(RuntimeError, "op '", def.name, "' registered twice");
  for (const auto* o : order_)
    if (o->class_name == def.class_name)
      MYCEL_THROW(RuntimeError, "class name '", def.class_name, "' used by '", o->name, "' and '",
                  def.name, "'");
  auto p = std::make_unique<OpDef>(std::move(def));
  order_.push_back(p.get());
  by_name_[p->name] = std::move(p);
}

const OpDef* Registry::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second.get();
}

const OpDef& Registry::at(const std::string& name) const {
  const OpDef* op = find(name);
  if (!op) MYCEL_THROW(ValueError, "no op named '", name, "'");
  return *op;
}

// ---- attributes ----

OpDef make_op(std::string name, std::string cls, std::string doc, std::vector<InputDef> inputs,
              std::vector<AttrDef> attrs, InferFn infer, KernelFn kernel, std::vector<DType> dtypes,
              std::string grad) {
  OpDef d;
  d.name = std::move(name);
  d.class_name = std::move(cls);
  d.doc = std::move(doc);
  d.inputs = std::move(inputs);
  d.attrs = std::move(attrs);
  d.infer = std::move(infer);
  d.kernel = std::move(kernel);
  d.dtypes = std::move(dtypes);
  d.grad = std::move(grad);
  return d;
}

AttrDef attr(std::string name, AttrKind kind, AttrValue def, std::vector<std::string> aliases) {
  return AttrDef{std::move(name), kind, std::move(def), false, std::move(aliases)};
}

namespace {
bool kind_matches(AttrKind k, const AttrValue& v) {
  switch (k) {
    case AttrKind::kBool:
      return std::holds_alternative<bool>(v);
    case AttrKind::kInt:
      return std::holds_alternative<int64_t>(v);
    case AttrKind::kFloat:
      return std::holds_alternative<double>(v);
    case AttrKind::kStr:
      return std::holds_alternative<std::string>(v);
    case AttrKind::kInts:
      return std::holds_alternative<std::vector<int64_t>>(v);
    case AttrKind::kFloats:
      return std::holds_alternative<std::vector<double>>(v);
    case AttrKind::kDType:
      return std::holds_alternative<DType>(v);
  }
  return false;
}

// Accepts the obvious conversions a Python caller expects: int for float, int for a 1-tuple.
AttrValue coerce(const OpDef& op, const AttrDef& a, AttrValue v) {
  if (std::holds_alternative<std::monostate>(v) || kind_matches(a.kind, v)) return v;
  if (a.kind == AttrKind::kFloat && std::holds_alternative<int64_t>(v))
    return static_cast<double>(std::get<int64_t>(v));
  if (a.kind == AttrKind::kInt && std::holds_alternative<bool>(v))
    return static_cast<int64_t>(std::get<bool>(v));
  if (a.kind == AttrKind::kInts && std::holds_alternative<int64_t>(v))
    return std::vector<int64_t>{std::get<int64_t>(v)};
  if (a.kind == AttrKind::kFloats && std::holds_alternative<double>(v))
    return std::vector<double>{std::get<double>(v)};
  if (a.kind == AttrKind::kFloats && std::holds_alternative<std::vector<int64_t>>(v)) {
    auto& iv = std::get<std::vector<int64_t>>(v);
    return std::vector<double>(iv.begin(), iv.end());
  }
  static const char* given[] = {"None",         "bool",           "int",  "float", "str",
                                "tuple of int", "tuple of float", "dtype"};
  MYCEL_THROW(TypeError, "[", op.name, "] attribute '", a.name, "' expects ",
              attr_kind_name(a.kind), ", got ", given[v.index()]);
}
}  // namespace

Attrs make_attrs(const OpDef& op, std::vector<AttrValue> given) {
  given.resize(op.attrs.size());
  for (size_t i = 0; i < op.attrs.size(); ++i) {
    const AttrDef& a = op.attrs[i];
    AttrValue& v = given[i];
    if (std::holds_alternative<std::monostate>(v)) v = a.default_value;
    if (std::holds_alternative<std::monostate>(v) && !a.optional)
      MYCEL_THROW(TypeError, "[", op.name, "] missing required attribute '", a.name, "' (",
                  attr_kind_name(a.kind), ")");
    v = coerce(op, a, std::move(v));
  }
  return Attrs(&op, std::move(given));
}

Attrs make_attrs(const OpDef& op, const std::map<std::string, AttrValue>& named) {
  std::vector<AttrValue> v(op.attrs.size());
  for (const auto& [k, val] : named) {
    int i = op.attr_index(k);
    if (i < 0)
      MYCEL_THROW(TypeError, "[", op.name, "] got an unexpected attribute '", k, "'",
                  did_you_mean(k, attr_names(op)));
    v[i] = val;
  }
  return make_attrs(op, std::move(v));
}

// ---- eager execution ----

namespace {
std::string dtype_list(const std::vector<DType>& ds) {
  std::ostringstream os;
  for (size_t i = 0; i < ds.size(); ++i) os << (i ? ", " : "") << dtype_name(ds[i]);
  return os.str();
}

const std::string& input_name(const OpDef& op, size_t i) {
  static const std::string unnamed = "input";
  if (op.inputs.empty()) return unnamed;
  return op.inputs[std::min(i, op.inputs.size() - 1)].name;
}
}  // namespace

namespace {
std::vector<TensorMeta> infer_sized(const OpDef& op, const InferContext& ctx, bool allow_data) {
  std::vector<TensorMeta> out = op.infer(ctx);
  for (size_t k = 0; k < out.size(); ++k) {
    int64_t count = 1;
    for (int64_t d : out[k].shape) {
      if (d == kDataDependent && allow_data) continue;
      if (d == kDataDependent)
        MYCEL_THROW(NotSupported, "[", op.name, "] output ", k, " has shape ",
                    shape_str(out[k].shape),
                    " with a size known only from the values; only eager "
                    "calls and compiled graphs run such ops (not vmap, lite or the parallel "
                    "planner)");
      if (d < 0)
        MYCEL_THROW(ShapeError, "[", op.name, "] output ", k, " would have shape ",
                    shape_str(out[k].shape), ", with a negative dimension");
      if (d != 0 && count > (int64_t{1} << 56) / d)
        MYCEL_THROW(ValueError, "[", op.name, "] output ", k, " would have shape ",
                    shape_str(out[k].shape), ": more than 2**56 elements");
      count *= d;
    }
  }
  return out;
}
}  // namespace

std::vector<TensorMeta> infer_checked(const OpDef& op, const InferContext& ctx) {
  return infer_sized(op, ctx, false);
}

std::vector<TensorMeta> infer_allowing_data_dependent(const OpDef& op, const InferContext& ctx) {
  return infer_sized(op, ctx, true);
}

bool has_data_dependent_dim(const TensorMeta& m) {
  for (int64_t d : m.shape)
    if (d == kDataDependent) return true;
  return false;
}

std::vector<Tensor> call_op(const OpDef& op, std::vector<Tensor> inputs, const Attrs& attrs) {
  bool variadic = !op.inputs.empty() && op.inputs.back().variadic;
  if (!variadic && inputs.size() != op.inputs.size())
    MYCEL_THROW(TypeError, "[", op.name, "] takes ", op.inputs.size(), " tensor inputs, got ",
                inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    bool optional = i < op.inputs.size() && op.inputs[i].optional && !op.inputs[i].variadic;
    if (!inputs[i].defined() && !optional)
      MYCEL_THROW(TypeError, "[", op.name, "] input '", input_name(op, i),
                  "' must be a tensor, got None");
  }
  if (op.promote_inputs && !inputs.empty()) {
    DType common = DType::bool_;
    bool first = true;
    for (const Tensor& t : inputs)
      if (t.defined()) {
        common = first ? t.dtype() : promote_types(common, t.dtype());
        first = false;
      }
    for (Tensor& t : inputs)
      if (t.defined() && t.dtype() != common) t = t.to(common);
  }
  if (!op.dtypes.empty() && static_cast<size_t>(op.dtype_input) < inputs.size()) {
    const Tensor& t = inputs[op.dtype_input];
    if (t.defined() && !op.supports(t.dtype()))
      MYCEL_THROW(TypeError, "[", op.name, "] input '", input_name(op, op.dtype_input),
                  "' has unsupported dtype ", dtype_name(t.dtype()),
                  "; supported: ", dtype_list(op.dtypes));
  }
  std::vector<TensorMeta> metas(inputs.size());
  std::vector<const TensorMeta*> meta_ptrs(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].defined()) {
      metas[i] = inputs[i].meta();
      meta_ptrs[i] = &metas[i];
    }
  std::vector<TensorMeta> out_metas =
      infer_allowing_data_dependent(op, InferContext{op, meta_ptrs, attrs});
  if (op.view && out_metas.size() == 1 && !inputs.empty())
    return {op.view(inputs[0], out_metas[0])};
  std::vector<Tensor> outputs;
  outputs.reserve(out_metas.size());
  // A size known only from the values: the kernel allocates that output (data_dependent.h).
  for (const TensorMeta& m : out_metas)
    outputs.push_back(has_data_dependent_dim(m) ? Tensor() : Tensor::empty(m));
  if (insight::hooks_on()) [[unlikely]] {  // eager dispatch's profiler/debugger hook
    auto launch = [&] { op.kernel(KernelContext{op, inputs, outputs, attrs}); };
    auto site_id = [&] {  // eager: the op alone; Python adds the Cell scope and source line
      return insight::profiler::eager_site(&op, [&] {
        insight::SiteInfo s;
        s.op = op.name;
        s.collective = op.effect && !op.record_only;
        for (const InputDef& d : op.inputs) s.input_names.push_back(d.name);
        return s;
      });
    };
    insight::hooked_launch(op.name, inputs, outputs, launch, site_id);
  } else {
    op.kernel(KernelContext{op, inputs, outputs, attrs});
  }
  for (int m : op.mutated_inputs)  // written in place: caches derived from them recompute
    if (m < static_cast<int>(inputs.size()) && inputs[m].defined())
      note_write(*inputs[m].storage());
  return outputs;
}

std::vector<Tensor> call_op(const std::string& name, std::vector<Tensor> inputs,
                            const std::map<std::string, AttrValue>& attrs) {
  const OpDef& op = Registry::get().at(name);
  return call_op(op, std::move(inputs), make_attrs(op, attrs));
}

// ---- dtype lists ----

std::vector<DType> all_dtypes() {
  std::vector<DType> v;
  for (int i = 0; i < kNumCoreDTypes; ++i) v.push_back(static_cast<DType>(i));
  return v;
}
std::vector<DType> every_dtype() {
  std::vector<DType> v;
  for (int i = 0; i < kNumDTypes; ++i) v.push_back(static_cast<DType>(i));
  return v;
}
std::vector<DType> numeric_dtypes() {
  auto v = all_dtypes();
  v.erase(v.begin());
  return v;
}
std::vector<DType> signed_dtypes() {
  return {DType::int8,    DType::int16,    DType::int32,   DType::int64,
          DType::float16, DType::bfloat16, DType::float32, DType::float64};
}
std::vector<DType> float_dtypes() {
  return {DType::float16, DType::bfloat16, DType::float32, DType::float64};
}
std::vector<DType> integer_dtypes() {
  return {DType::int8, DType::uint8, DType::int16, DType::int32, DType::int64};
}

}  // namespace mycel
