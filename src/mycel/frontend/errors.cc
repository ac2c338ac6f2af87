// Source locations of ast nodes and the located errors of graph mode: "file:line:col: what is
// wrong; what to write instead", then the source line and a caret under the column.
#include "mycel/frontend/parser.h"

namespace mycel::frontend {

std::string ast_type(nb::handle node) {
  return nb::cast<std::string>(
      nb::handle(reinterpret_cast<PyObject*>(Py_TYPE(node.ptr()))).attr("__name__"));
}

std::string str_attr(nb::handle o, const char* attr) { return nb::cast<std::string>(o.attr(attr)); }

void collect_locals(nb::handle ast_module, nb::handle body, std::set<std::string>& out) {
  nb::object walk = ast_module.attr("walk");
  for (nb::handle st : body)
    for (nb::handle n : walk(st)) {
      std::string t = ast_type(n);
      if (t == "Name" && ast_type(n.attr("ctx")) != "Load")
        out.insert(str_attr(n, "id"));  // Store, Del
      if (t == "FunctionDef") out.insert(str_attr(n, "name"));
    }
}

SourceLoc Parser::loc_of(nb::handle node) const {
  SourceLoc loc;
  const SourceInfo* src = current_scope ? current_scope->src : nullptr;
  if (!src || !nb::hasattr(node, "lineno")) return loc;
  int line = nb::cast<int>(node.attr("lineno"));
  loc.file = src->file;
  loc.line = src->first_line + line - 1;
  loc.col = nb::cast<int>(node.attr("col_offset")) + src->indent;
  if (line >= 1 && line <= static_cast<int>(src->lines.size())) loc.text = src->lines[line - 1];
  return loc;
}

void Parser::error(const SourceLoc& loc, const std::string& kind, const std::string& msg) const {
  std::string file = loc.file ? *loc.file : std::string("<unknown>");
  std::string text = loc.text ? *loc.text : std::string();
  // no location (the entry function itself): the message alone, not "<unknown>:0:1:"
  std::string full = loc.known() ? file + ":" + std::to_string(loc.line) + ":" +
                                       std::to_string(loc.col + 1) + ": " + msg
                                 : msg;
  if (!text.empty()) {
    full += "\n    " + text + "\n    " +
            std::string(static_cast<size_t>(std::max(loc.col, 0)), ' ') + "^";
  }
  throw FrontendError(kind, full, file, loc.line, loc.col + 1, text);
}

void Parser::unsupported(nb::handle node, const std::string& construct,
                         const std::string& instead) const {
  error(loc_of(node), "SyntaxError",
        "'" + construct + "' is not supported in graph mode; " + instead);
}

}  // namespace mycel::frontend
