// The Communicator: process groups and blocking collectives on Tensors over Open MPI (DESIGN 9).
// Below ops: collective kernels (ops/collective.cc) call these functions; Python binds them in
// python/bind_parallel.cc. Built without MPI (MYCEL_WITH_MPI off) or run without mpirun, the
// world is one process and every collective is the identity on that process.
//
// Faults: each call waits with non-blocking MPI and a deadline (timeout(), default 300 s, env
// MYCEL_COMM_TIMEOUT). Before the payload the ranks exchange the call's metadata (op, attributes,
// shape, dtype; env MYCEL_COMM_CHECK=0 turns it off): a mismatch raises ValueError on every rank
// naming each rank's shape, and a rank that never arrives is named in the timeout message. A
// timeout or an MPI error leaves requests that MPI cannot cancel, so it is written to stderr as
// a RuntimeError and the job is ended with MPI_Abort (no rank hangs silently).
#pragma once
#include <string>
#include <vector>

#include "mycel/core/tensor.h"

namespace mycel::parallel {

/// Name of the group of all processes (MindSpore's GlobalComm.WORLD_COMM_GROUP).
inline constexpr const char* kWorldGroup = "mpi_world_group";

enum class ReduceOp { kSum, kMax, kMin, kProd };
/// "sum" | "max" | "min" | "prod"; throws ValueError naming `op` otherwise.
ReduceOp parse_reduce_op(const std::string& s, const std::string& op);

/// Whether this build links MPI.
bool built_with_mpi();
/// Starts the world: MPI_Init when launched by mpirun, else a world of one. Idempotent.
void init();
bool initialized();
/// Frees every group and finalizes MPI (MindSpore's release()).
void release();
/// Ends every rank of the job (MPI_Abort) after an error this rank cannot recover from; a no-op
/// without MPI.
void abort_job(int code);

int world_rank();
int world_size();
/// Rank and count of this node's processes (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)).
int local_rank();
int local_size();

/// Timeout of every collective, in seconds (> 0).
double timeout();
void set_timeout(double seconds);
/// Whether collectives first check that all ranks call them with the same op, shape and dtype.
bool check_enabled();
void set_check(bool on);

/// Creates group `name` from world ranks `ranks` (distinct, sorted or not). Only members take
/// part in the MPI call; a non-member records the name and fails when it uses the group.
void create_group(const std::string& name, const std::vector<int>& ranks);
void destroy_group(const std::string& name);
/// This process's rank within `group` and the group's size (throws if not a member).
int group_rank(const std::string& group, const std::string& op = "get_rank");
int group_size(const std::string& group, const std::string& op = "get_group_size");
/// World ranks of the group's members, in group-rank order.
std::vector<int> group_ranks(const std::string& group);

// Collectives. `out` is preallocated with the shape the op's infer gives; `op` names the
// caller in errors. Every member of `group` must make the same call in the same order.
void allreduce(const Tensor& in, const Tensor& out, ReduceOp r, const std::string& group);
/// Concatenates every rank's `in` along dim 0, in group-rank order.
void allgather(const Tensor& in, const Tensor& out, const std::string& group);
/// Reduces, then gives rank k the k-th of size() equal slices along dim 0.
void reduce_scatter(const Tensor& in, const Tensor& out, ReduceOp r, const std::string& group);
/// out = root's in on every rank (root is a rank of the group).
void broadcast(const Tensor& in, const Tensor& out, int root, const std::string& group);
/// Reduces every rank's `in` into root's `out`; the other ranks' `out` is zeros (the gradient
/// of broadcast).
void reduce(const Tensor& in, const Tensor& out, ReduceOp r, int root, const std::string& group);
/// Splits `in` along split_dim into size() parts, sends part k to rank k and concatenates what
/// arrives along concat_dim.
void alltoall(const Tensor& in, const Tensor& out, int split_dim, int concat_dim,
              const std::string& group);
void send(const Tensor& in, int dest, int tag, const std::string& group);
void recv(const Tensor& out, int src, int tag, const std::string& group);
void barrier(const std::string& group);

// Non-blocking allreduce (data parallel's gradient buckets overlap the backward with it). The
// start returns at once; the metadata handshake and the payload then advance in the background
// (see ProgressMode) and allreduce_wait completes them. A blocking collective first completes
// every pending start, so all ranks still run one sequence of collectives. Faults as above: a
// rank that never arrives ends the job naming it; a mismatch raises ValueError in the wait.

/// Starts reducing `in` into `out` (same shape and dtype); `out` must stay alive and untouched
/// until allreduce_wait(out). `in` may be released as soon as this returns.
void allreduce_start(const Tensor& in, const Tensor& out, ReduceOp r, const std::string& group);
/// Completes the allreduce that allreduce_start began into `out`'s buffer.
void allreduce_wait(const Tensor& out);
/// Number of started, not yet waited allreduces.
int pending_allreduces();

/// Who advances pending non-blocking collectives between start and wait: a communication thread
/// (kThread, polls MPI_Test under the MPI lock), the Program executor after each kernel
/// (kKernel), or only the wait itself (kWait: no overlap, the reference).
enum class ProgressMode { kThread, kKernel, kWait };
/// "thread" | "kernel" | "wait" (env MYCEL_COMM_PROGRESS); throws ValueError otherwise.
void set_progress_mode(const std::string& mode);
std::string progress_mode();

/// The life of one non-blocking allreduce, in seconds of the steady clock (Python's
/// time.perf_counter on Linux): started, payload posted after the handshake, seen complete by
/// whoever advanced it, wait entered and returned.
struct CommEvent {
  int64_t id = 0, bytes = 0;
  double start = 0, posted = 0, done = 0, wait = 0, end = 0;
};
/// The events of the allreduces waited since the last call (at most 65536 kept), oldest first.
std::vector<CommEvent> take_comm_events();

}  // namespace mycel::parallel
