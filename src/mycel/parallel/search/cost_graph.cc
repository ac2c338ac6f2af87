// The cost graph, its evaluation, the memory-limited solve (Lagrangian bisection around either
// search), the tree-then-refine heuristic and the brute force used by the tests.
#include "mycel/parallel/search/cost_graph.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "mycel/core/error.h"

namespace mycel::parallel::search {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Bytes in the largest unit that keeps a digit before the point (KiB, MiB or GiB).
std::string mib(double bytes) {
  char buf[64];
  const double k = 1024.0;
  if (bytes >= k * k * k)
    std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / (k * k * k));
  else if (bytes >= k * k)
    std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / (k * k));
  else
    std::snprintf(buf, sizeof buf, "%.1f KiB", bytes / k);
  return buf;
}

// Strategies whose own memory fits; an op with none left is an error naming it.
std::vector<std::vector<char>> allowed_strategies(const CostGraph& g, double limit) {
  std::vector<std::vector<char>> allowed(g.nodes().size());
  double total_min = 0;
  int worst = -1;
  double worst_min = 0;
  for (size_t v = 0; v < g.nodes().size(); ++v) {
    const auto& costs = g.nodes()[v].costs;
    allowed[v].assign(costs.size(), 1);
    double min_mem = kInf;
    bool any = false;
    for (size_t s = 0; s < costs.size(); ++s) {
      min_mem = std::min(min_mem, costs[s].memory);
      if (limit > 0 && costs[s].memory > limit) allowed[v][s] = 0;
      any = any || allowed[v][s];
    }
    if (!any)
      MYCEL_THROW(ValueError, "[auto_parallel] op '", g.nodes()[v].name, "' needs at least ",
                  mib(min_mem), " per device under every one of its ", costs.size(),
                  " strategies, but the memory limit is ", mib(limit));
    total_min += min_mem;
    if (worst < 0 || min_mem > worst_min) worst = static_cast<int>(v), worst_min = min_mem;
  }
  if (limit > 0 && total_min > limit)
    MYCEL_THROW(ValueError, "[auto_parallel] no strategy fits the memory limit of ", mib(limit),
                " per device: the graph needs at least ", mib(total_min), "; the largest op is '",
                g.nodes()[worst].name, "' needing at least ", mib(worst_min));
  return allowed;
}

}  // namespace

int CostGraph::add_node(std::string name, std::vector<Cost> costs) {
  MYCEL_CHECK(!costs.empty(), ValueError, "[cost_graph] op '", name, "' has no strategy");
  for (const Cost& c : costs)
    MYCEL_CHECK(std::isfinite(c.time) && c.time >= 0 && std::isfinite(c.memory) && c.memory >= 0,
                ValueError, "[cost_graph] op '", name,
                "': costs must be finite and >= 0, got time ", c.time, " memory ", c.memory);
  nodes_.push_back({std::move(name), std::move(costs)});
  return static_cast<int>(nodes_.size()) - 1;
}

void CostGraph::add_edge(int from, int to, std::vector<double> time) {
  const int n = static_cast<int>(nodes_.size());
  MYCEL_CHECK(from >= 0 && from < n && to >= 0 && to < n && from != to, ValueError,
              "[cost_graph] edge ", from, " -> ", to, " must join two different nodes among ", n);
  const size_t want = nodes_[from].costs.size() * nodes_[to].costs.size();
  MYCEL_CHECK(time.size() == want, ValueError, "[cost_graph] edge '", nodes_[from].name, "' -> '",
              nodes_[to].name, "' needs a ", nodes_[from].costs.size(), " x ",
              nodes_[to].costs.size(), " matrix (", want, " values), got ", time.size());
  for (double t : time)
    MYCEL_CHECK(std::isfinite(t) && t >= 0, ValueError, "[cost_graph] edge '", nodes_[from].name,
                "' -> '", nodes_[to].name, "': times must be finite and >= 0, got ", t);
  edges_.push_back({from, to, std::move(time)});
}

Cost CostGraph::evaluate(const std::vector<int>& choice) const {
  MYCEL_CHECK(choice.size() == nodes_.size(), ValueError,
              "[cost_graph] a choice needs one strategy "
              "per op: ",
              nodes_.size(), " ops, got ", choice.size());
  Cost total;
  for (size_t v = 0; v < nodes_.size(); ++v) {
    MYCEL_CHECK(choice[v] >= 0 && choice[v] < static_cast<int>(nodes_[v].costs.size()), ValueError,
                "[cost_graph] op '", nodes_[v].name, "' has ", nodes_[v].costs.size(),
                " strategies, got index ", choice[v]);
    total.time += nodes_[v].costs[choice[v]].time;
    total.memory += nodes_[v].costs[choice[v]].memory;
  }
  for (const CostEdge& e : edges_)
    total.time += e.time[choice[e.from] * nodes_[e.to].costs.size() + choice[e.to]];
  return total;
}

Solution tree_refine(const CostGraph& g, double lambda,
                     const std::vector<std::vector<char>>& allowed) {
  const size_t n = g.nodes().size();
  std::vector<std::vector<std::pair<int, bool>>> adj(n);  // (edge, this node is the producer)
  for (size_t i = 0; i < g.edges().size(); ++i) {
    adj[g.edges()[i].from].push_back({static_cast<int>(i), true});
    adj[g.edges()[i].to].push_back({static_cast<int>(i), false});
  }
  // Keep one edge per node towards an earlier node (the one whose cost varies most), which makes
  // a forest, and solve that forest exactly: children fold into parents, roots pick, parents
  // hand their choice down.
  std::vector<int> keep(n, -1);
  std::vector<double> spread(n, -1);
  for (size_t i = 0; i < g.edges().size(); ++i) {
    const CostEdge& e = g.edges()[i];
    const int child = std::max(e.from, e.to);
    const auto [lo, hi] = std::minmax_element(e.time.begin(), e.time.end());
    if (*hi - *lo > spread[child]) spread[child] = *hi - *lo, keep[child] = static_cast<int>(i);
  }
  std::vector<std::vector<double>> w(n);
  for (size_t v = 0; v < n; ++v) {
    const auto& costs = g.nodes()[v].costs;
    w[v].resize(costs.size());
    for (size_t s = 0; s < costs.size(); ++s)
      w[v][s] = allowed[v][s] ? costs[s].time + lambda * costs[s].memory : kInf;
  }
  std::vector<std::vector<int>> arg(n);
  for (size_t v = n; v-- > 0;) {
    if (keep[v] < 0) continue;
    const CostEdge& e = g.edges()[keep[v]];
    const bool v_is_to = e.to == static_cast<int>(v);
    const size_t p = v_is_to ? e.from : e.to, np = w[p].size(), nv = w[v].size();
    const size_t nt = g.nodes()[e.to].costs.size();
    arg[v].assign(np, 0);
    for (size_t sp = 0; sp < np; ++sp) {
      double best = kInf;
      for (size_t sv = 0; sv < nv; ++sv) {
        const double t = w[v][sv] + (v_is_to ? e.time[sp * nt + sv] : e.time[sv * nt + sp]);
        if (t < best) best = t, arg[v][sp] = static_cast<int>(sv);
      }
      w[p][sp] += best;
    }
  }
  std::vector<int> choice(n, -1);
  for (size_t v = 0; v < n; ++v) {
    if (keep[v] < 0) {
      choice[v] = static_cast<int>(std::min_element(w[v].begin(), w[v].end()) - w[v].begin());
    } else {
      const CostEdge& e = g.edges()[keep[v]];
      choice[v] = arg[v][choice[e.to == static_cast<int>(v) ? e.from : e.to]];
    }
  }
  // Cost of node v under s given its neighbours' current choices (unassigned ones ignored).
  auto local = [&](size_t v, int s) {
    const Cost& c = g.nodes()[v].costs[s];
    double t = c.time + lambda * c.memory;
    for (auto [ei, producer] : adj[v]) {
      const CostEdge& e = g.edges()[ei];
      const int other = producer ? choice[e.to] : choice[e.from];
      if (other < 0) continue;
      const size_t nt = g.nodes()[e.to].costs.size();
      t += producer ? e.time[s * nt + other] : e.time[other * nt + s];
    }
    return t;
  };
  auto best_of = [&](size_t v) {
    int best = -1;
    double best_t = kInf;
    for (int s = 0; s < static_cast<int>(g.nodes()[v].costs.size()); ++s) {
      if (!allowed[v][s]) continue;
      const double t = local(v, s);
      if (t < best_t) best_t = t, best = s;
    }
    return best;
  };
  for (int sweep = 0; sweep < 8; ++sweep) {  // refine over every edge until no op changes its mind
    bool changed = false;
    for (size_t v = 0; v < n; ++v) {
      const int b = best_of(v);
      if (local(v, b) < local(v, choice[v]) * (1 - 1e-12)) choice[v] = b, changed = true;
    }
    if (!changed) break;
  }
  Solution sol;
  sol.choice = std::move(choice);
  const Cost c = g.evaluate(sol.choice);
  sol.time = c.time, sol.memory = c.memory, sol.exact = false, sol.lambda = lambda;
  return sol;
}

Solution solve(const CostGraph& g, SearchMode mode, double memory_limit) {
  MYCEL_CHECK(!g.nodes().empty(), ValueError, "[auto_parallel] the cost graph has no op");
  if (mode == SearchMode::kBruteForce) return brute_force(g, memory_limit);
  const auto allowed = allowed_strategies(g, memory_limit);
  auto run = [&](double lambda) {
    return mode == SearchMode::kDynamicProgramming ? eliminate_and_reconstruct(g, lambda, allowed)
                                                   : tree_refine(g, lambda, allowed);
  };
  Solution sol = run(0);
  if (memory_limit <= 0 || sol.memory <= memory_limit) return sol;
  // The limit binds: price memory. Find a feasible price, then bisect (geometrically) towards the
  // cheapest feasible one; every feasible solution seen is a candidate.
  Solution best;
  best.time = kInf;
  auto consider = [&](const Solution& s) {
    if (s.memory <= memory_limit && s.time < best.time) best = s;
    return s.memory <= memory_limit;
  };
  double lo = 0, hi = std::max(sol.time, 1e-30) / std::max(sol.memory, 1.0) * 1e-3;
  int tries = 0;
  while (!consider(run(hi)) && tries++ < 200) lo = hi, hi *= 4;
  if (!std::isfinite(best.time)) {
    // Cannot happen while each op's minimum-memory strategy fits (checked above), short of
    // floating-point ties; pick the minimum-memory strategy everywhere.
    Solution m;
    m.choice.resize(g.nodes().size());
    for (size_t v = 0; v < g.nodes().size(); ++v) {
      const auto& c = g.nodes()[v].costs;
      m.choice[v] =
          static_cast<int>(std::min_element(c.begin(), c.end(),
                                            [](auto& a, auto& b) {
                                              return a.memory < b.memory ||
                                                     (a.memory == b.memory && a.time < b.time);
                                            }) -
                           c.begin());
    }
    const Cost c = g.evaluate(m.choice);
    m.time = c.time, m.memory = c.memory, m.exact = false;
    return m;
  }
  for (int it = 0; it < 40 && (lo == 0 ? true : hi / lo > 1 + 1e-4); ++it) {
    const double mid = lo == 0 ? hi / 1024 : std::sqrt(lo * hi);
    if (consider(run(mid)))
      hi = mid;
    else
      lo = mid;
    if (lo == 0 && hi < 1e-300) break;
  }
  best.exact = false;  // a Lagrangian price is optimal only at the frontier's corners
  return best;
}

Solution brute_force(const CostGraph& g, double memory_limit, double max_combos) {
  const auto allowed = allowed_strategies(g, memory_limit);
  const size_t n = g.nodes().size();
  double combos = 1;
  std::vector<std::vector<int>> options(n);
  for (size_t v = 0; v < n; ++v) {
    for (size_t s = 0; s < allowed[v].size(); ++s)
      if (allowed[v][s]) options[v].push_back(static_cast<int>(s));
    combos *= static_cast<double>(options[v].size());
  }
  MYCEL_CHECK(combos <= max_combos, ValueError, "[cost_graph] brute force over ", combos,
              " combinations exceeds the cap of ", max_combos);
  std::vector<size_t> digit(n, 0);
  std::vector<int> choice(n);
  Solution best;
  best.time = kInf;
  while (true) {
    for (size_t v = 0; v < n; ++v) choice[v] = options[v][digit[v]];
    const Cost c = g.evaluate(choice);
    if ((memory_limit <= 0 || c.memory <= memory_limit) && c.time < best.time)
      best.choice = choice, best.time = c.time, best.memory = c.memory;
    size_t v = 0;
    while (v < n && ++digit[v] == options[v].size()) digit[v++] = 0;
    if (v == n) break;
  }
  MYCEL_CHECK(std::isfinite(best.time), ValueError,
              "[auto_parallel] no combination of strategies "
              "fits the memory limit of ",
              mib(memory_limit), " per device");
  return best;
}

}  // namespace mycel::parallel::search
