// Computation graphs as TensorBoard GraphDefs: nodes with scoped names, inputs and typed
// attributes -> a serialized Event (graph_def field), and a GraphDef read back -> nodes.
#include <algorithm>
#include <type_traits>

#include "mycel/core/error.h"
#include "mycel/insight/detail.h"
#include "mycel/insight/proto/event.pb.h"
#include "mycel/insight/proto/graph.pb.h"

namespace mycel::insight {

namespace pb = mycel::insight::proto;

namespace {

void set_shape(const std::vector<int64_t>& dims, pb::TensorShapeProto* s) {
  for (int64_t d : dims) s->add_dim()->set_size(d);
}

void set_attr(const GraphAttr& a, pb::AttrValue* out) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          out->set_s(x);
        } else if constexpr (std::is_same_v<T, int64_t>) {
          out->set_i(x);
        } else if constexpr (std::is_same_v<T, double>) {
          out->set_f(static_cast<float>(x));
        } else if constexpr (std::is_same_v<T, bool>) {
          out->set_b(x);
        } else if constexpr (std::is_same_v<T, DType>) {
          out->set_type(static_cast<pb::DataType>(detail::proto_dtype(x, true)));
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          auto* l = out->mutable_list();
          for (int64_t v : x) l->add_i(v);
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          auto* l = out->mutable_list();
          for (double v : x) l->add_f(static_cast<float>(v));
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          auto* l = out->mutable_list();
          for (const auto& v : x) l->add_s(v);
        } else if constexpr (std::is_same_v<T, std::vector<DType>>) {
          auto* l = out->mutable_list();
          for (DType v : x) l->add_type(static_cast<pb::DataType>(detail::proto_dtype(v, true)));
        } else {  // a list of shapes (TensorBoard's _output_shapes)
          auto* l = out->mutable_list();
          for (const auto& dims : x) set_shape(dims, l->add_shape());
        }
      },
      a);
}

std::vector<int64_t> shape_dims(const pb::TensorShapeProto& s) {
  std::vector<int64_t> d;
  for (const auto& dim : s.dim()) d.push_back(dim.size());
  return d;
}

DType dtype_or_float(int t) {
  DType d = DType::float32;
  detail::dtype_from_proto(t, &d);  // strings and others: shown as float32 (never written by us)
  return d;
}

// The one non-empty list decides the alternative; an empty list reads back as ints.
GraphAttr list_attr(const pb::AttrValue::ListValue& l) {
  if (!l.s().empty()) return std::vector<std::string>(l.s().begin(), l.s().end());
  if (!l.f().empty()) return std::vector<double>(l.f().begin(), l.f().end());
  if (!l.type().empty()) {
    std::vector<DType> t;
    for (int v : l.type()) t.push_back(dtype_or_float(v));
    return t;
  }
  if (!l.shape().empty()) {
    std::vector<std::vector<int64_t>> s;
    for (const auto& sh : l.shape()) s.push_back(shape_dims(sh));
    return s;
  }
  if (!l.b().empty()) {
    std::vector<int64_t> b(l.b().begin(), l.b().end());
    return b;
  }
  return std::vector<int64_t>(l.i().begin(), l.i().end());
}

GraphAttr read_attr(const pb::AttrValue& a) {
  switch (a.value_case()) {
    case pb::AttrValue::kS:
      return a.s();
    case pb::AttrValue::kI:
      return static_cast<int64_t>(a.i());
    case pb::AttrValue::kF:
      return static_cast<double>(a.f());
    case pb::AttrValue::kB:
      return a.b();
    case pb::AttrValue::kType:
      return dtype_or_float(a.type());
    case pb::AttrValue::kShape:
      return std::vector<std::vector<int64_t>>{shape_dims(a.shape())};
    case pb::AttrValue::kList:
      return list_attr(a.list());
    default:  // a tensor value: shown by its kind only
      return std::string("<tensor>");
  }
}

}  // namespace

std::string graph_event(int64_t step, double wall_time, const std::vector<GraphNode>& nodes) {
  pb::GraphDef g;
  g.mutable_versions()->set_producer(1);
  for (const GraphNode& n : nodes) {
    pb::NodeDef* d = g.add_node();
    d->set_name(n.name);
    d->set_op(n.op);
    for (const auto& in : n.inputs) d->add_input(in);
    for (const auto& [key, value] : n.attrs) set_attr(value, &(*d->mutable_attr())[key]);
  }
  pb::Event e;
  e.set_step(step);
  e.set_wall_time(wall_time);
  e.set_graph_def(g.SerializeAsString());
  return e.SerializeAsString();
}

std::vector<GraphNode> decode_graph_def(const std::string& bytes) {
  pb::GraphDef g;
  if (!g.ParseFromString(bytes))
    MYCEL_THROW(ValueError, "graph summary: the GraphDef (", bytes.size(),
                " bytes) does not parse");
  std::vector<GraphNode> out;
  out.reserve(g.node_size());
  for (const auto& d : g.node()) {
    GraphNode n{d.name(), d.op(), {d.input().begin(), d.input().end()}, {}};
    for (const auto& [key, value] : d.attr()) n.attrs.emplace_back(key, read_attr(value));
    std::sort(n.attrs.begin(), n.attrs.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    out.push_back(std::move(n));
  }
  return out;
}

}  // namespace mycel::insight
