// The cluster the strategy search prices: devices per node, per-device compute throughput and
// memory, and alpha-beta (latency, bandwidth) parameters per link level.
#pragma once

#include <string>

namespace mycel::parallel::search {

/// One link level: a message of n bytes costs alpha + n * beta seconds.
struct Link {
  double alpha = 0;  ///< seconds per message
  double beta = 0;   ///< seconds per byte
};

/// A cluster description (see docs/parallel.md, "Topology files").
struct Topology {
  int devices_per_node = 8;
  double flops_per_second = 1e13;  ///< sustained per-device throughput
  double memory_per_device = 0;    ///< bytes; 0 = no limit
  Link intra_node{5e-6, 1.0 / 100e9};
  Link inter_node{20e-6, 1.0 / 12.5e9};
};

/// Parses a topology from JSON text:
///   {"devices_per_node": 8, "flops_per_second": 1.0e14, "memory_per_device_gib": 32,
///    "intra_node": {"latency_us": 5, "bandwidth_gbps": 100},
///    "inter_node": {"latency_us": 20, "bandwidth_gbps": 12.5}}
/// bandwidth in GB/s (1e9 bytes per second). Unknown keys and bad values are ValueErrors naming
/// the key; missing keys keep the defaults above.
Topology parse_topology(const std::string& json_text);

}  // namespace mycel::parallel::search
