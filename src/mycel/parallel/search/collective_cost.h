// Pricing collectives on a topology (shared by the op cost model and the graph search).
#pragma once

#include <cstdint>

#include "mycel/parallel/search/topology.h"

namespace mycel::parallel::search {

/// The devices of one collective group: how many in all, how many of them share a node.
struct Group {
  int64_t size = 1, intra = 1;
};

/// Hierarchical ring AllReduce of `bytes` per device: reduce-scatter and all-gather inside each
/// node, an AllReduce of the node's share across nodes. Returns seconds; adds the bytes each
/// device sends to `sent`. `fused`: the message rides in a gradient-fusion bucket with others
/// (comm_fusion), so it pays bandwidth but not its own latency.
double all_reduce_time(Group g, double bytes, const Topology& t, double& sent, bool fused = false);

}  // namespace mycel::parallel::search
