// The lite runtime's thread decision per node, made when a session plans: a node whose work is
// below a measured threshold runs on the calling thread alone (no OpenMP region is entered, and
// its kernel prepares for one thread). On a busy two-core machine waking the pool's second
// thread for LeNet5's convolutions (117K and 240K multiply-adds) cost more than the split saved:
// 6.3 and 6.6 us on one thread, 15 and 33 us on two.
#pragma once
#include <cstdint>
#include <vector>

#include "mycel/core/tensor.h"
#include "mycel/lite/model_file.h"

namespace mycel::lite {

/// Multiply-add equivalents of node n under a plan's value metas: what a split over threads
/// divides. Convolutions: outputs x (input channels per group x kernel taps); dense and matmul:
/// outputs x the reduced length; any other op: the elements it reads and writes.
int64_t node_work(const NodeInfo& n, const std::vector<TensorMeta>& meta);

/// What the thread decision compares with the threshold: node_work in multiply-adds at the
/// rate of a dense convolution. A depthwise convolution (one input channel per group) reuses no
/// input across output channels and runs at about a quarter of that rate (MobileNetV2 on AVX2,
/// one thread: 12-16 GMAC/s against 40-45 for its 1x1 convolutions), so its work counts 4x.
int64_t node_cost(const NodeInfo& n, const std::vector<TensorMeta>& meta);

/// Total work of one run with every dynamic input dimension taken as 1 (batch 1), from each
/// node's infer over the declared input shapes; -1 when the shapes do not infer (the caller then
/// makes no decision on it).
int64_t model_work(const Graph& g);

/// Cost (node_cost) below which the lite runtime runs a node on one thread:
/// MYCEL_LITE_SERIAL_WORK when set (0: never force one thread), else the measured default.
int64_t lite_serial_work();

/// Work per run (model_work) below which a bf16 session stays float32:
/// MYCEL_LITE_BF16_MIN_WORK when set (0: always bf16), else the measured default.
int64_t lite_bf16_min_work();

}  // namespace mycel::lite
