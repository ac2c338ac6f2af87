#include "mycel/ad/eager_bprop.h"

namespace mycel::ad {

namespace {

class EagerBpropBuilder : public BpropBuilder {
 public:
  EagerBpropBuilder(const OpDef& op, const Attrs& attrs) : op_(op), attrs_(attrs) {}

  GradVar add_value(EagerValue v) {
    vals_.push_back(std::move(v));
    return GradVar(static_cast<int>(vals_.size()) - 1);
  }
  const EagerValue& value(const GradVar& v) const {
    if (!v.defined() || v.id() >= static_cast<int>(vals_.size()))
      MYCEL_THROW(RuntimeError, "[", op_.name, " bprop] uses an undefined value");
    return vals_[v.id()];
  }
  void set_forward(std::vector<GradVar> in, GradVar out, GradVar dout) {
    in_ = std::move(in);
    out_ = out;
    dout_ = dout;
  }

  const OpDef& op() const override { return op_; }
  const Attrs& attrs() const override { return attrs_; }
  GradVar input(size_t i) override { return in_.at(i); }
  GradVar out() override { return out_; }
  GradVar dout() override { return dout_; }
  TensorMeta meta(const GradVar& v) const override {
    const EagerValue& e = value(v);
    if (!e.tensor)
      MYCEL_THROW(RuntimeError, "[", op_.name, " bprop] meta() of a tuple or absent value");
    return {e.tensor->shape(), e.tensor->dtype()};
  }
  TensorMeta out_meta(size_t k) const override {
    const EagerValue& e = value(out_);
    const Tensor& t = e.is_tuple ? e.items.at(k) : *e.tensor;
    return {t.shape(), t.dtype()};
  }
  size_t tuple_size(const GradVar& v) const override { return value(v).items.size(); }

  GradVar call(const std::string& name, std::vector<GradVar> inputs,
               const std::map<std::string, AttrValue>& attrs) override {
    const OpDef& def = Registry::get().at(name);
    std::vector<Tensor> ts;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i].defined()) {
        ts.emplace_back();
        continue;
      }
      const EagerValue& e = value(inputs[i]);
      if (e.is_tuple)
        ts.insert(ts.end(), e.items.begin(), e.items.end());
      else
        ts.push_back(e.tensor ? *e.tensor : Tensor());
    }
    std::vector<Tensor> outs = call_op(def, std::move(ts), make_attrs(def, attrs));
    EagerValue r;
    if (outs.size() == 1)
      r.tensor = outs[0];
    else
      r = EagerValue{std::nullopt, std::move(outs), true};
    return add_value(std::move(r));
  }
  GradVar constant(const Tensor& t) override { return add_value({t, {}, false}); }
  GradVar make_tuple(std::vector<GradVar> items) override {
    EagerValue r;
    r.is_tuple = true;
    for (const GradVar& g : items) {
      const EagerValue& e = value(g);
      if (!e.tensor) MYCEL_THROW(RuntimeError, "[", op_.name, " bprop] make_tuple of a non-tensor");
      r.items.push_back(*e.tensor);
    }
    return add_value(std::move(r));
  }
  GradVar tuple_get(const GradVar& t, size_t i) override {
    const EagerValue& e = value(t);
    if (!e.is_tuple || i >= e.items.size())
      MYCEL_THROW(RuntimeError, "[", op_.name, " bprop] tuple_get(", i, ") of a value with ",
                  e.items.size(), " items");
    return add_value({e.items[i], {}, false});
  }

 private:
  const OpDef& op_;
  const Attrs& attrs_;
  std::vector<EagerValue> vals_;
  std::vector<GradVar> in_;
  GradVar out_, dout_;
};

}  // namespace

std::vector<EagerValue> eager_vjp(const OpDef& op, const std::vector<EagerValue>& inputs,
                                  const Attrs& attrs, const EagerValue& dout) {
  const BpropFn* rule = BpropRegistry::get().find(op.name);
  if (!rule)
    MYCEL_THROW(NotSupported, "[", op.name, "] has no backward rule (gradient policy '", op.grad,
                "')");
  if (inputs.size() != op.inputs.size())
    MYCEL_THROW(TypeError, "[", op.name, " vjp] expects ", op.inputs.size(), " inputs, got ",
                inputs.size());
  EagerBpropBuilder b(op, attrs);
  std::vector<GradVar> in;
  std::vector<Tensor> flat;
  for (const EagerValue& v : inputs) {
    in.push_back(v.tensor || v.is_tuple ? b.add_value(v) : GradVar());
    if (v.is_tuple)
      flat.insert(flat.end(), v.items.begin(), v.items.end());
    else
      flat.push_back(v.tensor ? *v.tensor : Tensor());
  }
  std::vector<Tensor> outs = call_op(op, flat, attrs);
  EagerValue out;
  if (outs.size() == 1)
    out.tensor = outs[0];
  else
    out = EagerValue{std::nullopt, outs, true};
  GradVar o = b.add_value(out);
  b.set_forward(in, o, b.add_value(dout));
  std::vector<GradVar> grads = (*rule)(b);
  if (grads.size() != op.inputs.size())
    MYCEL_THROW(RuntimeError, "[", op.name, " bprop] returned ", grads.size(),
                " sensitivities for ", op.inputs.size(), " inputs");
  std::vector<EagerValue> result;
  for (const GradVar& g : grads) result.push_back(g.defined() ? b.value(g) : EagerValue{});
  return result;
}

}  // namespace mycel::ad
