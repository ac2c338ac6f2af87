// The cost graph of the strategy search: one node per op with a cost per candidate strategy, one
// edge per producer->consumer tensor with a redistribution cost per pair of strategies. The
// searches (dynamic programming, a fast heuristic, brute force for tests) pick one strategy per
// node, minimising total time under a per-device memory limit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mycel::parallel::search {

/// One strategy's cost for one op: time in seconds and memory in bytes per device.
struct Cost {
  double time = 0;
  double memory = 0;
};

/// A node: an op and its candidate strategies' costs.
struct CostNode {
  std::string name;
  std::vector<Cost> costs;
};

/// An edge between two nodes: time[s_from * |S_to| + s_to], the redistribution time between the
/// producer's layout under s_from and the consumer's wanted layout under s_to.
struct CostEdge {
  int from = 0;
  int to = 0;
  std::vector<double> time;
};

/// Which search found a solution and whether it is provably optimal for its objective.
struct Solution {
  std::vector<int> choice;  ///< strategy index per node
  double time = 0;          ///< total time: node costs plus edge costs
  double memory = 0;        ///< total memory per device
  bool exact = true;        ///< false when the search fell back to a heuristic step
  int eliminations[6] = {0, 0, 0, 0, 0, 0};  ///< op, edge, merge, contract, triangle, star
  double lambda = 0;                         ///< memory price used (0 when the limit did not bind)
};

/// Names of Solution::eliminations, in order.
inline const char* const kEliminationNames[6] = {"op",       "edge",     "merge",
                                                 "contract", "triangle", "star"};

class CostGraph {
 public:
  /// Adds an op with its strategies' costs; returns its id (ids are consecutive from 0).
  int add_node(std::string name, std::vector<Cost> costs);
  /// Adds an edge; the matrix must be |S_from| x |S_to|, row-major.
  void add_edge(int from, int to, std::vector<double> time);

  const std::vector<CostNode>& nodes() const { return nodes_; }
  const std::vector<CostEdge>& edges() const { return edges_; }
  /// Total time and memory of a choice (one strategy index per node); checks the indices.
  Cost evaluate(const std::vector<int>& choice) const;

 private:
  std::vector<CostNode> nodes_;
  std::vector<CostEdge> edges_;
};

/// Minimises time + lambda * memory exactly by the paper's eliminations (operator, edge, merge,
/// contract, triangle) and, where none applies, star elimination of the busiest node by trying
/// each of its strategies (exact while the branch budget lasts, else a greedy pick:
/// Solution::exact says which). `allowed[node][s]` false removes a strategy.
Solution eliminate_and_reconstruct(const CostGraph& g, double lambda,
                                   const std::vector<std::vector<char>>& allowed);

/// The fast heuristic (recursive_programming): solves exactly the forest that keeps, per node, its
/// costliest edge to an earlier node, then refines each node's choice against all its edges.
Solution tree_refine(const CostGraph& g, double lambda,
                     const std::vector<std::vector<char>>& allowed);

/// Which search to run.
enum class SearchMode { kDynamicProgramming, kRecursiveProgramming, kBruteForce };

/// Picks one strategy per node minimising total time with total memory <= memory_limit (bytes;
/// <= 0 means no limit). Strategies whose own memory exceeds the limit are never chosen; when a
/// node has none left, or no combination fits, throws ValueError naming the op and the memory it
/// needs. With a binding limit, memory is priced by a Lagrange multiplier found by bisection.
Solution solve(const CostGraph& g, SearchMode mode, double memory_limit);

/// Exhaustive search over every combination (tests only; refuses more than `max_combos`).
Solution brute_force(const CostGraph& g, double memory_limit, double max_combos = 5e6);

}  // namespace mycel::parallel::search
