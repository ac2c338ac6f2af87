// A convolution's weights between the user's plain layout (oihw, goihw) and a oneDNN primitive's
// blocked one (AcdB32a2b, ABcd16b16a, ...) as our own loops, in place of oneDNN's reorders on the
// bf16 training path (dnnl_conv.cc). ResNet-18's bf16 O2 step (CIFAR, batch 32, two threads of
// the Zen 4 VM) spent ~23 ms of ~350 in weight-side reorders, relatively ~3x that on an AMX Xeon
// where the convolutions run ~3x faster:
// - weights_to_blocked: the bf16 weights into the forward's layout, once per launch (the weights
//   change every step: one forward and one backward-data reorder per weight and step, no
//   duplicate). oneDNN 2.6's jit:uni reorder took 2.0 ms for 512x512x3x3 into AcdB32a2b (0.5 into
//   the backward-data ABcd8a16b2a, which stays oneDNN's) on two threads: ~10.5 ms of the step.
// - sum_blocked_to_bf16: the split bf16 weight gradient's tail (ConvBwdSplitPrepared): the T
//   float32 partials, in the primitive's layout, added and written to the user's bf16 oihw in one
//   pass with the rounding of oneDNN's reorder (vcvtneps2bf16), the same bits. The old tail added
//   them into the first partial (T+1 passes over float32), then reordered it (2.2 ms for
//   512x512x3x3): ~10 ms of the step.
// Figures (bench/bench_conv_weight_reorder.cc, minima on one thread, load 3-5 on 2 cores):
// 256x256x3x3 -> AcdB32a2b 0.11 ms vs oneDNN's 0.63, 512x512x3x3 0.7-1.5 vs 2.5-2.8 (memory
// bound, varies with the neighbours); the tail of two 256x256x3x3 partials 0.16-0.22 vs 0.42-0.44
// (adds + reorder), 512x512x3x3 1.9-2.2 vs 2.7-3.2.
// The common layouts (AcdB{16,32,48,64}a2b, ABcd16b16a; 3x3 and 1x1) run register-tile kernels;
// any other dense blocked layout of 4-5 dims is walked generically: its levels (a dim's outer
// index or one of its inner blocks), outermost first, each with its stride in the plain layout.
// The innermost levels make a chunk (at most kChunk elements) whose plain offsets are a table
// built once per prepared launch; the outer levels are counted through per chunk.
#pragma once
#include <cstdint>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

namespace mycel::cpu {

class WeightBlocking {
 public:
  /// md's layout against the plain one of its dims, or nullptr where md is not a dense blocked
  /// layout of 4-5 dims (e.g. with compensation, an offset, a chunk level over kChunk), or with
  /// `tiles_only` not one the register-tile kernels take (tile_rows_, tail16_): dnnl_conv's
  /// forward weights take our loop there alone. Elsewhere the generic walk was no faster than
  /// oneDNN's reorder (512x256x1x1 into the padded AcdB48a2b: 64 us against 39).
  static std::unique_ptr<WeightBlocking> make(const dnnl::memory::desc& md,
                                              bool tiles_only = false);

  /// Elements of the blocked layout, padding included.
  int64_t blocked_elems() const { return blocked_elems_; }
  /// Elements of the plain layout.
  int64_t plain_elems() const { return plain_elems_; }

  struct Level {
    int dim = 0;
    int64_t count = 1;
    int64_t plain_stride = 0;  // elements
    int64_t weight = 1;        // this level's step in its dim's logical index
  };
  // The walk, public to the loops in the .cc file.
  int ndims_ = 0;
  int64_t dims_[5] = {};
  int64_t plain_elems_ = 0, blocked_elems_ = 0;
  std::vector<Level> outer_;  // outermost first
  int64_t outer_count_ = 1, chunk_ = 1;
  std::vector<int32_t> chunk_plain_;    // per chunk element (blocked order): plain offset
  std::vector<int32_t> chunk_logical_;  // per chunk element: its logical index in each dim
  int64_t chunk_max_[5] = {};           // the largest of those per dim
  bool padded_ = false;                 // some padded_dims exceed dims: edge chunks check each
  // Tiles of tile_rows_ output channels x 16 input channels transposed in registers
  // (tiles_to_blocked) for AcdB{16,32,48,64}a2b (the forward's layouts, tile_rows_ = N) without
  // padding, input channels a multiple of 16 and kernels of at most 12 positions (3x3, 1x1).
  // 0: not one of these, or no AVX-512 here. (Into ABcd8a16b2a, backward data's, the same tiles
  // with two rows' channels interleaved ran as fast as oneDNN's reorder, 0.37 vs 0.39 ms for
  // 512x512x3x3 on one thread: that one stays oneDNN's.)
  int tile_rows_ = 0;
  // float32 ABcd16b16a without padding, channels multiples of 16, kernels of at most 12
  // positions: sum_blocked_to_bf16 by tiles of 16 x 16 channels (the split weight gradient's
  // layout in ResNet-18), where sum_blocked_to_bf16_available().
  bool tail16_ = false;
  int64_t khw_ = 0;  // kernel positions (the tile paths)
};

/// blocked = plain in b's layout, 16-bit elements (bf16, f16), the padding zero.
void weights_to_blocked(const WeightBlocking& b, const uint16_t* plain, uint16_t* blocked,
                        int threads);

/// Whether sum_blocked_to_bf16 runs here: the CPU has AVX512-BF16 (it rounds with vcvtneps2bf16,
/// as oneDNN's reorder does there) and oneDNN's ISA is not capped below it.
bool sum_blocked_to_bf16_available();

/// plain (bf16, b's dims) = the bf16 rounding of partials[0] + ... + partials[T-1] (float32 in
/// b's layout, added in that order): the same bits as adding them and reordering with oneDNN.
void sum_blocked_to_bf16(const WeightBlocking& b, const float* const* partials, int T,
                         uint16_t* plain, int threads);

/// Whether MYCEL_CONV_WEIGHT_LOOPS (read at each call: a launch reads it once when prepared)
/// leaves these loops on (default) or not (0: oneDNN's reorders, for A/B measurements).
bool conv_weight_loops_enabled();

}  // namespace mycel::cpu
