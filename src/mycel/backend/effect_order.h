// Ordering of side effects in a compiled function. assign(weight, value) writes a Parameter in
// place, so within one step it must run after every read of that weight, including reads through
// views and inside called graphs (loop bodies, branches). An input of the compiled function is
// written in place the same way (a Parameter passed to construct: MindSpore updates it). MindSpore
// threads a monad through such effects; for the steps we compile (forward, backward, then the
// optimizer's writes) "every read before the write" is the whole rule, and these extra edges give
// it to the scheduler.
#pragma once
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "mycel/ir/func_graph.h"

namespace mycel::backend::detail {

class EffectOrder {
 public:
  /// `top`: the compiled function, whose inputs may be assign targets as weights are.
  explicit EffectOrder(const ir::FuncGraph* top) : top_(top) {}
  /// Whether assign may write n: a weight, or an input of the compiled function.
  bool is_state(const ir::NodePtr& n) const;
  /// Extra dependencies among `nodes` (the applies of g to schedule): each node writing a weight
  /// depends on every node reading it that does not itself consume the write.
  std::unordered_map<const ir::Node*, std::vector<ir::NodePtr>> deps(
      const ir::FuncGraph* g, const std::vector<ir::NodePtr>& nodes);
  /// The weights g or a graph it calls writes.
  const std::unordered_set<const ir::Node*>& written(const ir::FuncGraph* g) {
    return of_graph(g).writes;
  }

 private:
  struct Uses {
    std::unordered_set<const ir::Node*> reads, writes;  // weight or input Parameter nodes
  };
  const ir::FuncGraph* top_;
  const Uses& of_graph(const ir::FuncGraph* g);  // transitive over the graphs g uses
  std::unordered_map<const ir::FuncGraph*, Uses> memo_;
};

}  // namespace mycel::backend::detail
