// The Communicator for mycel.communication (python/mycel/communication): _mycel.comm.*.
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "mycel/frontend/py_convert.h"
#include "mycel/parallel/communicator.h"
#include "mycel/parallel/redistribution.h"
#include "mycel/pipeline/semi_auto.h"

namespace mycel::py {

void init_parallel(nb::module_& m) {
  namespace P = mycel::parallel;
  nb::module_ c = m.def_submodule("comm", "Process groups and collectives over Open MPI.");
  c.attr("WORLD_COMM_GROUP") = P::kWorldGroup;
  c.def("built_with_mpi", &P::built_with_mpi, "Whether this build links MPI.");
  c.def("init", &P::init, "Starts the world (MPI under mpirun, else one process); idempotent.");
  c.def("initialized", &P::initialized);
  c.def("release", &P::release, "Frees every group and finalizes MPI.");
  c.def("abort", &P::abort_job, nb::arg("code"), "Ends every rank of the job (MPI_Abort).");
  c.def("world_rank", &P::world_rank);
  c.def("world_size", &P::world_size);
  c.def("local_rank", &P::local_rank);
  c.def("local_size", &P::local_size);
  c.def("timeout", &P::timeout);
  c.def("set_timeout", &P::set_timeout, nb::arg("seconds"));
  c.def("check_enabled", &P::check_enabled);
  c.def("set_check", &P::set_check, nb::arg("on"));
  c.def("create_group", &P::create_group, nb::arg("name"), nb::arg("ranks"));
  c.def("destroy_group", &P::destroy_group, nb::arg("name"));
  c.def(
      "group_rank", [](const std::string& g) { return P::group_rank(g); }, nb::arg("group"));
  c.def(
      "group_size", [](const std::string& g) { return P::group_size(g); }, nb::arg("group"));
  c.def("group_ranks", &P::group_ranks, nb::arg("group"));
  c.def("set_progress_mode", &P::set_progress_mode, nb::arg("mode"),
        "Who advances started allreduces: 'thread', 'kernel' or 'wait'.");
  c.def("progress_mode", &P::progress_mode);
  c.def("pending_allreduces", &P::pending_allreduces);
  c.def(
      "take_comm_events",
      [] {
        std::vector<std::tuple<int64_t, int64_t, double, double, double, double, double>> out;
        for (const P::CommEvent& e : P::take_comm_events())
          out.emplace_back(e.id, e.bytes, e.start, e.posted, e.done, e.wait, e.end);
        return out;
      },
      "(id, bytes, start, posted, done, wait, end) of each allreduce waited since the last call.");

  // Auto-parallel: the semi-auto pass's settings and redistribution (layouts as tuples
  // (device_matrix, tensor_map, shape, partial_axes), ops/sharding.h's TensorLayout).
  nb::module_ a =
      m.def_submodule("autopar", "Layouts, redistribution and the semi-auto parallel pass.");
  a.def(
      "set_semi_auto",
      [](bool on, int64_t device_num, int64_t rank, bool search, const std::string& search_mode,
         const std::string& topology, double memory_limit, bool full_batch, int64_t rank_base,
         const std::vector<std::pair<std::string, shard::Strategy>>& loaded) {
        P::SemiAutoConfig c;
        for (const auto& [name, st] : loaded) {
          c.loaded[name] = st;
          c.loaded_text += name + "=";
          for (const shard::Dims& d : st) {
            for (int64_t v : d) c.loaded_text += std::to_string(v) + ",";
            c.loaded_text += "/";
          }
          c.loaded_text += ";";
        }
        c.enabled = on, c.device_num = device_num, c.rank = rank, c.search = search,
        c.search_mode = search_mode, c.rank_base = rank_base;
        if (!topology.empty()) c.topology = P::search::parse_topology(topology);
        c.topology_text = topology;
        c.memory_limit = memory_limit;
        c.full_batch = full_batch;
        P::semi_auto_config() = c;
      },
      nb::arg("enabled"), nb::arg("device_num"), nb::arg("rank"), nb::arg("search") = false,
      nb::arg("search_mode") = "dynamic_programming", nb::arg("topology") = "",
      nb::arg("memory_limit") = -1.0, nb::arg("full_batch") = true, nb::arg("rank_base") = 0,
      nb::arg("loaded") = std::vector<std::pair<std::string, shard::Strategy>>{},
      "Turns the semi-auto pass on (every graph compiled from now on) or off; search: "
      "AUTO_PARALLEL "
      "(search_mode, topology as JSON text, memory limit in bytes, < 0: the topology's); "
      "rank_base: the world rank of the pass's rank 0 (a pipeline stage's ranks); loaded: (op "
      "key, strategy) pairs from strategy_ckpt_load_file that the search keeps fixed.");
  a.def(
      "searched_strategies", [] { return P::searched_strategies(); },
      "(op key, strategy) of each op the last AUTO_PARALLEL search placed ('matmul-op0', ...).");
  a.def(
      "last_applied", [] { return P::last_applied(); },
      "(op, strategy) of each op the last run of the sharding pass split, in graph order.");
  a.def(
      "last_search", [] { return P::last_search_report(); },
      "The JSON report of the last strategy search AUTO_PARALLEL ran ('' if none).");
  a.def("semi_auto", [] {
    const P::SemiAutoConfig& c = P::semi_auto_config();
    return std::make_tuple(c.enabled, c.device_num, c.rank, c.rank_base);
  });
  using LayoutTuple =
      std::tuple<std::vector<int64_t>, std::vector<int>, std::vector<int64_t>, std::vector<int>>;
  auto layout = [](const LayoutTuple& t) {
    shard::TensorLayout l{shard::DeviceMatrix{std::get<0>(t)}, std::get<1>(t), std::get<2>(t),
                          std::get<3>(t)};
    l.check("layout");
    return l;
  };
  a.def(
      "plan_redistribution",
      [layout](const LayoutTuple& from, const LayoutTuple& to, int64_t rank) {
        P::RedistPlan p = P::plan_redistribution(layout(from), layout(to), rank);
        return std::make_tuple(p.str(), p.comm_bytes);
      },
      nb::arg("src"), nb::arg("dst"), nb::arg("rank"), "(steps as text, bytes sent) for one rank.");
  a.def(
      "redistribute",
      [layout](const Tensor& x, const LayoutTuple& from, const LayoutTuple& to) {
        return P::redistribute(x, layout(from), layout(to));
      },
      nb::arg("x"), nb::arg("src"), nb::arg("dst"),
      "This rank's slice of x under dst, from its slice under src.");
  a.def(
      "take_planned",
      [] {
        std::vector<std::pair<Tensor, LayoutTuple>> out;
        for (auto& [t, l] : P::take_planned_weights())
          out.emplace_back(t, LayoutTuple{l.device.dims, l.tensor_map, l.shape, l.partial});
        return out;
      },
      "(tensor, layout) of each whole weight the pass split since the last call (its first "
      "consumer's layout).");
  a.def(
      "storage_id", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.storage().get()); },
      nb::arg("tensor"), "An id of the tensor's storage (equal for tensors sharing it).");
  a.def("group_for", &P::group_for, nb::arg("ranks"),
        "The group name of these world ranks, created on first use (every member must call it).");
  a.def("slice_offset",
        [layout](const LayoutTuple& l, int64_t rank) { return layout(l).slice_offset(rank); });
  a.def("slice_shape", [layout](const LayoutTuple& l) { return layout(l).slice_shape(); });
}

}  // namespace mycel::py
