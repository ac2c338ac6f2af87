// The Communicator's state, shared by its two files (communicator.cc: options, world, groups;
// collectives.cc: the collectives). Private: only those two files include it, and only they are
// compiled with MPI's headers and MYCEL_WITH_MPI, so Group has one layout everywhere it is seen.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "mycel/parallel/communicator.h"

#if MYCEL_WITH_MPI
#include <mpi.h>
#endif

namespace mycel::parallel::detail {

struct Group {
  std::vector<int> world_ranks;  // members, in group-rank order
  int rank = -1;                 // this process's rank in the group; -1: not a member
#if MYCEL_WITH_MPI
  MPI_Comm comm = MPI_COMM_NULL;  // payloads
  MPI_Comm meta = MPI_COMM_NULL;  // metadata handshakes, apart so they never match a payload
#endif
  int size() const { return static_cast<int>(world_ranks.size()); }
};

struct State {
  bool inited = false, finalized = false, mpi = false;
  int rank = 0, size = 1, local_rank = 0, local_size = 1;
  double timeout = 300.0;
  bool check = true;
  std::map<std::string, Group> groups;
};

/// The process's one State.
State& state();
/// kWorldGroup or MindSpore's spellings of it ("hccl_world_group", "nccl_world_group").
bool is_world_name(const std::string& n);
/// "0, 2, 3" for messages.
std::string ranks_str(const std::vector<int>& r);
/// The group `name` of which this process is a member; errors name `op`.
Group& find_group(const std::string& name, const std::string& op);
/// Throws ValueError unless r is a rank of g; `arg` names the attribute.
void check_peer(const Group& g, int r, const char* arg, const std::string& op,
                const std::string& group);

/// The members of a new group check, before MPI creates it, that they all create the same group
/// (name and members); a member that never arrives is named when the timeout passes.
void agree_on_group(const std::string& name, const std::vector<int>& ranks);

/// Completes every pending non-blocking allreduce and ends the communication thread (release()
/// calls it before MPI_Finalize).
void stop_async();

}  // namespace mycel::parallel::detail
