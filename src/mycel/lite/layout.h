// The lite runtime's layout step (as the graph backend's assign_layouts): float32 conv2d
// outputs stay in the activation layout oneDNN's convolutions prefer (nChw8c, nChw16c or NHWC)
// when a conv, a pooling, a zero-keeping elementwise op or a global average pooling (a mean over
// H and W) reads them, so no reorder runs between those; every other reader gets one reorder to
// NCHW, shared by later plain readers. A bf16 graph's conv2d outputs likewise, in the layout
// oneDNN's bf16 convolutions take (cpu::bf16_activation_tag(): NHWC on AVX512-BF16 CPUs).
#pragma once
#include <vector>

#include "mycel/lite/model_file.h"

namespace mycel::lite {

struct NodeLayout {
  // kWindow: conv/pool under the kernel's KernelParams; kFlat: elementwise over padded buffers;
  // kMeanHW: a mean over H and W (global average pooling) of a blocked or NHWC input into a
  // plain (N, C) output, by the session's own loop (infer_small.h), no reorder first.
  enum class Mode { kPlain, kWindow, kFlat, kMeanHW } mode = Mode::kPlain;
  bool src_blocked = false;
  bool dst_blocked = true;  // kWindow: the output too (false: an int8 conv's float32 output)
};

/// How a value's buffer is laid out (LayoutPlan::blocked).
enum : char {
  kPlainLayout = 0,    // NCHW (row-major in the logical shape)
  kBlockedLayout = 1,  // oneDNN's preferred float32 activation layout (activation_tag())
  kNhwcLayout = 2,     // NHWC: the int8 ops' layout (quant.h's Int8Layout), no channel padding
};

struct LayoutPlan {
  std::vector<char> blocked;  // per value: kPlainLayout, kBlockedLayout or kNhwcLayout
  std::vector<NodeLayout> nodes;
};

/// Activations between int8 ops (qconv2d, 2x2 max pooling, qavg_pool2d, qadd) stay NHWC: uint8
/// ones, and a qconv2d's float32 output that a qadd reads (oneDNN's int8 convolutions write NHWC;
/// the session pools uint8 NHWC with infer_small.h, and qadd runs elementwise over the NHWC
/// buffers), and float32 residual sums between them (a float add and the quantize_linear after
/// it run elementwise over NHWC buffers) where every reader takes NHWC. Layouts for the graph under
/// concrete metas; nodes marked `eager` (and model outputs) stay plain.
LayoutPlan plan_layouts(const Graph& g, const std::vector<TensorMeta>& meta,
                        const std::vector<char>& eager);

}  // namespace mycel::lite
