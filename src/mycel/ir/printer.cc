#include "mycel/ir/printer.h"

#include <sstream>
#include <unordered_map>
#include <unordered_set>

namespace mycel::ir {
namespace {

class Printer {
 public:
  explicit Printer(const PrintOptions& o) : opts_(o) {}

  std::string run(const FuncGraph& root) {
    std::vector<const FuncGraph*> order{&root};
    std::unordered_set<const FuncGraph*> seen{&root};
    for (size_t i = 0; i < order.size(); ++i)
      for (FuncGraph* u : order[i]->used_graphs())
        if (seen.insert(u).second) order.push_back(u);
    for (size_t i = 0; i < order.size(); ++i) {
      if (i) os_ << "\n";
      print_graph(*order[i]);
    }
    return os_.str();
  }

 private:
  std::string name(const NodePtr& n) {
    auto it = names_.find(n.get());
    if (it != names_.end()) return it->second;
    std::string s;
    if (Parameter* p = as_parameter(n)) {
      s = "%" + p->name();
      while (used_.count(s)) s = "%" + p->name() + "." + std::to_string(++dup_);
    } else {
      s = "%" + std::to_string(++counter_);
    }
    used_.insert(s);
    names_[n.get()] = s;
    return s;
  }

  std::string ref(const NodePtr& n) {
    if (!n) return "<null>";
    if (Constant* c = as_constant(n)) return c->value()->repr();
    return name(n);
  }

  std::string typed(const NodePtr& n) {
    std::string s = name(n);
    if (opts_.abstracts && n->abstract()) s += ": " + n->abstract()->repr();
    return s;
  }

  void print_graph(const FuncGraph& g) {
    os_ << "graph @" << g.name() << "(";
    for (size_t i = 0; i < g.parameters().size(); ++i)
      os_ << (i ? ", " : "") << typed(g.parameters()[i]);
    os_ << ") {";
    if (g.parent()) os_ << "  # in @" << g.parent()->name();
    os_ << "\n";
    for (const NodePtr& n : g.toposort()) {
      auto* a = static_cast<Apply*>(n.get());
      std::string line = "  " + typed(n) + " = " + ref(a->callee()) + "(";
      for (size_t i = 0; i < a->num_args(); ++i) line += (i ? ", " : "") + ref(a->arg(i));
      line += ")";
      std::string comment;
      if (!n->debug_name().empty()) comment += n->debug_name();
      if (opts_.locations && n->loc().known())
        comment += (comment.empty() ? "" : " ") + n->loc().str();
      if (!comment.empty()) line += "  # " + comment;
      os_ << line << "\n";
    }
    os_ << "  return " << ref(g.output()) << "\n}\n";
  }

  PrintOptions opts_;
  std::ostringstream os_;
  std::unordered_map<const Node*, std::string> names_;
  std::unordered_set<std::string> used_;
  int counter_ = 0, dup_ = 0;
};

}  // namespace

std::string print(const FuncGraph& g, const PrintOptions& opts) { return Printer(opts).run(g); }

}  // namespace mycel::ir
