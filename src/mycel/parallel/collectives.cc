// The collectives: validation, the metadata handshake, non-blocking MPI with a deadline, and
// the local path of a group of one (a copy); the split allreduce (start, progress, wait) that
// overlaps data parallel's gradient buckets with the backward. See communicator.h for the rules.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include "mycel/core/between_kernels.h"
#include "mycel/core/error.h"
#include "mycel/parallel/detail.h"
#include "mycel/parallel/state.h"

namespace mycel::parallel {

using namespace detail;

namespace {

// ---- metadata of a call: what every rank must agree on before the payload moves ----

enum Coll : int64_t {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kAllToAll,
  kSendRecv,
  kBarrier,
  kReduce,
  kCreateGroup
};
const char* coll_name(int64_t c) {
  static const char* names[] = {"all_reduce", "all_gather", "reduce_scatter",
                                "broadcast",  "all_to_all", "send/receive",
                                "barrier",    "reduce",     "create_group"};  // registry names
  return c >= 0 && c <= kCreateGroup ? names[c] : "?";
}
const char* reduce_name(int64_t r) {
  static const char* names[] = {"sum", "max", "min", "prod"};
  return r >= 0 && r < 4 ? names[r] : "?";
}

constexpr int kMaxDims = 8;
struct Meta {
  int64_t v[4 + kMaxDims] = {};  // coll, attr, dtype, ndim (-1: no tensor), dims (rest hashed)
  bool operator==(const Meta& o) const { return std::memcmp(v, o.v, sizeof v) == 0; }
};

[[maybe_unused]] Meta make_meta(Coll c, int64_t attr, const Tensor* t) {
  Meta m;
  m.v[0] = c;
  m.v[1] = attr;
  m.v[3] = -1;
  if (!t) return m;
  m.v[2] = static_cast<int64_t>(t->dtype());
  m.v[3] = t->ndim();
  for (int64_t d = 0; d < t->ndim(); ++d) {
    if (d < kMaxDims - 1)
      m.v[4 + d] = t->dim(d);
    else
      m.v[3 + kMaxDims] = m.v[3 + kMaxDims] * 1000003 + t->dim(d);  // fold the tail
  }
  return m;
}

[[maybe_unused]] std::string describe(const Meta& m) {
  std::string s = coll_name(m.v[0]);
  if (m.v[0] == kAllReduce || m.v[0] == kReduceScatter)
    s += std::string("(op=") + reduce_name(m.v[1]) + ")";
  if (m.v[0] == kBroadcast) s += "(root=" + std::to_string(m.v[1]) + ")";
  if (m.v[0] == kCreateGroup) s += "(name and members with hash " + std::to_string(m.v[1]) + ")";
  if (m.v[0] == kReduce)
    s += std::string("(op=") + reduce_name(m.v[1] % 4) +
         ", dest_rank=" + std::to_string(m.v[1] / 4) + ")";
  if (m.v[0] == kSendRecv) s += "(sr_tag=" + std::to_string(m.v[1]) + ")";
  if (m.v[0] == kAllToAll)
    s += "(split_dim=" + std::to_string(m.v[1] / 64) +
         ", concat_dim=" + std::to_string(m.v[1] % 64) + ")";
  if (m.v[3] < 0) return s;
  Shape shape;
  for (int64_t d = 0; d < std::min<int64_t>(m.v[3], kMaxDims - 1); ++d) shape.push_back(m.v[4 + d]);
  s += " of shape " + shape_str(shape);
  if (m.v[3] >= kMaxDims) s.insert(s.size() - 1, ", ...");
  return s + " " + dtype_name(static_cast<DType>(m.v[2]));
}

// ---- collectives ----

void finish_pending();  // below, with the non-blocking allreduce

const Group& group_of(Coll c, const std::string& group, bool drain) {
  if (drain) finish_pending();
  return find_group(group, coll_name(c));
}

// One collective call on one group: validates, shakes hands, moves the payload, reports faults.
class Call {
 public:
  // A blocking call (`drain`) first completes every pending non-blocking one: all ranks then
  // start their collectives in one order, and no other thread is inside MPI meanwhile.
  Call(Coll c, const std::string& group, bool drain = true)
      : coll_(c), name_(group), g_(group_of(c, group, drain)) {}
  const Group& group() const { return g_; }
  bool local() const { return g_.size() == 1; }
  std::string where() const {
    return std::string("[") + coll_name(coll_) + "] group '" + name_ + "' (rank " +
           std::to_string(g_.rank) + " of " + std::to_string(g_.size()) + ", world rank " +
           std::to_string(state().rank) + ")";
  }

#if MYCEL_WITH_MPI
  using Clock = std::chrono::steady_clock;

  [[noreturn]] void fatal(const std::string& what) const {
    std::fprintf(stderr, "[mycel world rank %d] RuntimeError: %s %s; ending the job (MPI_Abort)\n",
                 state().rank, where().c_str(), what.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::abort();
  }
  void ok(int rc, const char* call) const {
    if (rc != MPI_SUCCESS) fatal(std::string(call) + " failed: " + detail::mpi_error_string(rc));
  }
  std::string timeout_str() const { return ::mycel::detail::concat(state().timeout) + " s"; }

  // Tests `reqs` until all complete or the deadline passes; returns the indices still pending.
  // Yields while waiting, then sleeps: on an oversubscribed machine a spinning rank would take
  // the core from the peer it waits for.
  std::vector<size_t> wait(std::vector<MPI_Request>& reqs) const {
    const auto start = Clock::now();
    const auto deadline = start + std::chrono::duration<double>(state().timeout);
    for (long idle = 0;; ++idle) {
      bool all = true;
      for (MPI_Request& r : reqs) {
        if (r == MPI_REQUEST_NULL) continue;
        int flag = 0;
        ok(MPI_Test(&r, &flag, MPI_STATUS_IGNORE), "MPI_Test");
        all &= flag != 0;
      }
      if (all) return {};
      auto now = Clock::now();
      if (now > deadline) {
        std::vector<size_t> pending;
        for (size_t i = 0; i < reqs.size(); ++i)
          if (reqs[i] != MPI_REQUEST_NULL) pending.push_back(i);
        return pending;
      }
      if (idle < 2000)
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(
            std::chrono::microseconds(now - start < std::chrono::seconds(1) ? 20 : 500));
    }
  }
  void wait_payload(std::vector<MPI_Request> reqs) const {
    if (!wait(reqs).empty())
      fatal("every rank arrived but the data transfer did not complete within " + timeout_str());
  }

  // Every member sends its metadata to each of `peers` (all others for a collective, the one
  // peer for send/receive) and compares: a rank that never sends is named on timeout; a mismatch
  // raises ValueError on all ranks alike, before any payload moves.
  void handshake(const Meta& mine, std::vector<int> peers = {}, int tag = detail::kMetaTag) const {
    if (g_.size() == 1 || !state().check) return;
    std::vector<Meta> theirs;
    std::vector<MPI_Request> recvs = post_handshake(mine, peers, theirs, tag);
    std::vector<MPI_Request> sends(recvs.begin() + peers.size(), recvs.end());
    recvs.resize(peers.size());
    std::vector<size_t> missing = wait(recvs);
    if (!missing.empty()) missing_fatal(peers, missing);
    wait_payload(std::move(sends));
    std::string msg = mismatch(mine, peers, theirs);
    if (!msg.empty()) throw ValueError(msg);
  }
  // The handshake's messages, posted: returns the receives (one per peer, into `theirs`) then the
  // sends. An empty `peers` means every other member.
  std::vector<MPI_Request> post_handshake(const Meta& mine, std::vector<int>& peers,
                                          std::vector<Meta>& theirs,
                                          int tag = detail::kMetaTag) const {
    if (peers.empty())
      for (int r = 0; r < g_.size(); ++r)
        if (r != g_.rank) peers.push_back(r);
    theirs.assign(peers.size(), Meta{});
    std::vector<MPI_Request> reqs(2 * peers.size());
    for (size_t i = 0; i < peers.size(); ++i)
      ok(MPI_Irecv(theirs[i].v, 4 + kMaxDims, MPI_INT64_T, peers[i], tag, g_.meta, &reqs[i]),
         "MPI_Irecv");
    for (size_t i = 0; i < peers.size(); ++i)
      ok(MPI_Isend(mine.v, 4 + kMaxDims, MPI_INT64_T, peers[i], tag, g_.meta,
                   &reqs[peers.size() + i]),
         "MPI_Isend");
    return reqs;
  }
  [[noreturn]] void missing_fatal(const std::vector<int>& peers,
                                  const std::vector<size_t>& missing) const {
    std::vector<int> ranks;
    for (size_t i : missing) ranks.push_back(g_.world_ranks[peers[i]]);
    fatal(std::string("world rank(s) ") + ranks_str(ranks) + " did not reach this " +
          coll_name(coll_) + " within " + timeout_str() +
          " (hung, dead, or calling collectives in another order)");
  }
  // "" when every peer's metadata equals ours, else the ValueError's message.
  std::string mismatch(const Meta& mine, const std::vector<int>& peers,
                       const std::vector<Meta>& theirs) const {
    bool same = true;
    for (const Meta& m : theirs) same &= m == mine;
    if (same) return "";
    std::string msg = std::string("[") + coll_name(coll_) + "] group '" + name_ +
                      "': ranks called mismatched collectives (each must pass the same op, "
                      "attributes, shape and dtype):\n  world rank " +
                      std::to_string(state().rank) + " (this rank): " + describe(mine);
    for (size_t i = 0; i < peers.size(); ++i)
      msg +=
          "\n  world rank " + std::to_string(g_.world_ranks[peers[i]]) + ": " + describe(theirs[i]);
    return msg;
  }
#endif

 private:
  Coll coll_;
  std::string name_;
  const Group& g_;
};

int64_t code(ReduceOp r) { return static_cast<int64_t>(r); }

#if MYCEL_WITH_MPI
int count_of(const Call& c, size_t n) {
  if (n > static_cast<size_t>(INT_MAX))
    c.fatal("a message of " + std::to_string(n) + " elements exceeds MPI's int count");
  return static_cast<int>(n);
}

// Runs a reduction (allreduce, reduce_scatter) in a dtype MPI can reduce: float16 and bfloat16
// are widened to float32 (MPI has no half type), bool max/min act on its bytes.
template <class Start>
void reduce_widened(const Call& c, const Tensor& in, const Tensor& out, Start start) {
  const bool widen = in.dtype() == DType::float16 || in.dtype() == DType::bfloat16;
  Tensor src = widen ? in.to(DType::float32) : in;
  Tensor dst = widen ? Tensor::empty(out.shape(), DType::float32) : out;
  MPI_Request req;
  c.ok(start(src, dst, detail::mpi_type(src.dtype()), &req), "a non-blocking MPI reduction");
  c.wait_payload({req});
  if (widen) {
    Tensor back = dst.to(out.dtype());
    std::memcpy(out.data(), back.data(), out.nbytes());
  }
}
#endif

void copy(const Tensor& in, const Tensor& out) {
  if (in.nbytes()) std::memcpy(out.data(), in.data(), in.nbytes());
}
// The same, skipped where the memory planner gave out the buffer of a dying in.
void copy_if_apart(const Tensor& in, const Tensor& out) {
  if (in.data() != out.data()) copy(in, out);
}

void check_reducible(const Tensor& t, ReduceOp r, const char* op) {
  if (t.dtype() == DType::bool_ && (r == ReduceOp::kSum || r == ReduceOp::kProd))
    MYCEL_THROW(TypeError, "[", op, "] argument 'x': op '", reduce_name(code(r)),
                "' is not defined on bool tensors (use 'max' for any, 'min' for all)");
}

}  // namespace

void allreduce(const Tensor& in, const Tensor& out, ReduceOp r, const std::string& group) {
  Call c(kAllReduce, group);
  check_reducible(in, r, "all_reduce");
  if (c.local()) return copy(in, out);
#if MYCEL_WITH_MPI
  c.handshake(make_meta(kAllReduce, code(r), &in));
  const int n = count_of(c, in.numel());
  reduce_widened(c, in, out, [&](const Tensor& s, const Tensor& d, MPI_Datatype t, MPI_Request* q) {
    return MPI_Iallreduce(s.data(), d.data(), n, t, detail::mpi_op(r), c.group().comm, q);
  });
#endif
}

void reduce_scatter(const Tensor& in, const Tensor& out, ReduceOp r, const std::string& group) {
  Call c(kReduceScatter, group);
  check_reducible(in, r, "reduce_scatter");
  if (c.local()) return copy(in, out);
#if MYCEL_WITH_MPI
  c.handshake(make_meta(kReduceScatter, code(r), &in));
  const int n = count_of(c, out.numel());
  reduce_widened(c, in, out, [&](const Tensor& s, const Tensor& d, MPI_Datatype t, MPI_Request* q) {
    return MPI_Ireduce_scatter_block(s.data(), d.data(), n, t, detail::mpi_op(r), c.group().comm,
                                     q);
  });
#endif
}

void allgather(const Tensor& in, const Tensor& out, const std::string& group) {
  Call c(kAllGather, group);
  if (c.local()) return copy(in, out);
#if MYCEL_WITH_MPI
  c.handshake(make_meta(kAllGather, 0, &in));
  const int n = count_of(c, in.nbytes());
  MPI_Request q;
  c.ok(MPI_Iallgather(in.data(), n, MPI_BYTE, out.data(), n, MPI_BYTE, c.group().comm, &q),
       "MPI_Iallgather");
  c.wait_payload({q});
#endif
}

void broadcast(const Tensor& in, const Tensor& out, int root, const std::string& group) {
  Call c(kBroadcast, group);
  check_peer(c.group(), root, "root_rank", "broadcast", group);
  if (c.group().rank == root || c.local()) copy(in, out);
  if (c.local()) return;
#if MYCEL_WITH_MPI
  c.handshake(make_meta(kBroadcast, root, &in));
  MPI_Request q;
  c.ok(MPI_Ibcast(out.data(), count_of(c, out.nbytes()), MPI_BYTE, root, c.group().comm, &q),
       "MPI_Ibcast");
  c.wait_payload({q});
#endif
}

void reduce(const Tensor& in, const Tensor& out, ReduceOp r, int root, const std::string& group) {
  Call c(kReduce, group);
  check_reducible(in, r, "reduce");
  check_peer(c.group(), root, "dest_rank", "reduce", group);
  if (c.local()) return copy(in, out);
#if MYCEL_WITH_MPI
  c.handshake(make_meta(kReduce, root * 4 + code(r), &in));
  const int n = count_of(c, in.numel());
  reduce_widened(c, in, out, [&](const Tensor& s, const Tensor& d, MPI_Datatype t, MPI_Request* q) {
    return MPI_Ireduce(s.data(), d.data(), n, t, detail::mpi_op(r), root, c.group().comm, q);
  });
  if (c.group().rank != root && out.nbytes()) std::memset(out.data(), 0, out.nbytes());
#endif
}

void alltoall(const Tensor& in, const Tensor& out, int split_dim, int concat_dim,
              const std::string& group) {
  Call c(kAllToAll, group);
  if (c.local()) return copy(in, out);
#if MYCEL_WITH_MPI
  c.handshake(make_meta(kAllToAll, split_dim * 64 + concat_dim, &in));
  const int n = c.group().size();
  // Part k of the input is block k of (outer, n, inner) bytes; pack the parts contiguously.
  Shape part = in.shape();
  part[split_dim] /= n;
  detail::Blocks split = detail::blocks(in.shape(), split_dim, n, itemsize(in.dtype()));
  Tensor send = Tensor::empty(in.shape(), in.dtype()), recv = Tensor::empty(in.shape(), in.dtype());
  detail::transpose_blocks(static_cast<const char*>(in.data()), static_cast<char*>(send.data()),
                           split.outer, n, split.inner);
  const int bytes = count_of(c, in.nbytes() / n);
  MPI_Request q;
  c.ok(
      MPI_Ialltoall(send.data(), bytes, MPI_BYTE, recv.data(), bytes, MPI_BYTE, c.group().comm, &q),
      "MPI_Ialltoall");
  c.wait_payload({q});
  // What came from rank k is part k of the output along concat_dim.
  Shape whole = part;
  whole[concat_dim] *= n;
  detail::Blocks cat = detail::blocks(whole, concat_dim, n, itemsize(in.dtype()));
  detail::transpose_blocks(static_cast<const char*>(recv.data()), static_cast<char*>(out.data()), n,
                           cat.outer, cat.inner);
#endif
}

void send(const Tensor& in, int dest, int tag, const std::string& group) {
  Call c(kSendRecv, group);
  check_peer(c.group(), dest, "dest_rank", "send", group);
  if (dest == c.group().rank)
    MYCEL_THROW(ValueError, "[send] argument 'dest_rank': rank ", dest, " cannot send to itself");
#if MYCEL_WITH_MPI
  if (tag < 0 || tag >= detail::kMetaTag)
    MYCEL_THROW(ValueError, "[send] argument 'sr_tag' must be in [0, ", detail::kMetaTag, "), got ",
                tag);
  c.handshake(make_meta(kSendRecv, tag, &in), {dest}, tag);
  MPI_Request q;
  c.ok(MPI_Isend(in.data(), count_of(c, in.nbytes()), MPI_BYTE, dest, tag, c.group().comm, &q),
       "MPI_Isend");
  c.wait_payload({q});
#endif
}

void recv(const Tensor& out, int src, int tag, const std::string& group) {
  Call c(kSendRecv, group);
  check_peer(c.group(), src, "src_rank", "receive", group);
  if (src == c.group().rank)
    MYCEL_THROW(ValueError, "[receive] argument 'src_rank': rank ", src,
                " cannot receive from itself");
#if MYCEL_WITH_MPI
  if (tag < 0 || tag >= detail::kMetaTag)
    MYCEL_THROW(ValueError, "[receive] argument 'sr_tag' must be in [0, ", detail::kMetaTag,
                "), got ", tag);
  c.handshake(make_meta(kSendRecv, tag, &out), {src}, tag);
  MPI_Request q;
  c.ok(MPI_Irecv(out.data(), count_of(c, out.nbytes()), MPI_BYTE, src, tag, c.group().comm, &q),
       "MPI_Irecv");
  c.wait_payload({q});
#endif
}

void barrier(const std::string& group) {
  Call c(kBarrier, group);
  if (c.local()) return;
#if MYCEL_WITH_MPI
  c.handshake(make_meta(kBarrier, 0, nullptr));
  MPI_Request q;
  c.ok(MPI_Ibarrier(c.group().comm, &q), "MPI_Ibarrier");
  c.wait_payload({q});
#endif
}

// ---- the non-blocking allreduce: start, progress, wait ----

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// One started allreduce: its handshake's messages in flight, then its payload, then done (or
// failed with a mismatch, which its wait raises on every rank alike).
struct Async {
  explicit Async(const std::string& group) : call(kAllReduce, group, false) {}
  Call call;
  Tensor out, work;  // work: what MPI reduces in place (out itself, or a float32 widening)
  ReduceOp r = ReduceOp::kSum;
  enum Phase { kHandshake, kPayload, kDone } phase = kHandshake;
  std::string error;
  double deadline = 0;
  CommEvent ev;
#if MYCEL_WITH_MPI
  Meta mine;
  std::vector<int> peers;
  std::vector<Meta> theirs;
  std::vector<MPI_Request> meta;  // the handshake's receives, then its sends
  MPI_Request payload = MPI_REQUEST_NULL;
#endif
};

ProgressMode parse_mode(const std::string& m) {
  if (m == "thread") return ProgressMode::kThread;
  if (m == "kernel") return ProgressMode::kKernel;
  if (m == "wait") return ProgressMode::kWait;
  MYCEL_THROW(
      ValueError,
      "[set_progress_mode] argument 'mode' must be one of 'thread', 'kernel', 'wait', got '", m,
      "'");
}

// The pending allreduces and who advances them. Never destroyed: the communication thread may
// still wait on its condition when static destructors run at exit.
struct Engine {
  Engine() {
    const char* m = std::getenv("MYCEL_COMM_PROGRESS");
    if (m && *m) mode = parse_mode(m);
  }
  std::mutex mu;  // held by whoever calls MPI while starts are pending (MPI_THREAD_SERIALIZED)
  std::condition_variable cv;
  std::vector<std::unique_ptr<Async>> pending;  // in start order
  std::atomic<int> count{0};                    // pending.size(), read without the lock
  std::vector<CommEvent> events;
  int64_t next_id = 0;
  ProgressMode mode = ProgressMode::kThread;
  std::thread thread;
  bool stop = false;
};
Engine& engine() {
  static Engine* e = new Engine;
  return *e;
}

bool any_active(const Engine& e) {
  for (const auto& a : e.pending)
    if (a->phase != Async::kDone) return true;
  return false;
}

#if MYCEL_WITH_MPI
// Tests each request; true when all have completed.
bool test_each(const Call& c, std::vector<MPI_Request>& reqs) {
  bool all = true;
  for (MPI_Request& q : reqs) {
    if (q == MPI_REQUEST_NULL) continue;
    int flag = 0;
    c.ok(MPI_Test(&q, &flag, MPI_STATUS_IGNORE), "MPI_Test");
    all &= flag != 0;
  }
  return all;
}

void post_payload(Async& a) {
  const int n = count_of(a.call, a.work.numel());
  a.call.ok(MPI_Iallreduce(MPI_IN_PLACE, a.work.data(), n, detail::mpi_type(a.work.dtype()),
                           detail::mpi_op(a.r), a.call.group().comm, &a.payload),
            "MPI_Iallreduce");
  a.phase = Async::kPayload;
  a.ev.posted = now_s();
}
#endif

void complete(Async& a) {
  if (a.work.data() != a.out.data()) {
    Tensor back = a.work.to(a.out.dtype());
    std::memcpy(a.out.data(), back.data(), a.out.nbytes());
  }
  a.phase = Async::kDone;
  a.ev.done = now_s();
}

// Advances every pending allreduce as far as it goes without blocking (lock held). Payloads are
// posted in start order, so every rank starts its MPI collectives in one order. A deadline
// passed ends the job naming the ranks that never arrived.
void advance_all(Engine& e) {
#if MYCEL_WITH_MPI
  const double t = now_s();
  bool in_order = true;
  for (auto& p : e.pending) {
    Async& a = *p;
    if (a.phase == Async::kHandshake) {
      if (!in_order) continue;
      std::vector<MPI_Request> recvs(a.meta.begin(), a.meta.begin() + a.peers.size());
      const bool arrived = test_each(a.call, recvs);
      std::copy(recvs.begin(), recvs.end(), a.meta.begin());
      if (!arrived) {
        if (t > a.deadline) {
          std::vector<size_t> missing;
          for (size_t i = 0; i < recvs.size(); ++i)
            if (recvs[i] != MPI_REQUEST_NULL) missing.push_back(i);
          a.call.missing_fatal(a.peers, missing);
        }
        in_order = false;
        continue;
      }
      if (!test_each(a.call, a.meta)) {  // our sends: their receivers have arrived
        if (t > a.deadline)
          a.call.fatal("the handshake's messages did not leave within " + a.call.timeout_str());
        in_order = false;
        continue;
      }
      a.error = a.call.mismatch(a.mine, a.peers, a.theirs);
      if (!a.error.empty()) {
        a.phase = Async::kDone;
        a.ev.done = now_s();
        continue;
      }
      post_payload(a);
    }
    if (a.phase == Async::kPayload) {
      int flag = 0;
      a.call.ok(MPI_Test(&a.payload, &flag, MPI_STATUS_IGNORE), "MPI_Test");
      if (flag)
        complete(a);
      else if (t > a.deadline)
        a.call.fatal("every rank arrived but the data transfer did not complete within " +
                     a.call.timeout_str());
    }
  }
#endif
  if (!any_active(e)) g_between_kernels.store(nullptr, std::memory_order_relaxed);
}

// The Program executor's hook between kernels (ProgressMode::kKernel).
void advance_between_kernels() {
  Engine& e = engine();
  std::unique_lock<std::mutex> lk(e.mu, std::try_to_lock);
  if (lk) advance_all(e);
}

// ProgressMode::kThread: polls while some allreduce is in flight, sleeps on the condition
// otherwise. A short sleep between polls leaves the cores to the kernels.
void comm_thread() {
  Engine& e = engine();
  std::unique_lock<std::mutex> lk(e.mu);
  while (!e.stop) {
    if (!any_active(e)) {
      e.cv.wait(lk);
      continue;
    }
    advance_all(e);
    lk.unlock();
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    lk.lock();
  }
}

void finish_pending() {
  Engine& e = engine();
  while (e.count.load(std::memory_order_acquire) > 0) {
    Tensor out;
    {
      std::lock_guard<std::mutex> lk(e.mu);
      if (e.pending.empty()) return;
      out = e.pending.front()->out;
    }
    allreduce_wait(out);
  }
}

}  // namespace

void allreduce_start(const Tensor& in, const Tensor& out, ReduceOp r, const std::string& group) {
  Engine& e = engine();
  {  // a start on a buffer still pending (a step that failed before its wait) completes it first
    Tensor stale;
    {
      std::lock_guard<std::mutex> lk(e.mu);
      for (auto& a : e.pending)
        if (a->out.data() == out.data()) stale = a->out;
    }
    if (stale.defined()) allreduce_wait(stale);
  }
  auto a = std::make_unique<Async>(group);
  check_reducible(in, r, "all_reduce_start");
  a->out = out;
  a->r = r;
  a->ev.bytes = static_cast<int64_t>(out.nbytes());
  a->ev.start = now_s();
  a->deadline = a->ev.start + state().timeout;
  const bool widen = in.dtype() == DType::float16 || in.dtype() == DType::bfloat16;
  a->work = widen && !a->call.local() ? in.to(DType::float32) : out;
  if (!widen || a->call.local()) copy_if_apart(in, out);
  std::lock_guard<std::mutex> lk(e.mu);
  a->ev.id = e.next_id++;
  if (a->call.local()) {
    a->ev.posted = a->ev.start;
    complete(*a);
  } else {
#if MYCEL_WITH_MPI
    a->mine = make_meta(kAllReduce, code(r), &in);
    if (state().check)
      a->meta = a->call.post_handshake(a->mine, a->peers, a->theirs);
    else
      post_payload(*a);
#endif
  }
  e.pending.push_back(std::move(a));
  e.count.store(static_cast<int>(e.pending.size()), std::memory_order_release);
  if (!any_active(e)) return;
  if (e.mode == ProgressMode::kThread) {
    if (!e.thread.joinable()) {
      e.stop = false;
      e.thread = std::thread(comm_thread);
    }
    e.cv.notify_one();
  } else if (e.mode == ProgressMode::kKernel) {
    g_between_kernels.store(&advance_between_kernels, std::memory_order_relaxed);
  }
}

void allreduce_wait(const Tensor& out) {
  Engine& e = engine();
  std::unique_lock<std::mutex> lk(e.mu);
  auto find = [&] {
    return std::find_if(e.pending.begin(), e.pending.end(),
                        [&](const auto& a) { return a->out.data() == out.data(); });
  };
  if (find() == e.pending.end())
    MYCEL_THROW(
        ValueError,
        "[all_reduce_wait] argument 'x': no all_reduce_start is pending on this tensor (shape ",
        shape_str(out.shape()), "); pass the tensor all_reduce_start returned, once");
  Async* a = find()->get();
  a->ev.wait = now_s();
  for (long idle = 0; a->phase != Async::kDone; ++idle) {  // as Call::wait: yield, then sleep
    advance_all(e);
    if (a->phase == Async::kDone) break;
    lk.unlock();
    if (idle < 2000)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    lk.lock();
  }
  auto it = find();
  std::unique_ptr<Async> done = std::move(*it);
  e.pending.erase(it);
  e.count.store(static_cast<int>(e.pending.size()), std::memory_order_release);
  done->ev.end = now_s();
  if (e.events.size() < (1u << 16)) e.events.push_back(done->ev);
  if (!done->error.empty()) throw ValueError(done->error);
}

int pending_allreduces() { return engine().count.load(std::memory_order_acquire); }

void set_progress_mode(const std::string& mode) {
  ProgressMode m = parse_mode(mode);
  finish_pending();
  Engine& e = engine();
  std::lock_guard<std::mutex> lk(e.mu);
  e.mode = m;
}

std::string progress_mode() {
  switch (engine().mode) {
    case ProgressMode::kThread:
      return "thread";
    case ProgressMode::kKernel:
      return "kernel";
    case ProgressMode::kWait:
      return "wait";
  }
  return "?";
}

std::vector<CommEvent> take_comm_events() {
  Engine& e = engine();
  std::lock_guard<std::mutex> lk(e.mu);
  std::vector<CommEvent> out;
  out.swap(e.events);
  return out;
}

namespace detail {

void agree_on_group(const std::string& name, const std::vector<int>& ranks) {
  Call c(kCreateGroup, kWorldGroup);
  if (c.local()) return;
#if MYCEL_WITH_MPI
  // FNV-1a of the name and the member list: members that disagree raise ValueError.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  for (char ch : name) mix(static_cast<unsigned char>(ch));
  for (int r : ranks) mix(static_cast<uint64_t>(r) + 0x100);
  std::vector<int> peers;
  for (int r : ranks)
    if (r != state().rank) peers.push_back(r);
  if (!peers.empty())
    c.handshake(make_meta(kCreateGroup, static_cast<int64_t>(h >> 1), nullptr), peers, kGroupTag);
#endif
}

void stop_async() {
  finish_pending();
  Engine& e = engine();
  {
    std::lock_guard<std::mutex> lk(e.mu);
    e.stop = true;
  }
  e.cv.notify_all();
  if (e.thread.joinable()) e.thread.join();
  e.stop = false;
}

}  // namespace detail

}  // namespace mycel::parallel
