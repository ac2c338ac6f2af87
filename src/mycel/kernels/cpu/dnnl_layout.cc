#include "mycel/kernels/cpu/dnnl_layout.h"

#include <cstdlib>
#include <string>

#include "mycel/core/cpu_features.h"
#include "mycel/core/error.h"
#include "mycel/kernels/cpu/dnnl_util.h"

namespace mycel::cpu {
namespace {
using dnnl::memory;
using namespace dnnl_util;
}  // namespace

memory::format_tag activation_tag() {
  static const memory::format_tag t = [] {
    // MYCEL_LAYOUT_TAG=nhwc|nChw16c|nChw8c overrides the choice (tests of the padded layouts).
    if (const char* v = std::getenv("MYCEL_LAYOUT_TAG")) {
      const std::string s = v;
      if (s == "nhwc") return memory::format_tag::nhwc;
      if (s == "nChw16c") return memory::format_tag::nChw16c;
      if (s == "nChw8c") return memory::format_tag::nChw8c;
      MYCEL_THROW(ValueError, "MYCEL_LAYOUT_TAG must be nhwc, nChw16c or nChw8c, got '", s, "'");
    }
    // AMD Zen 4 runs each 512-bit FMA as two 256-bit halves, so AVX2 code reaches the same
    // FLOP rate as AVX-512 code there. oneDNN 2.6 picks NHWC on it (its AVX-512 brgemm
    // kernels), but Mycel's batch-1 inference kernels (Winograd, the streamed direct
    // convolution) are AVX2 kernels on nChw8c, and oneDNN's AVX2 convolutions take nChw8c
    // natively (conv2d asks for it, dnnl_conv.cc). Measured there, CPU time per call on one
    // thread, nChw8c against NHWC: ResNet-18 batch-1 224x224 inference 33 -> 25 ms, CIFAR 11.2
    // -> 9.5 ms, MobileNetV2 8.0 -> 7.5 ms; training steps unchanged (ResNet-18 CIFAR b32,
    // LeNet5 b64). Zen 5 has full-width AVX-512 units: left to oneDNN's choice.
    if (cpu_is_zen4()) return memory::format_tag::nChw8c;
    // oneDNN's choice for a typical float32 convolution with free ("any") activation layouts.
    const memory::dims src{64, 16, 14, 14}, wei{32, 16, 3, 3}, dst{64, 32, 12, 12};
    const auto f32 = memory::data_type::f32;
    try {
      dnnl::convolution_forward::primitive_desc pd(
          dnnl::convolution_forward::desc(
              dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
              memory::desc(src, f32, memory::format_tag::any),
              memory::desc(wei, f32, memory::format_tag::any),
              memory::desc(dst, f32, memory::format_tag::any), {1, 1}, {0, 0}, {0, 0}, {0, 0}),
          engine());
      for (auto tag :
           {memory::format_tag::nhwc, memory::format_tag::nChw16c, memory::format_tag::nChw8c})
        if (pd.dst_desc() == memory::desc(dst, f32, tag)) return tag;
    } catch (const dnnl::error&) {
    }
    return memory::format_tag::undef;
  }();
  return t;
}

memory::format_tag bf16_activation_tag() {
  static const memory::format_tag t = [] {
    // oneDNN's choice for a bf16 convolution with free activation layouts: NHWC for the
    // avx512_core_bf16 brgemm kernels (Zen 4, Cooper Lake, Sapphire Rapids). The float32 choice
    // (nChw8c on Zen 4, for Mycel's own AVX2 kernels) does not apply: no bf16 kernel of Mycel's
    // reads it, and oneDNN's bf16 kernels take NHWC or nChw16c, so a bf16 graph on nChw8c would
    // reorder around every convolution.
    const memory::dims src{1, 32, 14, 14}, wei{32, 32, 3, 3}, dst{1, 32, 12, 12};
    const auto bf16 = memory::data_type::bf16;
    try {
      dnnl::convolution_forward::primitive_desc pd(
          dnnl::convolution_forward::desc(
              dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
              memory::desc(src, bf16, memory::format_tag::any),
              memory::desc(wei, bf16, memory::format_tag::any),
              memory::desc(dst, bf16, memory::format_tag::any), {1, 1}, {0, 0}, {0, 0}, {0, 0}),
          engine());
      const std::string impl = pd.impl_info_str();  // a reference or gemm kernel: no layout
      if (impl.rfind("gemm", 0) == 0 || impl.rfind("ref", 0) == 0) return memory::format_tag::undef;
      for (auto tag : {memory::format_tag::nhwc, memory::format_tag::nChw16c})
        if (pd.dst_desc() == memory::desc(dst, bf16, tag)) return tag;
    } catch (const dnnl::error&) {
    }
    return memory::format_tag::undef;
  }();
  return t;
}

namespace {
memory::format_tag tag_for(DType dt) {
  return dt == DType::bfloat16 ? bf16_activation_tag() : activation_tag();
}
}  // namespace

memory::desc blocked_desc(const Shape& s, DType dt, bool blocked) {
  const auto tag = blocked ? tag_for(dt) : memory::format_tag::nchw;
  MYCEL_CHECK(tag != memory::format_tag::undef, RuntimeError, "[layout] no blocked ",
              dtype_name(dt), " layout on this CPU (backend bug)");
  return memory::desc({s[0], s[1], s[2], s[3]}, to_dnnl(dt), tag);
}

namespace {

struct ReorderEntry : Entry {
  memory::desc from, to;
  dnnl::reorder prim;
};
}  // namespace

const char* activation_tag_name() {
  switch (activation_tag()) {
    case memory::format_tag::nhwc:
      return "nhwc";
    case memory::format_tag::nChw16c:
      return "nChw16c";
    case memory::format_tag::nChw8c:
      return "nChw8c";
    default:
      return "nchw";
  }
}

int64_t channel_block() {
  switch (activation_tag()) {
    case memory::format_tag::nChw16c:
      return 16;
    case memory::format_tag::nChw8c:
      return 8;
    default:
      return 1;
  }
}

size_t blocked_nbytes(const Shape& s, DType dtype) {
  MYCEL_CHECK(s.size() == 4, RuntimeError, "[layout] blocked tensors are NCHW, got rank ",
              s.size());
  const int64_t b = dtype == DType::bfloat16
                        ? (bf16_activation_tag() == memory::format_tag::nChw16c ? 16 : 1)
                        : channel_block(),
                c = (s[1] + b - 1) / b * b;
  return static_cast<size_t>(s[0] * c * s[2] * s[3]) * itemsize(dtype);
}

namespace {

// A layout reorder prepared for one instruction (graph mode's to_nchw): no key, lock or
// allocation per launch.
struct ReorderPrepared : KernelPrepared {
  Shape shape;
  DType dtype = DType::float32;
  bool to_blocked = false;
  int threads = 0;
  PreparedExec exec;
  int src = -1, dst = -1;
};

}  // namespace

void reorder_blocked(const Tensor& x, Tensor& y, bool to_blocked,
                     std::unique_ptr<KernelPrepared>* slot) {
  const Shape& s = x.shape();
  if (x.numel() == 0) return;
  const SerialScope threads(4 * x.numel());
  std::unique_ptr<ReorderPrepared> local;
  ReorderPrepared& p = prepared_state<ReorderPrepared>(
      slot, local,
      [&](const ReorderPrepared& q) {
        return q.shape == s && q.dtype == x.dtype() && q.to_blocked == to_blocked &&
               q.threads == num_threads();
      },
      [&] {
        const std::string k =
            key("reorder_blocked", dtype_name(x.dtype()), s[0], s[1], s[2], s[3], to_blocked);
        auto e = cached<ReorderEntry>(k, [&] {
          auto r = std::make_shared<ReorderEntry>();
          r->from = blocked_desc(s, x.dtype(), !to_blocked);
          r->to = blocked_desc(s, x.dtype(), to_blocked);
          r->prim =
              dnnl::reorder(dnnl::reorder::primitive_desc(engine(), r->from, engine(), r->to));
          return r;
        });
        auto q = std::make_unique<ReorderPrepared>();
        q->shape = s;
        q->dtype = x.dtype();
        q->to_blocked = to_blocked;
        q->threads = num_threads();
        q->exec = PreparedExec(e->prim);
        q->src = q->exec.add(DNNL_ARG_FROM, e->from);
        q->dst = q->exec.add(DNNL_ARG_TO, e->to);
        return q;
      });
  p.exec.set(p.src, x.data());
  p.exec.set(p.dst, y.data());
  p.exec.run();
  stream().wait();
}

}  // namespace mycel::cpu
