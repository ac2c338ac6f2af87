// Helpers for analysis and optimizer tests: IR built by hand in the frontend's canonical
// unresolved form (op, inputs, then every attribute position).
#pragma once
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "mycel/analysis/analysis.h"
#include "mycel/ir/checker.h"
#include "mycel/ir/printer.h"

namespace mycel::ir::testing {

/// A source location on line `line` of model.py whose text is `text`.
inline SourceLoc loc(int line, const std::string& text) {
  SourceLoc l;
  l.file = std::make_shared<const std::string>("model.py");
  l.line = line;
  l.col = 4;
  l.text = std::make_shared<const std::string>("    " + text);
  return l;
}

/// The canonical unresolved op call: Constant(op with default attrs), inputs, attribute nodes
/// (every schema position: missing ones are filled with their defaults as constants).
inline NodePtr uop(FuncGraph* g, const std::string& name, std::vector<NodePtr> inputs,
                   std::map<std::string, NodePtr> attrs = {}, SourceLoc l = {}) {
  const OpDef& d = Registry::get().at(name);
  std::vector<AttrValue> defaults;
  for (const auto& a : d.attrs) defaults.push_back(a.default_value);
  std::vector<NodePtr> in{g->constant(op_value(&d, Attrs(&d, defaults)))};
  in.insert(in.end(), inputs.begin(), inputs.end());
  for (const auto& a : d.attrs) {
    auto it = attrs.find(a.name);
    if (it != attrs.end()) {
      in.push_back(it->second);
      continue;
    }
    const AttrValue& v = a.default_value;
    ValuePtr c = none();
    if (auto* b = std::get_if<bool>(&v))
      c = boolean(*b);
    else if (auto* i = std::get_if<int64_t>(&v))
      c = integer(*i);
    else if (auto* f = std::get_if<double>(&v))
      c = floating(*f);
    else if (auto* s = std::get_if<std::string>(&v))
      c = string(*s);
    else if (auto* t = std::get_if<DType>(&v))
      c = dtype_value(*t);
    else if (auto* is = std::get_if<std::vector<int64_t>>(&v)) {
      std::vector<ValuePtr> items;
      for (int64_t x : *is) items.push_back(integer(x));
      c = tuple(items);
    }
    in.push_back(g->constant(c));
  }
  return g->apply(std::move(in), std::move(l));
}

/// A resolved op call (attributes already in the callee), as passes see them.
inline NodePtr rop(FuncGraph* g, const std::string& name, std::vector<NodePtr> inputs,
                   std::map<std::string, AttrValue> attrs = {}) {
  const OpDef& d = Registry::get().at(name);
  inputs.insert(inputs.begin(), g->constant(op_value(&d, make_attrs(d, attrs))));
  return g->apply(std::move(inputs));
}

inline NodePtr ints(FuncGraph* g, std::vector<int64_t> v) {
  std::vector<ValuePtr> items;
  for (int64_t x : v) items.push_back(integer(x));
  return g->constant(tuple(items));
}

inline AbstractPtr tensor(Shape s, DType t = DType::float32) {
  return std::make_shared<AbstractTensor>(std::move(s), t);
}
inline AbstractPtr scalar(ValueKind k, ValuePtr v = nullptr) {
  return std::make_shared<AbstractScalar>(k, std::move(v));
}
inline NodePtr call(FuncGraph* g, FuncGraph* callee, std::vector<NodePtr> args, SourceLoc l = {}) {
  args.insert(args.begin(), g->constant(graph_value(callee)));
  return g->apply(std::move(args), std::move(l));
}

/// Printed IR without location comments.
inline std::string text(const FuncGraph* g) { return print(*g); }

}  // namespace mycel::ir::testing
