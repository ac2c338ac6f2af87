// Export glue: a specialized, optimized FuncGraph as plain Python data (ops with their full
// attribute sets, weights, abstract shapes), which mycel.onnx and mycel.lite serialize. The walk
// reads the IR only; what a file format needs is decided in Python next to that format.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <unordered_map>

#include "mycel/frontend/frontend.h"
#include "mycel/frontend/py_convert.h"
#include "mycel/ir/func_graph.h"
#include "mycel/ir/prim.h"

namespace mycel::py {

nb::object value_to_py(const ir::Value& v);  // bind_graph.cc

namespace {

nb::object attr_to_py(const AttrValue& a) {
  return std::visit(
      [](const auto& x) -> nb::object {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>)
          return nb::none();
        else if constexpr (std::is_same_v<T, std::vector<int64_t>> ||
                           std::is_same_v<T, std::vector<double>>) {
          nb::list l;
          for (auto v : x) l.append(nb::cast(v));
          return nb::tuple(l);
        } else {
          return nb::cast(x);
        }
      },
      a);
}

/// ("tensor", shape with None for dynamic dims, dtype) | ("tuple", [items]) | ("other", repr).
nb::object abstract_to_py(const ir::AbstractPtr& a) {
  if (!a) return nb::none();
  if (a->kind() == ir::AbstractKind::kTensor) {
    const auto& t = static_cast<const ir::AbstractTensor&>(*a);
    nb::list shape;
    for (int64_t d : t.shape()) shape.append(d == ir::kDynamic ? nb::none() : nb::cast(d));
    return nb::make_tuple("tensor", nb::tuple(shape), nb::cast(t.dtype()));
  }
  if (a->kind() == ir::AbstractKind::kTuple) {
    nb::list items;
    for (const auto& i : static_cast<const ir::AbstractTuple&>(*a).items())
      items.append(abstract_to_py(i));
    return nb::make_tuple("tuple", items);
  }
  return nb::make_tuple("other", a->repr());
}

class GraphWalker {
 public:
  explicit GraphWalker(const ir::FuncGraph& g) : g_(g) {}

  nb::dict run() {
    nb::list params;
    for (size_t i = 0; i < g_.parameters().size(); ++i) {
      auto* p = static_cast<ir::Parameter*>(g_.parameters()[i].get());
      index_[p] = nb::make_tuple("param", i);
      nb::dict d;
      d["name"] = p->name();
      d["weight"] = p->is_weight() ? nb::cast(p->bound()) : nb::none();
      d["abstract"] = abstract_to_py(p->abstract());
      params.append(d);
    }
    nb::list nodes;
    for (const ir::NodePtr& n : g_.toposort()) nodes.append(node(n));
    nb::dict out;
    out["name"] = g_.name();
    out["params"] = params;
    out["nodes"] = nodes;
    out["output"] = ref(g_.output());
    out["output_abstract"] = abstract_to_py(g_.output()->abstract());
    return out;
  }

 private:
  nb::object ref(const ir::NodePtr& n) {
    auto it = index_.find(n.get());
    if (it != index_.end()) return it->second;
    if (auto* c = ir::as_constant(n)) {
      const ir::Value& v = *c->value();
      if (v.kind() == ir::ValueKind::kGraph || v.kind() == ir::ValueKind::kOp ||
          v.kind() == ir::ValueKind::kPrim)
        MYCEL_THROW(NotSupported, "export: the graph ", g_.name(), " passes a function value (",
                    v.repr(), ") as data; only straight-line tensor programs can be exported");
      return nb::make_tuple("const", value_to_py(v));
    }
    MYCEL_THROW(NotSupported, "export: the graph ", g_.name(), " uses a free variable (",
                n->debug_name(), "); only a flat inference graph can be exported");
  }

  nb::dict node(const ir::NodePtr& n) {
    auto* a = ir::as_apply(n);
    nb::dict d;
    d["id"] = static_cast<int64_t>(index_.size());
    auto* callee = ir::as_constant(a->callee());
    std::string where = n->loc().known() ? " (" + n->loc().str() + ")" : "";
    if (!callee)
      MYCEL_THROW(NotSupported, "export: a call of a computed function remains in ", g_.name(),
                  where);
    const ir::Value& v = *callee->value();
    nb::dict attrs;
    if (v.kind() == ir::ValueKind::kOp) {
      const auto& op = static_cast<const ir::OpValue&>(v);
      d["kind"] = "op";
      d["op"] = op.op().name;
      const auto& vals = op.attrs().values();
      for (size_t i = 0; i < op.op().attrs.size() && i < vals.size(); ++i)
        attrs[op.op().attrs[i].name.c_str()] = attr_to_py(vals[i]);
    } else if (v.kind() == ir::ValueKind::kPrim) {
      d["kind"] = "prim";
      d["op"] = ir::prim_name(static_cast<const ir::PrimValue&>(v).prim());
    } else {
      MYCEL_THROW(
          NotSupported, "export: ", g_.name(), " still calls ", v.repr(), where,
          " (control flow or a call that was not inlined); export needs a straight-line graph");
    }
    d["attrs"] = attrs;
    nb::list inputs;
    for (size_t i = 0; i < a->num_args(); ++i) inputs.append(ref(a->arg(i)));
    d["inputs"] = inputs;
    d["abstract"] = abstract_to_py(n->abstract());
    d["name"] = n->debug_name();
    d["loc"] = n->loc().known() ? nb::cast(n->loc().str()) : nb::none();
    // The Cells the node was inlined from, innermost first (their labels: "self.fc (Dense<...>)"),
    // so tools name its scope exactly rather than guessing it from source lines.
    nb::list cells;
    for (const ir::InlinedFrame* f = n->loc().inlined_at.get(); f; f = f->site.inlined_at.get())
      if (f->callee) cells.append(*f->callee);
    d["cells"] = cells;
    nb::object r = nb::make_tuple("node", d["id"]);
    index_[n.get()] = r;
    return d;
  }

  const ir::FuncGraph& g_;
  std::unordered_map<const ir::Node*, nb::object> index_;
};

}  // namespace

nb::dict graph_to_py(const ir::FuncGraph& g) { return GraphWalker(g).run(); }

}  // namespace mycel::py
