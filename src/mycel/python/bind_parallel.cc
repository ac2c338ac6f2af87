// The Communicator for mycel.communication (python/mycel/communication): _mycel.comm.*.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "mycel/parallel/communicator.h"
#include "mycel/frontend/py_convert.h"

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
  c.def("group_rank", [](const std::string& g) { return P::group_rank(g); }, nb::arg("group"));
  c.def("group_size", [](const std::string& g) { return P::group_size(g); }, nb::arg("group"));
  c.def("group_ranks", &P::group_ranks, nb::arg("group"));
}

}  // namespace mycel::py
