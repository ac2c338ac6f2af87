// Autodiff glue: _mycel.ad.vjp runs one op's backward rule eagerly (op-level gradient checks).
#include <nanobind/stl/string.h>

#include "mycel/ad/eager_bprop.h"
#include "mycel/frontend/py_convert.h"

namespace mycel::py {

namespace {
ad::EagerValue eager_value(nb::handle h) {
  ad::EagerValue v;
  if (h.is_none()) return v;
  if (nb::isinstance<nb::tuple>(h) || nb::isinstance<nb::list>(h)) {
    v.is_tuple = true;
    for (nb::handle x : h) v.items.push_back(to_tensor(x));
    return v;
  }
  v.tensor = to_tensor(h);
  return v;
}

nb::object py_value(const ad::EagerValue& v) {
  if (v.is_tuple) {
    nb::list l;
    for (const Tensor& t : v.items) l.append(nb::cast(t));
    return nb::tuple(l);
  }
  return v.tensor ? nb::cast(*v.tensor) : nb::none();
}
}  // namespace

void init_ad(nb::module_& m) {
  nb::module_ ad = m.def_submodule("ad", "Automatic differentiation.");
  ad.def(
      "has_bprop", [](const std::string& op) { return BpropRegistry::get().find(op) != nullptr; },
      nb::arg("op"), "Whether the op has a backward rule.");
  ad.def(
      "vjp",
      [](const std::string& name, nb::sequence inputs, nb::handle dout, nb::kwargs kwargs) {
        const OpDef& op = Registry::get().at(name);
        std::vector<AttrValue> given(op.attrs.size());
        for (auto [k, v] : kwargs) {
          std::string key = nb::cast<std::string>(k);
          int i = op.attr_index(key);
          if (i < 0) MYCEL_THROW(TypeError, "[", name, "] has no attribute '", key, "'");
          given[i] = to_attr(op, op.attrs[i], v);
        }
        Attrs attrs = make_attrs(op, std::move(given));
        std::vector<ad::EagerValue> in;
        for (nb::handle h : inputs) in.push_back(eager_value(h));
        std::vector<ad::EagerValue> grads = ad::eager_vjp(op, in, attrs, eager_value(dout));
        nb::list out;
        for (const auto& g : grads) out.append(py_value(g));
        return nb::tuple(out);
      },
      nb::arg("op"), nb::arg("inputs"), nb::arg("dout"), nb::arg("attrs"),
      "Runs op's backward rule on tensors: one sensitivity per input (None: no gradient).");
}

}  // namespace mycel::py
