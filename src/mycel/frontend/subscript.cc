// Subscripts. Sequences known at parse time (tuple literals, shapes, *args, constants) use
// tuple_getitem / dict_getitem; everything else is tensor indexing, lowered to the registry ops
// eager __getitem__ uses for basic indices: strided_slice (ints, slices, None, ...) or gather, and
// both for one index tensor among basic items (x[:, idx]).
#include "mycel/frontend/parser.h"

namespace mycel::frontend {

namespace {
int64_t const_int(const NodePtr& n, bool* ok) {
  ir::Constant* c = ir::as_constant(n);
  *ok = c && c->value()->kind() == ir::ValueKind::kInt;
  return *ok ? static_cast<const ir::IntValue&>(*c->value()).value() : 0;
}
}  // namespace

NodePtr Parser::subscript(Block* b, nb::handle e) {
  SourceLoc loc = loc_of(e);
  NodePtr base = expr(b, e.attr("value"));
  nb::handle key = e.attr("slice");
  const std::string kt = ast_type(key);
  if (const PyObjectValue* pv = py_object_of(base)) {  // a Python container: index it now
    NodePtr k = expr(b, key);
    ir::Constant* c = ir::as_constant(k);
    if (c && c->value()->kind() != ir::ValueKind::kTuple) {
      nb::object kv;
      if (auto* kp = py_object_of(k))
        kv = kp->object();
      else if (c->value()->kind() == ir::ValueKind::kInt)
        kv = nb::int_(static_cast<const ir::IntValue&>(*c->value()).value());
      else if (c->value()->kind() == ir::ValueKind::kStr)
        kv = nb::str(static_cast<const ir::StrValue&>(*c->value()).value().c_str());
      if (kv.is_valid()) {
        try {
          return object_node(b, pv->object()[kv], loc);
        } catch (nb::python_error& err) {
          error(loc, "IndexError", err.what());
        }
      }
    }
  }
  if (dict_nodes.count(base.get())) return prim(b, Prim::kDictGetItem, {base, expr(b, key)}, loc);
  if (kt == "Constant" && nb::isinstance<nb::str>(key.attr("value")))  // d["k"]: a dict that came
    return prim(b, Prim::kDictGetItem, {base, expr(b, key)}, loc);     // through a call or branch
  if (is_sequence(base)) {
    if (kt == "Slice") {
      auto part = [&](const char* f) -> nb::object {
        nb::handle x = key.attr(f);
        if (x.is_none()) return nb::none();
        bool ok;
        int64_t v = const_int(expr(b, x), &ok);
        if (!ok)
          unsupported(x, "a tuple slice bound that is not a constant", "use integer literals");
        return nb::int_(v);
      };
      nb::object sl = nb::module_::import_("builtins")
                          .attr("slice")(part("lower"), part("upper"), part("step"));
      NodePtr getitem = constant(py_object(nb::module_::import_("operator").attr("getitem")));
      NodePtr r = apply(b, {getitem, base, constant(py_object(sl))}, loc);
      seq_nodes.insert(r.get());
      if (shape_nodes.count(base.get())) shape_nodes.insert(r.get());
      return r;
    }
    NodePtr r = prim(b, Prim::kTupleGetItem, {base, expr(b, key)}, loc);
    if (shape_nodes.count(base.get())) scalar_nodes.insert(r.get());
    return r;
  }
  if (nb::object k = constant_advanced_key(b, key); k.is_valid()) {
    // The positions x[key] selects, computed by numpy when compiling (x's shape is known then),
    // then one gather.
    static nb::handle positions =
        nb::object(nb::module_::import_("mycel.common.graph_syntax").attr("key_positions"))
            .release();
    nb::object at_shape =
        nb::module_::import_("functools").attr("partial")(positions, nb::arg("key") = k);
    NodePtr pos =
        apply(b, {constant(py_object(at_shape)), prim(b, Prim::kShape, {base}, loc)}, loc);
    return call_value(b, library_graph("mycel.common.graph_syntax", "gather_positions", loc),
                      {base, prim(b, Prim::kTupleGetItem, {pos, constant(ir::integer(0))}, loc),
                       prim(b, Prim::kTupleGetItem, {pos, constant(ir::integer(1))}, loc)},
                      {}, loc);
  }
  NodePtr index;
  KeyIndex in_tuple;
  std::vector<NodePtr> sargs = strided_key(b, key, &index, &in_tuple);
  if (index)  // x[index_tensor], or x[i] with i an int known only at run time
    return call_value(b, library_graph("mycel.common.graph_syntax", "getitem_index", loc),
                      {base, index}, {}, loc);
  sargs.insert(sargs.begin(), base);
  NodePtr part = op_by_name(b, "strided_slice", std::move(sargs), {}, loc);
  if (!in_tuple.index) return part;
  // x[:, idx] as eager mode does it: the basic items slice x (the tensor's axis kept whole), then
  // a gather along that axis; index_placement (run at compile time, errors as eager's) gives the
  // axis and the transpose numpy's rule needs when an int index is not next to the tensor.
  static nb::handle placement =
      nb::object(nb::module_::import_("mycel.common.graph_syntax").attr("index_placement"))
          .release();
  NodePtr idx = in_tuple.index;
  NodePtr where = apply(b,
                        {constant(py_object(placement)), constant(ir::string(in_tuple.kinds)),
                         prim(b, Prim::kRank, {base}, loc), prim(b, Prim::kDTypeOf, {idx}, loc),
                         prim(b, Prim::kRank, {idx}, loc)},
                        loc);
  NodePtr axis = prim(b, Prim::kTupleGetItem, {where, constant(ir::integer(0))}, loc);
  NodePtr perm = prim(b, Prim::kTupleGetItem, {where, constant(ir::integer(1))}, loc);
  return call_value(b, library_graph("mycel.common.graph_syntax", "getitem_gather", loc),
                    {part, idx, axis, perm}, {}, loc);
}

namespace {
// A constant list or tuple of ints used as an index (x[:, [0, 2]]): the int64 tensor numpy makes.
nb::object int_array(const ir::Value& v) {
  if (v.kind() == ir::ValueKind::kInt) return nb::int_(static_cast<const ir::IntValue&>(v).value());
  if (v.kind() != ir::ValueKind::kTuple && v.kind() != ir::ValueKind::kList) return {};
  nb::list l;
  for (const auto& x : static_cast<const ir::SequenceValue&>(v).items()) {
    nb::object o = int_array(*x);
    if (!o.is_valid()) return {};
    l.append(o);
  }
  return l;
}
}  // namespace

namespace {
// Whether evaluating this key expression only reads names (so it may be tried twice).
bool reads_only(nb::handle e) {
  if (e.is_none()) return true;
  const std::string t = ast_type(e);
  if (t == "Name" || t == "Constant") return true;
  if (t == "Attribute") return reads_only(e.attr("value"));
  if (t == "UnaryOp") return reads_only(e.attr("operand"));
  if (t == "Slice")
    return reads_only(e.attr("lower")) && reads_only(e.attr("upper")) && reads_only(e.attr("step"));
  if (t == "List" || t == "Tuple") {
    for (nb::handle x : e.attr("elts"))
      if (!reads_only(x)) return false;
    return true;
  }
  return false;
}
}  // namespace

nb::object Parser::constant_advanced_key(Block* b, nb::handle key) {
  if (!reads_only(key)) return {};
  std::vector<nb::handle> items;
  const bool is_tuple = ast_type(key) == "Tuple";
  if (is_tuple)
    for (nb::handle x : key.attr("elts")) items.push_back(x);
  else
    items.push_back(key);
  nb::list parts;
  for (nb::handle x : items) {
    if (ast_type(x) == "Slice") {
      nb::object bounds[3];
      const char* fields[3] = {"lower", "upper", "step"};
      for (int i = 0; i < 3; ++i) {
        nb::handle f = x.attr(fields[i]);
        if (f.is_none()) {
          bounds[i] = nb::none();
          continue;
        }
        bounds[i] = to_python(expr(b, f));
        if (!bounds[i].is_valid()) return {};
      }
      parts.append(nb::module_::import_("builtins").attr("slice")(bounds[0], bounds[1], bounds[2]));
      continue;
    }
    nb::object v = to_python(expr(b, x));
    if (!v.is_valid()) return {};
    parts.append(v);
  }
  nb::object k = is_tuple ? nb::object(nb::tuple(parts)) : nb::object(parts[0]);
  static nb::handle needs =
      nb::object(nb::module_::import_("mycel.common.graph_syntax").attr("needs_positions"))
          .release();
  return nb::cast<bool>(needs(k)) ? k : nb::object();
}

// A tensor key as strided_slice's arguments after x (begin, end, strides, the five masks), or
// empty with *index set when the key is one tensor (a gather index or a bool mask).
std::vector<NodePtr> Parser::strided_key(Block* b, nb::handle key, NodePtr* index,
                                         KeyIndex* in_tuple) {
  SourceLoc loc = loc_of(key);
  const std::string kt = ast_type(key);
  *index = nullptr;
  std::vector<nb::handle> items;
  if (kt == "Tuple")
    for (nb::handle x : key.attr("elts")) items.push_back(x);
  else
    items.push_back(key);
  std::vector<NodePtr> begin, end, strides;
  std::string kinds;
  int64_t begin_mask = 0, end_mask = 0, ellipsis_mask = 0, new_axis_mask = 0, shrink_mask = 0;
  bool all_const = true;
  auto bound = [&](NodePtr n) {
    if (!ir::as_constant(n)) all_const = false;
    return n;
  };
  for (size_t j = 0; j < items.size(); ++j) {
    nb::handle x = items[j];
    int64_t bit = int64_t{1} << j;
    NodePtr zero = constant(ir::integer(0)), one = constant(ir::integer(1));
    if (ast_type(x) == "Slice") {
      kinds += 's';
      nb::handle lo = x.attr("lower"), hi = x.attr("upper"), st = x.attr("step");
      if (lo.is_none()) {
        begin_mask |= bit;
        begin.push_back(zero);
      } else
        begin.push_back(bound(expr(b, lo)));
      if (hi.is_none()) {
        end_mask |= bit;
        end.push_back(zero);
      } else
        end.push_back(bound(expr(b, hi)));
      strides.push_back(st.is_none() ? one : bound(expr(b, st)));
      continue;
    }
    NodePtr k = expr(b, x);
    ir::Constant* c = ir::as_constant(k);
    if (c && c->value()->kind() == ir::ValueKind::kNone) {
      new_axis_mask |= bit;
      kinds += 'n';
    } else if (py_object_of(k) && py_object_of(k)->object().ptr() == Py_Ellipsis) {
      ellipsis_mask |= bit;
      kinds += 'e';
    } else if (is_scalar(k)) {
      bool ok;
      int64_t v = const_int(k, &ok);
      if (!ok && items.size() == 1) {  // x[i], i an int counter (of a loop over a dynamic dim):
        *index = k;                    // a gather, whose index need not be known when compiling
        return {};
      }
      shrink_mask |= bit;
      begin.push_back(bound(k));
      end.push_back(ok ? constant(ir::integer(v + 1))
                       : bound(prim(b, Prim::kScalarAdd, {k, one}, loc)));
      strides.push_back(one);
      kinds += 'i';
      continue;
    } else if (items.size() == 1) {
      *index = k;
      return {};
    } else if (!in_tuple) {
      unsupported(x, "a tensor index inside a tuple key in item assignment",
                  "assign through ops.tensor_scatter_elements, or index one axis at a time");
    } else if (in_tuple->index) {
      unsupported(x, "several index tensors in one key", "index one axis at a time (x[:, i][j])");
    } else {
      // The tensor's axis is sliced whole here and gathered afterwards (subscript()).
      nb::object list = c ? int_array(*c->value()) : nb::object();
      in_tuple->index = list.is_valid() ? object_node(b,
                                                      nb::module_::import_("numpy").attr("asarray")(
                                                          list, nb::arg("dtype") = "int64"),
                                                      loc)
                                        : k;
      kinds += 'a';
      begin_mask |= bit;
      end_mask |= bit;
    }
    begin.push_back(zero);
    end.push_back(zero);
    strides.push_back(one);
  }
  if (in_tuple && in_tuple->index) in_tuple->kinds = kinds;
  auto tup = [&](std::vector<NodePtr> v) {
    return sequence(b, Prim::kMakeTuple, std::move(v), loc);
  };
  (void)all_const;
  auto ci = [&](int64_t v) { return constant(ir::integer(v)); };
  return {tup(begin),   tup(end),          tup(strides),      ci(begin_mask),
          ci(end_mask), ci(ellipsis_mask), ci(new_axis_mask), ci(shrink_mask)};
}

}  // namespace mycel::frontend
