// Samplers: which source rows an epoch reads, in which order. Random samplers draw from a RowRng
// keyed by (pipeline seed, op id) with the epoch as its stream, so each epoch differs and every
// run with the same seed repeats.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace mycel::data::engine {

/// A sampler's kind and parameters (built by mycel.dataset.samplers).
struct SamplerSpec {
  std::string kind = "sequential";  // sequential|random|distributed|subset|subset_random|weighted
  int64_t start_index = 0;
  int64_t num_samples = -1;  // -1: all
  bool replacement = false;
  int64_t num_shards = 1, shard_id = 0;
  bool shuffle = true;
  std::vector<int64_t> indices;
  std::vector<double> weights;
};

/// Number of indices one epoch yields for a source of n rows.
int64_t sampler_size(const SamplerSpec& s, int64_t n);
/// The indices of one epoch; throws ValueError/IndexError naming the sampler on bad parameters.
std::vector<int64_t> sampler_indices(const SamplerSpec& s, int64_t n, uint64_t key, int64_t epoch);
/// Checks parameters against a source of n rows (ValueError naming the sampler).
void check_sampler(const SamplerSpec& s, int64_t n);

}  // namespace mycel::data::engine
