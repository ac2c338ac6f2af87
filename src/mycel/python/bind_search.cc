// The strategy search for mycel.parallel (python/mycel/parallel/search.py): _mycel.search.*.
// Models, topologies and reports cross as JSON text, so the glue converts nothing itself.
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "mycel/core/error.h"
#include "mycel/frontend/py_convert.h"
#include "mycel/parallel/search/op_model.h"

namespace mycel::py {

void init_search(nb::module_& m) {
  namespace S = mycel::parallel::search;
  nb::module_ s = m.def_submodule("search", "Auto-parallel cost model and strategy search.");
  s.def(
      "simulate",
      [](const std::string& model, const std::string& topology, int device_num,
         const std::string& mode, double memory_limit) {
        const S::ModelSpec spec = S::parse_model(model);
        const S::Topology topo = S::parse_topology(topology);
        nb::gil_scoped_release release;
        return S::report_to_json(S::simulate(spec, topo, device_num, mode, memory_limit));
      },
      nb::arg("model"), nb::arg("topology"), nb::arg("device_num"), nb::arg("mode"),
      nb::arg("memory_limit") = -1.0,
      "Searches (or prices data parallelism) for a model description on device_num simulated "
      "devices; returns the report as JSON text.");
  s.def(
      "check_topology", [](const std::string& t) { S::parse_topology(t); }, nb::arg("topology"),
      "Raises ValueError when a topology description is malformed.");
  // A raw cost graph: costs[node] = [(time, memory), ...], edges = [(from, to, matrix)].
  s.def(
      "solve_cost_graph",
      [](const std::vector<std::vector<std::pair<double, double>>>& costs,
         const std::vector<std::pair<std::pair<int, int>, std::vector<double>>>& edges,
         const std::string& mode, double memory_limit) {
        S::CostGraph g;
        for (size_t v = 0; v < costs.size(); ++v) {
          std::vector<S::Cost> c;
          for (auto [t, mem] : costs[v]) c.push_back({t, mem});
          g.add_node("op" + std::to_string(v), std::move(c));
        }
        for (const auto& [ends, m] : edges) g.add_edge(ends.first, ends.second, m);
        MYCEL_CHECK(mode == "dynamic_programming" || mode == "recursive_programming" ||
                        mode == "brute_force",
                    ValueError,
                    "[solve_cost_graph] mode must be "
                    "'dynamic_programming', 'recursive_programming' or 'brute_force', got '",
                    mode, "'");
        const S::SearchMode sm = mode == "dynamic_programming" ? S::SearchMode::kDynamicProgramming
                                 : mode == "brute_force"       ? S::SearchMode::kBruteForce
                                                         : S::SearchMode::kRecursiveProgramming;
        const S::Solution sol = S::solve(g, sm, memory_limit);
        return std::make_pair(sol.choice, std::make_pair(sol.time, sol.memory));
      },
      nb::arg("costs"), nb::arg("edges"), nb::arg("mode"), nb::arg("memory_limit") = 0.0,
      "Solves a cost graph given as lists; returns (choice, (time, memory)).");
}

}  // namespace mycel::py
