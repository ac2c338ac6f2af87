// Topology files: a small JSON object, checked key by key.
#include "mycel/parallel/search/topology.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "mycel/core/error.h"

namespace mycel::parallel::search {
namespace {

double positive(const nlohmann::json& j, const std::string& key, bool allow_zero = false) {
  MYCEL_CHECK(j.is_number(), ValueError, "[topology] '", key, "' must be a number, got ", j.dump());
  const double v = j.get<double>();
  MYCEL_CHECK(std::isfinite(v) && (allow_zero ? v >= 0 : v > 0), ValueError, "[topology] '", key,
              "' must be ", allow_zero ? ">= 0" : "> 0", ", got ", j.dump());
  return v;
}

Link parse_link(const nlohmann::json& j, const std::string& key, Link link) {
  MYCEL_CHECK(j.is_object(), ValueError, "[topology] '", key,
              "' must be an object {\"latency_us\": .., \"bandwidth_gbps\": ..}, got ", j.dump());
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "latency_us")
      link.alpha = positive(it.value(), key + ".latency_us", true) * 1e-6;
    else if (it.key() == "bandwidth_gbps")
      link.beta = 1.0 / (positive(it.value(), key + ".bandwidth_gbps") * 1e9);
    else
      MYCEL_THROW(ValueError, "[topology] unknown key '", key, ".", it.key(),
                  "' (known: latency_us, bandwidth_gbps)");
  }
  return link;
}

}  // namespace

Topology parse_topology(const std::string& json_text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    MYCEL_THROW(ValueError, "[topology] not valid JSON: ", e.what());
  }
  MYCEL_CHECK(j.is_object(), ValueError, "[topology] must be a JSON object, got ", j.type_name());
  Topology t;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    if (k == "devices_per_node") {
      MYCEL_CHECK(it.value().is_number_integer() && it.value().get<long long>() >= 1, ValueError,
                  "[topology] 'devices_per_node' must be an integer >= 1, got ", it.value().dump());
      t.devices_per_node = static_cast<int>(it.value().get<long long>());
    } else if (k == "flops_per_second") {
      t.flops_per_second = positive(it.value(), k);
    } else if (k == "memory_per_device_gib") {
      t.memory_per_device = positive(it.value(), k, true) * 1024.0 * 1024.0 * 1024.0;
    } else if (k == "intra_node") {
      t.intra_node = parse_link(it.value(), k, t.intra_node);
    } else if (k == "inter_node") {
      t.inter_node = parse_link(it.value(), k, t.inter_node);
    } else if (k != "comment") {
      MYCEL_THROW(ValueError, "[topology] unknown key '", k,
                  "' (known: devices_per_node, "
                  "flops_per_second, memory_per_device_gib, intra_node, inter_node, comment)");
    }
  }
  return t;
}

}  // namespace mycel::parallel::search
