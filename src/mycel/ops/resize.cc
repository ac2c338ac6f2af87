// Image resizing on NCHW tensors: nearest neighbour (an offset-table gather) and bilinear.
#include <cmath>

#include "mycel/kernels/cpu/resize.h"
#include "mycel/kernels/cpu/shape.h"
#include "mycel/ops/bprop_util.h"
#include "mycel/ops/gather_tables.h"
#include "mycel/ops/shape_common.h"

namespace mycel {
namespace {
using detail::attr;
using detail::make_op;
using detail::optional_attr;

std::vector<TensorMeta> infer_resize(const InferContext& c) {
  check_rank(c, 0, 4, 4);
  const auto& size = c.attrs.get_ints("size");
  if (size.size() != 2 || size[0] <= 0 || size[1] <= 0)
    MYCEL_THROW(ValueError, "[", c.op.name,
                "] size must be two positive ints (height, width), got ", shape_str(size));
  const Shape& s = c.in(0).shape;
  if ((s[2] == 0 || s[3] == 0) && s[0] * s[1] != 0)
    MYCEL_THROW(ValueError, "[", c.op.name, "] cannot resize an empty image of shape ",
                shape_str(s));
  if (c.attrs.has("half_pixel_centers") && c.attrs.get_bool("half_pixel_centers") &&
      c.attrs.get_bool("align_corners"))
    MYCEL_THROW(ValueError, "[", c.op.name,
                "] align_corners and half_pixel_centers cannot both be true");
  detail::check_size({s[0], s[1], size[0], size[1]}, c.op.name);
  return {{{s[0], s[1], size[0], size[1]}, c.in(0).dtype}};
}

// Per output dimension, the input offsets nearest resizing reads.
cpu::OffsetTables nearest_tables(const Shape& s, const Shape& o, bool corners) {
  auto st = contiguous_strides(s);
  cpu::OffsetTables t = {cpu::strided_table(o[0], 0, 1, st[0]),
                         cpu::strided_table(o[1], 0, 1, st[1])};
  for (int d = 2; d < 4; ++d) {
    std::vector<int64_t> tab(o[d]);
    for (int64_t i = 0; i < o[d]; ++i) {
      // align_corners rounds the corner-aligned coordinate (TensorFlow); otherwise floor(i * in /
      // out).
      int64_t j = corners ? static_cast<int64_t>(std::round(
                                cpu::source_coord(i, s[d], o[d], cpu::CoordMode::kAlignCorners)))
                          : i * s[d] / o[d];
      tab[i] = std::min(j, s[d] - 1) * st[d];
    }
    t.push_back(std::move(tab));
  }
  return t;
}

void nearest_kernel(const KernelContext& c) {
  std::unique_ptr<GatherTables> local;
  const GatherTables& t = gather_tables(c, local, [&](GatherTables& g) {
    g.tables = nearest_tables(c.in(0).shape(), c.out(0).shape(), c.attrs.get_bool("align_corners"));
  });
  cpu::gather_offsets(c.in(0), c.out(0), t.tables);
}

// Backward ops (dy, like): dy must be what resizing `like` gave (same N, C; any size).
std::vector<TensorMeta> infer_resize_grad(const InferContext& c) {
  check_rank(c, 0, 4, 4);
  check_rank(c, 1, 4, 4);
  const Shape& dy = c.in(0).shape;
  const Shape& x = c.in(1).shape;
  if (dy[0] != x[0] || dy[1] != x[1])
    MYCEL_THROW(ShapeError, "[", c.op.name, "] input 'dy' shape ", shape_str(dy),
                " must share N and C with input 'like' shape ", shape_str(x));
  if (c.attrs.has("half_pixel_centers") && c.attrs.get_bool("half_pixel_centers") &&
      c.attrs.get_bool("align_corners"))
    MYCEL_THROW(ValueError, "[", c.op.name,
                "] align_corners and half_pixel_centers cannot both be true");
  return {{x, c.in(0).dtype}};
}

void nearest_grad_kernel(const KernelContext& c) {
  std::unique_ptr<GatherTables> local;
  const GatherTables& t = gather_tables(c, local, [&](GatherTables& g) {
    g.tables = nearest_tables(c.in(1).shape(), c.in(0).shape(), c.attrs.get_bool("align_corners"));
  });
  cpu::scatter_add_offsets(c.in(0), c.out(0), t.tables);
}

cpu::CoordMode coord_mode(const Attrs& a) {
  return a.get_bool("align_corners")        ? cpu::CoordMode::kAlignCorners
         : a.get_bool("half_pixel_centers") ? cpu::CoordMode::kHalfPixel
                                            : cpu::CoordMode::kAsymmetric;
}

void bilinear_grad_kernel(const KernelContext& c) {
  cpu::resize_bilinear_backward(c.in(0), c.out(0), coord_mode(c.attrs));
}

void bilinear_kernel(const KernelContext& c) {
  cpu::resize_bilinear(c.in(0), c.out(0), coord_mode(c.attrs));
}

}  // namespace

MYCEL_REGISTER_OPS(resize) {
  const AttrDef corners = attr("align_corners", AttrKind::kBool, false);
  const AttrDef half_pixel = attr("half_pixel_centers", AttrKind::kBool, false);
  r.add(make_op("resize_nearest_neighbor", "ResizeNearestNeighbor",
                "Nearest-neighbour resize of NCHW x to `size` (h, w).", {{"x"}},
                {attr("size", AttrKind::kInts, {}), corners}, infer_resize, nearest_kernel,
                all_dtypes(), "bprop"));
  r.add(make_op("resize_bilinear", "ResizeBilinear",
                "Bilinear resize of NCHW x to `size` (h, w); half_pixel_centers matches PyTorch's "
                "align_corners=False.",
                {{"x"}}, {attr("size", AttrKind::kInts, {}), corners, half_pixel}, infer_resize,
                bilinear_kernel, float_dtypes(), "bprop"));
  r.add(
      make_op("resize_nearest_neighbor_grad", "ResizeNearestNeighborGrad",
              "Backward of resize_nearest_neighbor: each pixel of `like` sums dy over the outputs "
              "that copied it.",
              {{"dy"}, {"like"}}, {corners}, infer_resize_grad, nearest_grad_kernel, float_dtypes(),
              "bprop"));
  r.add(make_op("resize_bilinear_grad", "ResizeBilinearGrad",
                "Backward of resize_bilinear: dy spread onto `like`'s pixels by the interpolation "
                "weights.",
                {{"dy"}, {"like"}}, {corners, half_pixel}, infer_resize_grad, bilinear_grad_kernel,
                float_dtypes(), "bprop"));
}

// Backward rules: resizing is linear in x, so each op's rule is its adjoint op and the adjoint's
// rule is the resize again (to dy's size), which gives second derivatives.
MYCEL_REGISTER_BPROPS(resize) {
  b.add("resize_nearest_neighbor", [](BpropBuilder& g) -> std::vector<GradVar> {
    if (!bprop::is_float(g, g.input(0))) return {GradVar()};
    return {g.call("resize_nearest_neighbor_grad", {g.dout(), g.input(0)},
                   {{"align_corners", g.attrs().get_bool("align_corners")}})};
  });
  b.add("resize_bilinear", [](BpropBuilder& g) -> std::vector<GradVar> {
    const Attrs& a = g.attrs();
    return {g.call("resize_bilinear_grad", {g.dout(), g.input(0)},
                   {{"align_corners", a.get_bool("align_corners")},
                    {"half_pixel_centers", a.get_bool("half_pixel_centers")}})};
  });
  // The adjoints resize back to the size of their dy.
  auto size_of_dy = [](BpropBuilder& g) {
    const Shape& s = g.meta(g.input(0)).shape;
    return std::vector<int64_t>{s[2], s[3]};
  };
  b.add("resize_nearest_neighbor_grad", [size_of_dy](BpropBuilder& g) -> std::vector<GradVar> {
    return {
        g.call("resize_nearest_neighbor", {g.dout()},
               {{"size", size_of_dy(g)}, {"align_corners", g.attrs().get_bool("align_corners")}}),
        GradVar()};
  });
  b.add("resize_bilinear_grad", [size_of_dy](BpropBuilder& g) -> std::vector<GradVar> {
    const Attrs& a = g.attrs();
    return {g.call("resize_bilinear", {g.dout()},
                   {{"size", size_of_dy(g)},
                    {"align_corners", a.get_bool("align_corners")},
                    {"half_pixel_centers", a.get_bool("half_pixel_centers")}}),
            GradVar()};
  });
}

}  // namespace mycel
