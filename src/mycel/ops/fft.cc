// Discrete Fourier transforms with MindSpore 2.x's signatures: fft/ifft/rfft/irfft (n, dim,
// norm), fft2/ifft2/rfft2/irfft2 and fftn/ifftn/rfftn/irfftn (s, dim, norm), fftshift/ifftshift.
// One plan (which axes, what lengths, which direction, what scale) is resolved from the
// attributes by infer and kernel alike. The transforms are linear, so each backward rule is the
// adjoint transform with the dual norm, plus the crop/zero-pad that undoes the input's resize.
#include <cmath>
#include <complex>

#include "mycel/kernels/cpu/fft.h"
#include "mycel/ops/batch.h"
#include "mycel/ops/bprop_util.h"
#include "mycel/ops/infer_util.h"

namespace mycel {
namespace {

using Ints = std::vector<int64_t>;
using cpu::FftPlan;

enum class Rank { k1, k2, kN };  // fft (n, dim: int), fft2 (s, dim = (-2, -1)), fftn (s, dim)

struct FftKind {
  FftPlan::Kind kind;
  bool inverse;
  Rank rank;
};

// The kind of each op, by name: the rules below read it back from the op they run for.
const std::map<std::string, FftKind>& fft_kinds() {
  static const std::map<std::string, FftKind> k = {
      {"fft", {FftPlan::kC2C, false, Rank::k1}},   {"ifft", {FftPlan::kC2C, true, Rank::k1}},
      {"fft2", {FftPlan::kC2C, false, Rank::k2}},  {"ifft2", {FftPlan::kC2C, true, Rank::k2}},
      {"fftn", {FftPlan::kC2C, false, Rank::kN}},  {"ifftn", {FftPlan::kC2C, true, Rank::kN}},
      {"rfft", {FftPlan::kR2C, false, Rank::k1}},  {"irfft", {FftPlan::kC2R, true, Rank::k1}},
      {"rfft2", {FftPlan::kR2C, false, Rank::k2}}, {"irfft2", {FftPlan::kC2R, true, Rank::k2}},
      {"rfftn", {FftPlan::kR2C, false, Rank::kN}}, {"irfftn", {FftPlan::kC2R, true, Rank::kN}}};
  return k;
}

std::string norm_of(const Attrs& a) { return a.has("norm") ? a.get_str("norm") : "backward"; }

// Resolves dims (normalized), sizes, direction and scale for an input of shape s.
FftPlan plan_of(const std::string& op, const Attrs& a, const Shape& s) {
  const FftKind k = fft_kinds().at(op);
  const int64_t nd = static_cast<int64_t>(s.size());
  FftPlan p;
  p.kind = k.kind;
  p.inverse = k.inverse;
  Ints dims, sizes;
  const bool has_s = k.rank == Rank::k1 ? a.has("n") : a.has("s");
  if (k.rank == Rank::k1) {
    dims = {a.get_int("dim")};
    if (has_s) sizes = {a.get_int("n")};
  } else {
    if (has_s) sizes = a.get_ints("s");
    if (a.has("dim")) {
      dims = a.get_ints("dim");
    } else {  // fftn: the last len(s) axes, or all
      const int64_t count = has_s ? static_cast<int64_t>(sizes.size()) : nd;
      if (count > nd)
        MYCEL_THROW(ValueError, "[", op, "] s has ", count, " sizes but input 'input' has rank ",
                    nd);
      for (int64_t i = nd - count; i < nd; ++i) dims.push_back(i);
    }
  }
  if (nd == 0)
    MYCEL_THROW(ValueError, "[", op, "] input 'input' must have rank >= 1, got a 0-d tensor");
  if (dims.empty()) MYCEL_THROW(ValueError, "[", op, "] dim must name at least one axis");
  if (has_s && sizes.size() != dims.size())
    MYCEL_THROW(ValueError, "[", op, "] s has ", sizes.size(), " sizes but dim names ", dims.size(),
                " axes");
  for (auto& d : dims) d = normalize_axis(d, nd, op.c_str(), "dim");
  for (size_t i = 0; i < dims.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (dims[i] == dims[j]) MYCEL_THROW(ValueError, "[", op, "] dim repeats axis ", dims[i]);
  if (!has_s) {
    for (size_t i = 0; i < dims.size(); ++i) {
      int64_t len = s[dims[i]];
      if (k.kind == FftPlan::kC2R && i + 1 == dims.size()) len = 2 * (len - 1);
      sizes.push_back(len);
    }
  }
  double total = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 1)
      MYCEL_THROW(ValueError, "[", op, "] the transform length along axis ", dims[i],
                  " must be >= 1, got ", sizes[i],
                  has_s ? "" : " (from the input's shape; pass n or s)");
    total *= static_cast<double>(sizes[i]);
  }
  const std::string norm = norm_of(a);
  if (norm == "backward")
    p.scale = k.inverse ? 1 / total : 1;
  else if (norm == "forward")
    p.scale = k.inverse ? 1 : 1 / total;
  else if (norm == "ortho")
    p.scale = 1 / std::sqrt(total);
  else
    MYCEL_THROW(ValueError, "[", op, "] norm must be 'backward', 'forward', 'ortho' or None, got '",
                norm, "'");
  p.dims = dims;
  p.sizes = sizes;
  return p;
}

bool is_double(DType t) { return t == DType::float64 || t == DType::complex128; }

std::vector<TensorMeta> infer_fft(const InferContext& c) {
  const TensorMeta& x = c.in(0);
  const FftPlan p = plan_of(c.op.name, c.attrs, x.shape);
  Shape out = x.shape;
  for (size_t i = 0; i < p.dims.size(); ++i) out[p.dims[i]] = p.sizes[i];
  if (p.kind == FftPlan::kR2C) out[p.dims.back()] = p.sizes.back() / 2 + 1;
  const bool d = is_double(x.dtype);
  if (p.kind == FftPlan::kC2R) return {{out, d ? DType::float64 : DType::float32}};
  return {{out, d ? DType::complex128 : DType::complex64}};
}

void fft_kernel(const KernelContext& c) {
  cpu::fft_nd(c.in(0), c.out(0), plan_of(c.op.name, c.attrs, c.in(0).shape()));
}

// fftshift/ifftshift: dims (all when None) rolled by +-size/2.
Ints shift_dims(const Attrs& a, const Shape& s, const char* op) {
  const int64_t nd = static_cast<int64_t>(s.size());
  Ints dims;
  if (a.has("dim")) {
    dims = a.get_ints("dim");
    for (auto& d : dims) d = normalize_axis(d, nd, op, "dim");
  } else {
    for (int64_t i = 0; i < nd; ++i) dims.push_back(i);
  }
  return dims;
}
template <bool Inverse>
void shift_kernel(const KernelContext& c) {
  const Shape& s = c.in(0).shape();
  Ints dims = shift_dims(c.attrs, s, Inverse ? "ifftshift" : "fftshift"), shifts;
  for (int64_t d : dims) shifts.push_back(Inverse ? -(s[d] / 2) : s[d] / 2);
  cpu::roll_dims(c.in(0), c.out(0), dims, shifts);
}
std::vector<TensorMeta> infer_shift(const InferContext& c) {
  shift_dims(c.attrs, c.in(0).shape, c.op.name.c_str());
  return {c.in(0)};
}

// The dtypes the transforms take: the real ones first (rfft takes those four).
std::vector<DType> fft_dtypes() {
  return {DType::int32,   DType::int64,     DType::float32,
          DType::float64, DType::complex64, DType::complex128};
}

OpDef fft_op(const std::string& name, const std::string& cls, const std::string& doc) {
  const FftKind k = fft_kinds().at(name);
  std::vector<AttrDef> attrs;
  if (k.rank == Rank::k1) {
    attrs = {{"n", AttrKind::kInt, std::monostate{}, true, {}},
             attr("dim", AttrKind::kInt, int64_t{-1})};
  } else {
    attrs = {{"s", AttrKind::kInts, std::monostate{}, true, {}},
             k.rank == Rank::k2 ? attr("dim", AttrKind::kInts, Ints{-2, -1})
                                : AttrDef{"dim", AttrKind::kInts, std::monostate{}, true, {}}};
  }
  attrs.push_back({"norm", AttrKind::kStr, std::monostate{}, true, {}});
  std::vector<DType> dtypes = fft_dtypes();  // r2c: real input only
  if (k.kind == FftPlan::kR2C) dtypes.resize(4);
  return make_op(name, cls, doc, {{"input"}}, attrs, infer_fft, fft_kernel, dtypes, "bprop");
}

// ---- backward rules ----

DType complex_of(DType t) { return is_double(t) ? DType::complex128 : DType::complex64; }

// z (real or complex) cropped or zero-padded along `dims` from lengths `from` to `to`. The pad op
// moves real values, so a complex z is padded as its real and imaginary parts.
GradVar resize(BpropBuilder& g, GradVar z, size_t rank, const Ints& dims, const Ints& from,
               const Ints& to, DType t) {
  Ints pads(2 * rank, 0);
  bool any = false;
  for (size_t i = 0; i < dims.size(); ++i) {
    pads[2 * dims[i] + 1] = to[i] - from[i];
    any = any || to[i] != from[i];
  }
  if (!any) return z;
  auto pad = [&](GradVar v) { return g.call("pad", {v}, {{"paddings", pads}}); };
  if (!is_complex(t)) return pad(z);
  Tensor i = Tensor::zeros({}, t);
  if (t == DType::complex64)
    *i.data<std::complex<float>>() = {0, 1};
  else
    *i.data<std::complex<double>>() = {0, 1};
  GradVar re = g.cast(pad(g.call("real", {z})), t), im = g.cast(pad(g.call("imag", {z})), t);
  return g.add(re, g.mul(im, g.constant(i)));
}

std::string dual_norm(const Attrs& a) {
  const std::string n = norm_of(a);
  return n == "backward" ? "forward" : n == "forward" ? "backward" : "ortho";
}

// The adjoint transform: the n-d op `name` over the plan's dims with lengths `sizes`, dual norm.
GradVar adjoint(BpropBuilder& g, const std::string& name, GradVar v, const FftPlan& p,
                const Attrs& a) {
  return g.call(name, {v}, {{"s", p.sizes}, {"dim", p.dims}, {"norm", dual_norm(a)}});
}

std::vector<GradVar> fft_bprop(BpropBuilder& g) {
  GradVar x = g.input(0);
  const TensorMeta xm = g.meta(x);
  const std::string& name = g.op().name;
  const FftPlan p = plan_of(name, g.attrs(), xm.shape);
  const size_t rank = xm.shape.size();
  Ints lens;  // the input's lengths along the transformed dims
  for (int64_t d : p.dims) lens.push_back(xm.shape[d]);
  const bool real_in = !is_complex(xm.dtype);
  if (real_in && !is_floating(xm.dtype)) return {GradVar()};  // integer input: no gradient
  const DType ct = complex_of(xm.dtype);
  GradVar dx;
  if (p.kind == FftPlan::kC2C) {
    dx = adjoint(g, p.inverse ? "fftn" : "ifftn", g.dout(), p, g.attrs());
    if (real_in) {
      dx = g.call("real", {dx});
      return {resize(g, dx, rank, p.dims, p.sizes, lens, xm.dtype)};
    }
    return {resize(g, dx, rank, p.dims, p.sizes, lens, ct)};
  }
  if (p.kind == FftPlan::kR2C) {  // dout's missing upper bins are zeros: ifftn pads them
    dx = g.call("real", {adjoint(g, "ifftn", g.dout(), p, g.attrs())});
    return {resize(g, dx, rank, p.dims, p.sizes, lens, xm.dtype)};
  }
  // c2r: each stored bin but DC (and Nyquist, n even) stands for two of the full spectrum.
  const int64_t n = p.sizes.back(), h = n / 2 + 1, last = p.dims.back();
  Shape ws(rank - static_cast<size_t>(last), 1);
  ws[0] = h;
  Tensor w = Tensor::zeros(ws, ct);
  for (int64_t k = 0; k < h; ++k) {
    const double v = (k == 0 || (n % 2 == 0 && k == n / 2)) ? 1 : 2;
    if (ct == DType::complex64)
      w.data<std::complex<float>>()[k] = static_cast<float>(v);
    else
      w.data<std::complex<double>>()[k] = v;
  }
  dx = g.mul(adjoint(g, "rfftn", g.dout(), p, g.attrs()), g.constant(w));
  Ints from = p.sizes;
  from.back() = h;
  dx = resize(g, dx, rank, p.dims, from, lens, ct);
  return {real_in ? g.cast(g.call("real", {dx}), xm.dtype) : dx};
}

}  // namespace

MYCEL_REGISTER_OPS(fft) {
  r.add(fft_op("fft", "FFT", "1-d discrete Fourier transform along dim (length n)."));
  r.add(fft_op("ifft", "IFFT", "1-d inverse discrete Fourier transform along dim (length n)."));
  r.add(fft_op("fft2", "FFT2", "2-d discrete Fourier transform over dim (lengths s)."));
  r.add(fft_op("ifft2", "IFFT2", "2-d inverse discrete Fourier transform over dim (lengths s)."));
  r.add(fft_op("fftn", "FFTN", "n-d discrete Fourier transform over dim (default: all axes)."));
  r.add(fft_op("ifftn", "IFFTN", "n-d inverse discrete Fourier transform over dim."));
  r.add(fft_op("rfft", "RFFT", "1-d transform of real input: the n // 2 + 1 non-negative bins."));
  r.add(fft_op("irfft", "IRFFT", "Inverse of rfft: real output of length n (default 2 (m - 1))."));
  r.add(fft_op("rfft2", "RFFT2", "2-d transform of real input; the last dim halved."));
  r.add(fft_op("irfft2", "IRFFT2", "Inverse of rfft2: real output of lengths s."));
  r.add(fft_op("rfftn", "RFFTN", "n-d transform of real input; the last dim halved."));
  r.add(fft_op("irfftn", "IRFFTN", "Inverse of rfftn: real output of lengths s."));
  const std::vector<AttrDef> dim = {{"dim", AttrKind::kInts, std::monostate{}, true, {}}};
  r.add(make_op("fftshift", "FFTShift", "Moves the zero-frequency bin to the center of dim.",
                {{"input"}}, dim, infer_shift, shift_kernel<false>, every_dtype(), "bprop"));
  r.add(make_op("ifftshift", "IFFTShift", "Inverse of fftshift.", {{"input"}}, dim, infer_shift,
                shift_kernel<true>, every_dtype(), "bprop"));
}

MYCEL_REGISTER_BPROPS(fft) {
  for (const auto& [name, kind] : fft_kinds()) b.add(name, fft_bprop);
  // A roll is undone by the opposite roll.
  b.add("fftshift", [](BpropBuilder& g) -> std::vector<GradVar> {
    std::map<std::string, AttrValue> a;
    if (g.attrs().has("dim")) a["dim"] = g.attrs().get_ints("dim");
    return {g.call("ifftshift", {g.dout()}, a)};
  });
  b.add("ifftshift", [](BpropBuilder& g) -> std::vector<GradVar> {
    std::map<std::string, AttrValue> a;
    if (g.attrs().has("dim")) a["dim"] = g.attrs().get_ints("dim");
    return {g.call("fftshift", {g.dout()}, a)};
  });
}

}  // namespace mycel

namespace mycel {
namespace {

// vmap: the batch moves to axis 0 and the transformed axes, resolved against one item's shape,
// shift past it (so "all axes" never takes the batch in).
Batched batch_fft(BatchBuilder& g) {
  GradVar x = batch::front(g, 0);
  Shape item = g.meta(x).shape;
  item.erase(item.begin());
  const std::string& name = g.op().name;
  std::map<std::string, AttrValue> a;
  if (name == "fftshift" || name == "ifftshift") {
    Ints dims = shift_dims(g.attrs(), item, name.c_str());
    for (auto& d : dims) ++d;
    a["dim"] = dims;
  } else {
    FftPlan p = plan_of(name, g.attrs(), item);
    if (fft_kinds().at(name).rank == Rank::k1) {
      a["dim"] = p.dims[0] + 1;
    } else {
      for (auto& d : p.dims) ++d;
      a["dim"] = p.dims;
    }
  }
  return {g.call_self({x}, a), {0}};
}

}  // namespace

MYCEL_REGISTER_BATCH_RULES(fft) {
  for (const auto& [name, kind] : fft_kinds()) b.add(name, batch_fft);
  b.add("fftshift", batch_fft);
  b.add("ifftshift", batch_fft);
}

}  // namespace mycel
