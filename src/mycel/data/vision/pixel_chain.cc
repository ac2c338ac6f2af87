// The fused per-image pass (pixel_chain.h): resize (the shared kernel, into a per-thread
// scratch image), then the float stages in place over the image, then the layout change on the
// final write.
#include "mycel/data/vision/pixel_chain.h"

#include <cstdlib>
#include <cstring>

#include "mycel/data/string_tensor.h"

namespace mycel::data::vision {
namespace {

enum class Layout { hw, hwc, chw };

// Per-thread scratch: the resized image (bytes) and a float image for a final transpose.
struct Scratch {
  std::vector<unsigned char> resized;
  std::vector<float> flt;
};
Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

// Converts n values to float (the transforms' static_cast<float>).
template <class T>
void to_float(const T* s, float* d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = static_cast<float>(s[i]);
}

// The float stages over an HWC-ordered image of c channels.
void run_steps(const PixelPlan& p, float* v, int64_t n, int64_t c) {
  for (const PixelPlan::Step& s : p.steps) {
    if (!s.normalize) {
      const float a = s.a, b = s.b;
      for (int64_t i = 0; i < n; ++i) v[i] = rescale_value(v[i], a, b);
    } else if (!s.per_channel) {
      const float m = s.a, inv = s.b;
      for (int64_t i = 0; i < n; ++i) v[i] = normalize_value(v[i], m, inv);
    } else {
      const float* m = s.st->mean.data();
      const float* inv = s.st->inv.data();
      for (int64_t i = 0; i < n; i += c)
        for (int64_t k = 0; k < c; ++k) v[i + k] = normalize_value(v[i + k], m[k], inv[k]);
    }
  }
}

// HWC (hw pixels of c channels) to CHW.
template <class T>
void transpose_hwc(const T* s, T* d, int64_t hw, int64_t c) {
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t i = 0; i < hw; ++i) d[ch * hw + i] = s[i * c + ch];
}

// The one-pass row kernel for a one-channel uint8 image resized to float (the Fashion-MNIST
// chain): false where it does not apply.
bool run_row_pass(const Tensor& img, const PixelPlan& p, void* dst) {
  constexpr size_t kMaxSteps = 8;
  if (p.in_dtype != DType::uint8 || p.out_dtype != DType::float32 || !p.resize || p.in.c != 1 ||
      p.steps.size() > kMaxSteps)
    return false;
  FloatStep fs[kMaxSteps];
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const PixelPlan::Step& s = p.steps[i];
    if (s.per_channel)  // one channel: its single mean and inverse
      fs[i] = {true, s.st->mean[0], s.st->inv[0]};
    else
      fs[i] = {s.normalize, s.a, s.b};
  }
  return resize_u8c1_float(img.data<uint8_t>(), p.in, p.oh, p.ow, p.interp, fs,
                           static_cast<int>(p.steps.size()), static_cast<float*>(dst));
}

template <class T>
void run_typed(const Tensor& img, const PixelPlan& p, void* dst) {
  const int64_t c = p.in.c, hw = p.oh * p.ow, n = hw * c;
  const T* src = img.data<T>();
  Scratch& sc = scratch();
  if (p.resize) {
    sc.resized.resize(static_cast<size_t>(n) * sizeof(T));
    T* r = reinterpret_cast<T*>(sc.resized.data());
    resize_into<T>(src, p.in, p.oh, p.ow, p.interp, r);
    src = r;
  }
  const bool transpose = p.chw && c > 1;
  if (p.out_dtype == DType::float32) {
    float* out = static_cast<float*>(dst);
    float* v = out;
    if (transpose) {
      sc.flt.resize(static_cast<size_t>(n));
      v = sc.flt.data();
    }
    to_float(src, v, n);
    run_steps(p, v, n, c);
    if (transpose) transpose_hwc(v, out, hw, c);
    return;
  }
  T* out = static_cast<T*>(dst);  // no float stage: the pixels move, unchanged
  if (transpose)
    transpose_hwc(src, out, hw, c);
  else
    std::memcpy(out, src, static_cast<size_t>(n) * sizeof(T));
}

}  // namespace

bool PixelChain::plan(const Tensor& img, PixelPlan& p) const {
  if (!img.defined() || (img.ndim() != 2 && img.ndim() != 3) || string_kind(img)) return false;
  if (img.dtype() != DType::uint8 && img.dtype() != DType::float32) return false;
  p = PixelPlan();
  p.in.h = img.dim(0);
  p.in.w = img.dim(1);
  p.in.hw = img.ndim() == 2;
  p.in.c = p.in.hw ? 1 : img.dim(2);
  if (p.in.h <= 0 || p.in.w <= 0 || p.in.c <= 0) return false;
  p.in_dtype = p.out_dtype = img.dtype();
  p.oh = p.in.h, p.ow = p.in.w;
  const int64_t c = p.in.c;
  Layout layout = p.in.hw ? Layout::hw : Layout::hwc;
  for (size_t i = 0; i < stages_.size(); ++i) {
    const PixelStage& s = *stages_[i];
    switch (s.kind) {
      case PixelStage::Kind::resize: {
        if (i != 0) return false;  // fuse_transforms puts a Resize first only
        auto [oh, ow] = resized_size(p.in, s.size);
        if (oh <= 0 || ow <= 0) return false;
        p.resize = true, p.oh = oh, p.ow = ow, p.interp = s.interp;
        break;
      }
      case PixelStage::Kind::rescale:
        p.out_dtype = DType::float32;
        p.steps.push_back({false, false, s.scale, s.shift, &s});
        break;
      case PixelStage::Kind::normalize: {
        const int64_t n = static_cast<int64_t>(s.mean.size());
        p.out_dtype = DType::float32;
        if (n == 1) {  // one value for every channel: any layout
          p.steps.push_back({true, false, s.mean[0], s.inv[0], &s});
          break;
        }
        // Per channel only where Normalize's channel axis is the pixels' channel axis.
        const bool on_channels =
            (layout == Layout::hwc && s.hwc) || (layout == Layout::chw && !s.hwc);
        if (!on_channels || n != c) return false;
        p.steps.push_back({true, true, 0, 0, &s});
        break;
      }
      case PixelStage::Kind::hwc2chw:
        if (layout != Layout::hwc) return false;
        layout = Layout::chw;
        p.chw = true;
        break;
      case PixelStage::Kind::to_float32:
        p.out_dtype = DType::float32;
        break;
    }
  }
  if (layout == Layout::hw)
    p.out_shape = {p.oh, p.ow};
  else if (layout == Layout::hwc)
    p.out_shape = {p.oh, p.ow, c};
  else
    p.out_shape = {c, p.oh, p.ow};
  p.out_numel = p.oh * p.ow * c;
  return true;
}

void PixelChain::run_into(const Tensor& img, const PixelPlan& p, void* dst) const {
  if (row_pass_ && run_row_pass(img, p, dst)) return;
  if (p.in_dtype == DType::uint8)
    run_typed<uint8_t>(img, p, dst);
  else
    run_typed<float>(img, p, dst);
}

bool PixelChain::apply(const std::vector<Tensor>& in, std::vector<Tensor>& out) const {
  if (in.empty()) return false;
  std::vector<PixelPlan> plans(in.size());
  for (size_t i = 0; i < in.size(); ++i)
    if (!plan(in[i], plans[i])) return false;
  std::vector<Tensor> res;
  res.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    Tensor t = Tensor::empty(plans[i].out_shape, plans[i].out_dtype);
    run_into(in[i], plans[i], t.data());
    res.push_back(std::move(t));
  }
  out = std::move(res);
  return true;
}

bool row_pass_enabled() {
  const char* v = std::getenv("MYCEL_DATA_ROWPASS");
  return v == nullptr || std::strcmp(v, "0") != 0;
}

bool fusion_enabled() {
  const char* v = std::getenv("MYCEL_DATA_FUSE");
  return v == nullptr || std::strcmp(v, "0") != 0;
}

std::vector<ChainSegment> fuse_transforms(const TransformList& ts, bool fuse) {
  fuse = fuse && fusion_enabled();
  std::vector<ChainSegment> out;
  size_t i = 0;
  while (i < ts.size()) {
    size_t j = i;
    std::vector<const PixelStage*> stages;
    while (fuse && j < ts.size() && ts[j]->pixel_stage() != nullptr) {
      const PixelStage* s = ts[j]->pixel_stage();
      if (s->kind == PixelStage::Kind::resize && j > i) break;  // a Resize starts a new run
      stages.push_back(s);
      ++j;
    }
    if (stages.size() >= 2) {
      out.push_back({i, j, std::make_shared<PixelChain>(std::move(stages))});
      i = j;
    } else {
      out.push_back({i, i + 1, nullptr});
      ++i;
    }
  }
  return out;
}

}  // namespace mycel::data::vision
