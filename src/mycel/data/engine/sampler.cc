// Sampler index generation (MindSpore semantics; see docs/dataset.md for the shard padding rule).
#include "mycel/data/engine/sampler.h"

#include <algorithm>
#include <numeric>

#include "mycel/core/error.h"
#include "mycel/data/transform.h"

namespace mycel::data::engine {
namespace {

void shuffle_in_place(std::vector<int64_t>& v, RowRng& rng) {
  for (int64_t i = static_cast<int64_t>(v.size()) - 1; i > 0; --i)
    std::swap(v[i], v[rng.randint(0, i)]);
}

int64_t cap(int64_t n, int64_t num_samples) {
  return num_samples < 0 ? n : std::min(n, num_samples);
}

int64_t shard_size(const SamplerSpec& s, int64_t n) {
  return (n + s.num_shards - 1) / s.num_shards;  // padded by wrapping: every shard equal
}

}  // namespace

void check_sampler(const SamplerSpec& s, int64_t n) {
  const std::string& k = s.kind;
  if (k == "distributed") {
    MYCEL_CHECK(s.num_shards >= 1, ValueError, "DistributedSampler: num_shards must be >= 1, got ",
                s.num_shards);
    MYCEL_CHECK(s.shard_id >= 0 && s.shard_id < s.num_shards, ValueError,
                "DistributedSampler: shard_id must be in [0, ", s.num_shards, "), got ",
                s.shard_id);
  } else if (k == "sequential") {
    MYCEL_CHECK(s.start_index >= 0 && (s.start_index < n || n == 0), IndexError,
                "SequentialSampler: start_index ", s.start_index, " out of range for ", n, " rows");
  } else if (k == "subset" || k == "subset_random") {
    for (int64_t i : s.indices)
      MYCEL_CHECK(i >= 0 && i < n, IndexError,
                  k == "subset" ? "SubsetSampler" : "SubsetRandomSampler", ": index ", i,
                  " out of range for a dataset of ", n, " rows");
  } else if (k == "weighted") {
    MYCEL_CHECK(!s.weights.empty(), ValueError, "WeightedRandomSampler: weights must not be empty");
    double total = 0;
    for (double w : s.weights) {
      MYCEL_CHECK(w >= 0, ValueError, "WeightedRandomSampler: weights must be >= 0, got ", w);
      total += w;
    }
    MYCEL_CHECK(total > 0, ValueError, "WeightedRandomSampler: weights sum to zero");
    MYCEL_CHECK(static_cast<int64_t>(s.weights.size()) <= n, IndexError,
                "WeightedRandomSampler: ", s.weights.size(), " weights for a dataset of ", n,
                " rows");
    MYCEL_CHECK(s.replacement || s.num_samples <= static_cast<int64_t>(s.weights.size()),
                ValueError, "WeightedRandomSampler: num_samples ", s.num_samples,
                " exceeds the number of weights without replacement");
  } else if (k != "random") {
    MYCEL_THROW(ValueError, "unknown sampler kind '", k, "'");
  }
}

int64_t sampler_size(const SamplerSpec& s, int64_t n) {
  const std::string& k = s.kind;
  if (k == "sequential") return cap(std::max<int64_t>(0, n - s.start_index), s.num_samples);
  if (k == "random")
    return s.replacement && s.num_samples >= 0 ? s.num_samples : cap(n, s.num_samples);
  if (k == "distributed") return cap(n == 0 ? 0 : shard_size(s, n), s.num_samples);
  if (k == "subset" || k == "subset_random")
    return cap(static_cast<int64_t>(s.indices.size()), s.num_samples);
  if (k == "weighted")
    return s.num_samples < 0 ? static_cast<int64_t>(s.weights.size()) : s.num_samples;
  MYCEL_THROW(ValueError, "unknown sampler kind '", k, "'");
}

std::vector<int64_t> sampler_indices(const SamplerSpec& s, int64_t n, uint64_t key, int64_t epoch) {
  check_sampler(s, n);
  int64_t m = sampler_size(s, n);
  RowRng rng(key, static_cast<uint64_t>(epoch));
  std::vector<int64_t> out;
  const std::string& k = s.kind;
  if (k == "sequential") {
    out.resize(m);
    std::iota(out.begin(), out.end(), s.start_index);
  } else if (k == "random") {
    if (s.replacement) {
      for (int64_t i = 0; i < m; ++i) out.push_back(rng.randint(0, n - 1));
    } else {
      out.resize(n);
      std::iota(out.begin(), out.end(), 0);
      shuffle_in_place(out, rng);
      out.resize(m);
    }
  } else if (k == "distributed") {
    // Every shard sees the same permutation (the key ignores shard_id), then takes every
    // num_shards-th position starting at shard_id, wrapping around to pad the last round.
    std::vector<int64_t> perm(n);
    std::iota(perm.begin(), perm.end(), 0);
    if (s.shuffle) shuffle_in_place(perm, rng);
    for (int64_t i = 0; i < m; ++i) out.push_back(perm[(s.shard_id + i * s.num_shards) % n]);
  } else if (k == "subset") {
    out.assign(s.indices.begin(), s.indices.begin() + m);
  } else if (k == "subset_random") {
    out = s.indices;
    shuffle_in_place(out, rng);
    out.resize(m);
  } else if (k == "weighted") {
    std::vector<double> cdf(s.weights.size());
    std::partial_sum(s.weights.begin(), s.weights.end(), cdf.begin());
    std::vector<double> w = s.weights;
    if (s.replacement) {
      for (int64_t i = 0; i < m; ++i) {
        double u = rng.uniform() * cdf.back();
        auto it = std::upper_bound(cdf.begin(), cdf.end(), u);
        out.push_back(std::min<int64_t>(it - cdf.begin(), static_cast<int64_t>(w.size()) - 1));
      }
    } else {
      // Without replacement: draw by weight, then zero the drawn weight (m is small in practice).
      for (int64_t i = 0; i < m; ++i) {
        double total = 0;
        for (double x : w) total += x;
        MYCEL_CHECK(total > 0, ValueError, "WeightedRandomSampler: only ", i,
                    " rows have nonzero weight, cannot draw ", m, " without replacement");
        double u = rng.uniform() * total, acc = 0;
        int64_t pick = static_cast<int64_t>(w.size()) - 1;
        for (size_t j = 0; j < w.size(); ++j) {
          acc += w[j];
          if (u < acc && w[j] > 0) {
            pick = static_cast<int64_t>(j);
            break;
          }
        }
        out.push_back(pick);
        w[pick] = 0;
      }
    }
  }
  return out;
}

}  // namespace mycel::data::engine
