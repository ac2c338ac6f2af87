// The dynamic-programming strategy search (MindSpore's dp_algo / OptCNN): eliminate ops from the
// cost graph while keeping, for every remaining choice, the best choice of what was eliminated;
// solve what is left; then replay the eliminations backwards to recover each op's strategy.
#include <algorithm>
#include <limits>

#include "mycel/parallel/search/cost_graph.h"

namespace mycel::parallel::search {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
enum Elim { kOp, kEdge, kMerge, kContract, kTriangle, kStar };

struct WNode {
  std::vector<double> w;  // time + lambda * memory per strategy; +inf where not allowed
  std::vector<int> edges;
  bool alive = true;
};
struct WEdge {
  int u, v;  // m[su * |S_v| + sv]
  std::vector<double> m;
  bool alive = true;
};
// How to recover an eliminated node: from one neighbour (leaf) or from two (degree 2).
struct Record {
  int v, a, b;           // b < 0 for a leaf
  std::vector<int> arg;  // best s_v per s_a (leaf) or per (s_a, s_b)
};

struct Work {
  std::vector<WNode> nodes;
  std::vector<WEdge> edges;
  double constant = 0;  // cost of nodes fixed by star elimination
  int counts[6] = {0, 0, 0, 0, 0, 0};
  bool exact = true;

  size_t n_of(int v) const { return nodes[v].w.size(); }
  int other(const WEdge& e, int v) const { return e.u == v ? e.v : e.u; }
  // Edge cost with node x at strategy sx and the other end at sy.
  double at(const WEdge& e, int x, size_t sx, size_t sy) const {
    return e.u == x ? e.m[sx * n_of(e.v) + sy] : e.m[sy * n_of(x) + sx];
  }
  void drop_edge(int ei) {
    WEdge& e = edges[ei];
    e.alive = false;
    for (int x : {e.u, e.v}) {
      auto& l = nodes[x].edges;
      l.erase(std::find(l.begin(), l.end(), ei));
    }
  }
  // Adds an edge a-b, summing into an existing one (edge elimination) when there is one.
  void add_edge(int a, int b, std::vector<double> m) {
    for (int ei : nodes[a].edges) {
      WEdge& e = edges[ei];
      if (other(e, a) != b) continue;
      if (e.u == a) {
        for (size_t i = 0; i < m.size(); ++i) e.m[i] += m[i];
      } else {  // stored the other way round: transpose while adding
        const size_t na = n_of(a), nb = n_of(b);
        for (size_t sa = 0; sa < na; ++sa)
          for (size_t sb = 0; sb < nb; ++sb) e.m[sb * na + sa] += m[sa * nb + sb];
      }
      ++counts[kEdge];
      return;
    }
    edges.push_back({a, b, std::move(m)});
    const int ei = static_cast<int>(edges.size()) - 1;
    nodes[a].edges.push_back(ei);
    nodes[b].edges.push_back(ei);
  }
  bool connected(int a, int b) const {
    for (int ei : nodes[a].edges)
      if (other(edges[ei], a) == b) return true;
    return false;
  }
};

// A node with one neighbour folds into it: merge when it consumes the neighbour's output,
// contract when it produces the neighbour's input.
void eliminate_leaf(Work& g, int v, std::vector<Record>& recs) {
  const int ei = g.nodes[v].edges[0];
  const WEdge& e = g.edges[ei];
  const int a = g.other(e, v);
  const size_t na = g.n_of(a), nv = g.n_of(v);
  Record r{v, a, -1, std::vector<int>(na, 0)};
  const auto& wv = g.nodes[v].w;
  for (size_t sa = 0; sa < na; ++sa) {
    double best = kInf;
    for (size_t sv = 0; sv < nv; ++sv) {
      const double t = wv[sv] + g.at(e, a, sa, sv);
      if (t < best) best = t, r.arg[sa] = static_cast<int>(sv);
    }
    g.nodes[a].w[sa] += best;
  }
  ++g.counts[e.v == v ? kMerge : kContract];
  g.drop_edge(ei);
  g.nodes[v].alive = false;
  recs.push_back(std::move(r));
}

// A node with two neighbours becomes an edge between them: operator elimination on a chain,
// triangle elimination when the neighbours are already joined (the new edge adds into theirs).
void eliminate_middle(Work& g, int v, std::vector<Record>& recs) {
  const int e1 = g.nodes[v].edges[0], e2 = g.nodes[v].edges[1];
  const int a = g.other(g.edges[e1], v), b = g.other(g.edges[e2], v);
  const size_t na = g.n_of(a), nb = g.n_of(b), nv = g.n_of(v);
  const auto& wv = g.nodes[v].w;
  // Lay both edges out as [s_v][s_other] so the inner loop runs over contiguous memory.
  std::vector<double> ea(nv * na), eb(nv * nb);
  for (size_t sv = 0; sv < nv; ++sv) {
    for (size_t sa = 0; sa < na; ++sa) ea[sv * na + sa] = g.at(g.edges[e1], v, sv, sa);
    for (size_t sb = 0; sb < nb; ++sb) eb[sv * nb + sb] = g.at(g.edges[e2], v, sv, sb);
  }
  std::vector<double> m(na * nb, kInf);
  Record r{v, a, b, std::vector<int>(na * nb, 0)};
  for (size_t sv = 0; sv < nv; ++sv) {
    if (wv[sv] == kInf) continue;
    for (size_t sa = 0; sa < na; ++sa) {
      const double base = wv[sv] + ea[sv * na + sa];
      double* row = &m[sa * nb];
      int* arg = &r.arg[sa * nb];
      const double* ebr = &eb[sv * nb];
      for (size_t sb = 0; sb < nb; ++sb) {
        const double t = base + ebr[sb];
        if (t < row[sb]) row[sb] = t, arg[sb] = static_cast<int>(sv);
      }
    }
  }
  const bool chain = (g.edges[e1].v == v) != (g.edges[e2].v == v);
  ++g.counts[g.connected(a, b) ? kTriangle : (chain ? kOp : kTriangle)];
  g.drop_edge(e1);
  g.drop_edge(e2);
  g.nodes[v].alive = false;
  g.add_edge(a, b, std::move(m));
  recs.push_back(std::move(r));
}

// Eliminates every node of degree <= 2 it can reach; what is left has only degree >= 3 nodes.
void reduce(Work& g, std::vector<Record>& recs) {
  std::vector<int> stack;
  for (int v = static_cast<int>(g.nodes.size()) - 1; v >= 0; --v)
    if (g.nodes[v].alive) stack.push_back(v);
  while (!stack.empty()) {
    const int v = stack.back();
    stack.pop_back();
    WNode& n = g.nodes[v];
    if (!n.alive) continue;
    const size_t deg = n.edges.size();
    if (deg == 1) {
      const int a = g.other(g.edges[n.edges[0]], v);
      eliminate_leaf(g, v, recs);
      stack.push_back(a);
    } else if (deg == 2) {
      const int a = g.other(g.edges[n.edges[0]], v), b = g.other(g.edges[n.edges[1]], v);
      eliminate_middle(g, v, recs);
      stack.push_back(a);
      stack.push_back(b);
    }
  }
}

size_t argmin(const std::vector<double>& w) {
  return static_cast<size_t>(std::min_element(w.begin(), w.end()) - w.begin());
}

// Star elimination: fix node c at strategy s, turning its edges into costs on its neighbours.
void fix(Work& g, int c, size_t s) {
  g.constant += g.nodes[c].w[s];
  while (!g.nodes[c].edges.empty()) {
    const int ei = g.nodes[c].edges.back();
    const WEdge& e = g.edges[ei];
    const int x = g.other(e, c);
    for (size_t sx = 0; sx < g.n_of(x); ++sx) g.nodes[x].w[sx] += g.at(e, x, sx, s);
    g.drop_edge(ei);
  }
  g.nodes[c].alive = false;
  ++g.counts[kStar];
}

// Solves a work graph: reduce, star-eliminate what is left, reconstruct. Returns the objective;
// fills choice for every node alive on entry.
double solve_work(Work& g, std::vector<int>& choice, double& budget) {
  std::vector<Record> recs;
  reduce(g, recs);
  int c = -1;
  for (int v = 0; v < static_cast<int>(g.nodes.size()); ++v)
    if (g.nodes[v].alive && !g.nodes[v].edges.empty() &&
        (c < 0 || g.nodes[v].edges.size() > g.nodes[c].edges.size()))
      c = v;
  double value = g.constant;
  if (c < 0) {
    for (int v = 0; v < static_cast<int>(g.nodes.size()); ++v) {
      if (!g.nodes[v].alive) continue;
      choice[v] = static_cast<int>(argmin(g.nodes[v].w));
      value += g.nodes[v].w[choice[v]];
    }
  } else if (budget >= static_cast<double>(g.n_of(c))) {
    // Exact: try every strategy of the busiest node and keep the best completion.
    budget -= static_cast<double>(g.n_of(c));
    value = kInf;
    std::vector<int> trial(choice.size());
    for (size_t s = 0; s < g.n_of(c); ++s) {
      if (g.nodes[c].w[s] == kInf) continue;
      Work h = g;
      fix(h, c, s);
      trial = choice;
      trial[c] = static_cast<int>(s);
      const double t = solve_work(h, trial, budget);
      if (t < value) {
        value = t, choice = trial;
        std::copy(h.counts, h.counts + 6, g.counts);
        g.exact = g.exact && h.exact;
      }
    }
  } else {
    // Out of budget: pick c's strategy greedily against its neighbours' best answers.
    size_t best = 0;
    double best_t = kInf;
    for (size_t s = 0; s < g.n_of(c); ++s) {
      double t = g.nodes[c].w[s];
      for (int ei : g.nodes[c].edges) {
        const WEdge& e = g.edges[ei];
        const int x = g.other(e, c);
        double m = kInf;
        for (size_t sx = 0; sx < g.n_of(x); ++sx)
          m = std::min(m, g.nodes[x].w[sx] + g.at(e, c, s, sx));
        t += m;
      }
      if (t < best_t) best_t = t, best = s;
    }
    fix(g, c, best);
    choice[c] = static_cast<int>(best);
    g.exact = false;
    value = solve_work(g, choice, budget);
  }
  for (auto it = recs.rbegin(); it != recs.rend(); ++it) {
    const Record& r = *it;
    choice[r.v] = r.b < 0 ? r.arg[choice[r.a]] : r.arg[choice[r.a] * g.n_of(r.b) + choice[r.b]];
  }
  return value;
}

}  // namespace

Solution eliminate_and_reconstruct(const CostGraph& cg, double lambda,
                                   const std::vector<std::vector<char>>& allowed) {
  Work g;
  g.nodes.resize(cg.nodes().size());
  for (size_t v = 0; v < cg.nodes().size(); ++v) {
    const auto& costs = cg.nodes()[v].costs;
    g.nodes[v].w.resize(costs.size());
    for (size_t s = 0; s < costs.size(); ++s)
      g.nodes[v].w[s] = allowed[v][s] ? costs[s].time + lambda * costs[s].memory : kInf;
  }
  for (const CostEdge& e : cg.edges()) g.add_edge(e.from, e.to, e.time);
  std::vector<int> choice(cg.nodes().size(), 0);
  // Exact star eliminations copy the graph per strategy tried: bound their total work.
  double size = 1;
  for (const WEdge& e : g.edges) size += static_cast<double>(e.m.size());
  double budget = std::min(1e5, 5e7 / size);
  solve_work(g, choice, budget);
  Solution sol;
  sol.choice = std::move(choice);
  const Cost c = cg.evaluate(sol.choice);
  sol.time = c.time, sol.memory = c.memory, sol.exact = g.exact, sol.lambda = lambda;
  std::copy(g.counts, g.counts + 6, sol.eliminations);
  return sol;
}

}  // namespace mycel::parallel::search
