// The Communicator's options, world and groups (the collectives are in collectives.cc). The MPI
// calls sit in `#if MYCEL_WITH_MPI` blocks; without MPI the world is one process.
#include <algorithm>
#include <cstdlib>
#include <set>

#include "mycel/core/error.h"
#include "mycel/parallel/detail.h"
#include "mycel/parallel/state.h"

namespace mycel::parallel {

namespace detail {

State& state() {
  static State s;
  return s;
}

bool is_world_name(const std::string& n) {
  return n == kWorldGroup || n == "hccl_world_group" || n == "nccl_world_group";
}

std::string ranks_str(const std::vector<int>& r) {
  std::string s;
  for (size_t i = 0; i < r.size(); ++i) s += (i ? ", " : "") + std::to_string(r[i]);
  return s;
}

Group& find_group(const std::string& name, const std::string& op) {
  State& s = state();
  if (!s.inited)
    MYCEL_THROW(RuntimeError, "[", op,
                "] the communicator is not initialized: call "
                "mycel.communication.init() first");
  auto it = s.groups.find(is_world_name(name) ? kWorldGroup : name);
  if (it == s.groups.end())
    MYCEL_THROW(ValueError, "[", op, "] argument 'group': unknown group '", name,
                "' (create it with mycel.communication.create_group)");
  if (it->second.rank < 0)
    MYCEL_THROW(ValueError, "[", op, "] argument 'group': world rank ", s.rank,
                " is not a member of group '", name, "' (members: world ranks ",
                ranks_str(it->second.world_ranks), ")");
  return it->second;
}

void check_peer(const Group& g, int r, const char* arg, const std::string& op,
                const std::string& group) {
  if (r < 0 || r >= g.size())
    MYCEL_THROW(ValueError, "[", op, "] argument '", arg, "' must be a rank of group '", group,
                "' in [0, ", g.size(), "), got ", r);
}

}  // namespace detail

using namespace detail;

namespace {
int env_int(const char* name, int def) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : def;
}
}  // namespace

// ---- options, world, groups ----

ReduceOp parse_reduce_op(const std::string& s, const std::string& op) {
  if (s == "sum") return ReduceOp::kSum;
  if (s == "max") return ReduceOp::kMax;
  if (s == "min") return ReduceOp::kMin;
  if (s == "prod") return ReduceOp::kProd;
  MYCEL_THROW(ValueError, "[", op,
              "] argument 'op' (reduce_op) must be one of 'sum', 'max', 'min', 'prod', got '", s,
              "'");
}

bool built_with_mpi() { return MYCEL_WITH_MPI != 0; }
bool initialized() { return state().inited; }
int world_rank() { return state().rank; }
int world_size() { return state().size; }
int local_rank() { return state().local_rank; }
int local_size() { return state().local_size; }
double timeout() { return state().timeout; }
bool check_enabled() { return state().check; }

void set_timeout(double seconds) {
  if (!(seconds > 0))
    MYCEL_THROW(ValueError, "[set_timeout] argument 'seconds' must be > 0, got ", seconds);
  state().timeout = seconds;
}
void set_check(bool on) { state().check = on; }

void init() {
  State& s = state();
  if (s.inited) return;
  if (s.finalized)
    MYCEL_THROW(RuntimeError, "[init] MPI cannot start again in a process after release()");
  // Launched by an MPI starter: Open MPI's mpirun sets OMPI_COMM_WORLD_SIZE, PMIx-based ones
  // (srun, prterun) PMIX_RANK. Without either MPI is not started (a world of one).
  int launched = env_int("OMPI_COMM_WORLD_SIZE", 0);
  if (launched == 0 && std::getenv("PMIX_RANK")) launched = -1;  // size known after MPI_Init
  if (const char* t = std::getenv("MYCEL_COMM_TIMEOUT"); t && *t) set_timeout(std::atof(t));
  if (const char* c = std::getenv("MYCEL_COMM_CHECK"); c && *c) s.check = std::string(c) != "0";
  Group world;
#if MYCEL_WITH_MPI
  if (launched != 0) {
    int already = 0, provided = 0;
    MPI_Initialized(&already);
    if (!already &&
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
      MYCEL_THROW(RuntimeError, "[init] MPI_Init_thread failed");
    s.mpi = true;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);  // errors come back as codes
    MPI_Comm_rank(MPI_COMM_WORLD, &s.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &s.size);
    world.comm = MPI_COMM_WORLD;
    MPI_Comm_dup(MPI_COMM_WORLD, &world.meta);
    // This node's ranks: those that can share memory with this one (whatever the launcher).
    MPI_Comm node;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, s.rank, MPI_INFO_NULL, &node) ==
        MPI_SUCCESS) {
      MPI_Comm_rank(node, &s.local_rank);
      MPI_Comm_size(node, &s.local_size);
      MPI_Comm_free(&node);
    }
  }
#else
  if (launched > 1)
    MYCEL_THROW(NotSupported, "[init] launched by mpirun with ", launched,
                " processes, but this build has no MPI: install libopenmpi-dev and rebuild "
                "(CMake option MYCEL_WITH_MPI)");
#endif
  for (int r = 0; r < s.size; ++r) world.world_ranks.push_back(r);
  world.rank = s.rank;
  s.groups[kWorldGroup] = std::move(world);
  s.inited = true;
}

void release() {
  State& s = state();
  if (!s.inited) return;
  stop_async();
#if MYCEL_WITH_MPI
  if (s.mpi) {
    for (auto& [name, g] : s.groups) {
      if (g.meta != MPI_COMM_NULL) MPI_Comm_free(&g.meta);
      if (g.comm != MPI_COMM_NULL && g.comm != MPI_COMM_WORLD) MPI_Comm_free(&g.comm);
    }
    MPI_Finalize();
    s.finalized = true;
  }
#endif
  s.groups.clear();
  s.inited = false;
  s.mpi = false;
  s.rank = 0;
  s.size = 1;
  s.local_rank = 0;
  s.local_size = 1;
}

void abort_job(int code) {
#if MYCEL_WITH_MPI
  if (state().mpi) MPI_Abort(MPI_COMM_WORLD, code);
#endif
}

void create_group(const std::string& name, const std::vector<int>& ranks) {
  State& s = state();
  find_group(kWorldGroup, "create_group");  // initialized?
  if (is_world_name(name) || s.groups.count(name))
    MYCEL_THROW(ValueError, "[create_group] argument 'group': a group named '", name,
                "' already exists");
  if (ranks.empty())
    MYCEL_THROW(ValueError, "[create_group] argument 'rank_ids' must not be empty");
  std::set<int> seen;
  for (int r : ranks) {
    if (r < 0 || r >= s.size)
      MYCEL_THROW(ValueError, "[create_group] argument 'rank_ids': rank ", r,
                  " is not in the world [0, ", s.size, ")");
    if (!seen.insert(r).second)
      MYCEL_THROW(ValueError, "[create_group] argument 'rank_ids': rank ", r, " is listed twice");
  }
  Group g;
  g.world_ranks = ranks;
  auto me = std::find(ranks.begin(), ranks.end(), s.rank);
  g.rank = me == ranks.end() ? -1 : static_cast<int>(me - ranks.begin());
#if MYCEL_WITH_MPI
  if (s.mpi && g.rank >= 0) {     // MPI_Comm_create_group involves the members only
    agree_on_group(name, ranks);  // MPI's call has no timeout: a missing member is found here
    MPI_Group world_g, new_g;
    MPI_Comm_group(MPI_COMM_WORLD, &world_g);
    MPI_Group_incl(world_g, static_cast<int>(ranks.size()), ranks.data(), &new_g);
    int tag = static_cast<int>(std::hash<std::string>{}(name)&0x3fff);
    int rc = MPI_Comm_create_group(MPI_COMM_WORLD, new_g, tag, &g.comm);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_dup(g.comm, &g.meta);
    MPI_Group_free(&new_g);
    MPI_Group_free(&world_g);
    if (rc != MPI_SUCCESS)
      MYCEL_THROW(RuntimeError, "[create_group] group '", name,
                  "': ", detail::mpi_error_string(rc));
  }
#endif
  s.groups[name] = std::move(g);
}

void destroy_group(const std::string& name) {
  State& s = state();
  find_group(kWorldGroup, "destroy_group");
  if (is_world_name(name))
    MYCEL_THROW(ValueError,
                "[destroy_group] argument 'group': the world group cannot be destroyed");
  auto it = s.groups.find(name);
  if (it == s.groups.end())
    MYCEL_THROW(ValueError, "[destroy_group] argument 'group': unknown group '", name, "'");
#if MYCEL_WITH_MPI
  if (it->second.meta != MPI_COMM_NULL) MPI_Comm_free(&it->second.meta);
  if (it->second.comm != MPI_COMM_NULL) MPI_Comm_free(&it->second.comm);
#endif
  s.groups.erase(it);
}

int group_rank(const std::string& group, const std::string& op) {
  return find_group(group, op).rank;
}
int group_size(const std::string& group, const std::string& op) {
  return find_group(group, op).size();
}

std::vector<int> group_ranks(const std::string& group) {
  State& s = state();
  find_group(kWorldGroup, "get_group_rank_from_world_rank");
  auto it = s.groups.find(is_world_name(group) ? kWorldGroup : group);
  if (it == s.groups.end())
    MYCEL_THROW(ValueError, "[get_group_ranks] argument 'group': unknown group '", group, "'");
  return it->second.world_ranks;
}

}  // namespace mycel::parallel
