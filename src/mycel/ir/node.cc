#include "mycel/ir/node.h"

#include "mycel/ir/func_graph.h"

namespace mycel::ir {

std::string SourceLoc::str() const {
  if (!known()) return "<unknown>";
  return (file ? *file : std::string("<string>")) + ":" + std::to_string(line) + ":" +
         std::to_string(col);
}

std::string SourceLoc::line_str() const {
  if (!known()) return "";
  std::string t = text ? *text : std::string();
  size_t b = t.find_first_not_of(" \t");
  t = b == std::string::npos ? std::string() : t.substr(b);
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
  return (file ? *file : std::string("<string>")) + ":" + std::to_string(line) + ": " + t;
}

std::vector<std::string> inlined_callers(const SourceLoc& loc) {
  std::vector<std::string> out;
  for (const InlinedFrame* f = loc.inlined_at.get(); f; f = f->site.inlined_at.get()) {
    if (!f->site.known() || is_control_flow_line(f->site)) continue;
    out.push_back("called from " + f->site.line_str());
    if (f->callee) out.push_back("  " + *f->callee);
  }
  return out;
}

bool is_control_flow_line(const SourceLoc& loc) {
  if (!loc.text) return false;
  const std::string& t = *loc.text;
  size_t b = t.find_first_not_of(" \t");
  if (b == std::string::npos) return false;
  for (const char* kw : {"if ", "elif ", "else:", "while ", "for ", "async for ", "assert ",
                         "with ", "try:", "except:", "except "})
    if (t.compare(b, std::char_traits<char>::length(kw), kw) == 0) return true;
  return false;
}

bool is_prim_value(const NodePtr& n, Prim p) {
  Constant* c = as_constant(n);
  return c && c->value()->kind() == ValueKind::kPrim &&
         static_cast<const PrimValue&>(*c->value()).prim() == p;
}

bool is_prim_call(const NodePtr& n, Prim p) {
  Apply* a = as_apply(n);
  return a && is_prim_value(a->callee(), p);
}

FuncGraph* constant_graph(const NodePtr& n) {
  Constant* c = as_constant(n);
  if (!c || c->value()->kind() != ValueKind::kGraph) return nullptr;
  return static_cast<const GraphValue&>(*c->value()).graph();
}

}  // namespace mycel::ir
