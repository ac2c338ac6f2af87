// Image resizing on NCHW tensors: nearest neighbour (an offset-table gather) and bilinear.
#include <cmath>

#include "mycel/kernels/cpu/resize.h"
#include "mycel/kernels/cpu/shape.h"
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
    MYCEL_THROW(ValueError, "[", c.op.name, "] size must be two positive ints (height, width), got ",
                shape_str(size));
  const Shape& s = c.in(0).shape;
  if ((s[2] == 0 || s[3] == 0) && s[0] * s[1] != 0)
    MYCEL_THROW(ValueError, "[", c.op.name, "] cannot resize an empty image of shape ", shape_str(s));
  if (c.attrs.has("half_pixel_centers") && c.attrs.get_bool("half_pixel_centers") &&
      c.attrs.get_bool("align_corners"))
    MYCEL_THROW(ValueError, "[", c.op.name, "] align_corners and half_pixel_centers cannot both be true");
  detail::check_size({s[0], s[1], size[0], size[1]}, c.op.name);
  return {{{s[0], s[1], size[0], size[1]}, c.in(0).dtype}};
}

void nearest_kernel(const KernelContext& c) {
  const Shape& s = c.in(0).shape();
  const Shape& o = c.out(0).shape();
  const bool corners = c.attrs.get_bool("align_corners");
  auto st = contiguous_strides(s);
  cpu::OffsetTables t = {cpu::strided_table(o[0], 0, 1, st[0]), cpu::strided_table(o[1], 0, 1, st[1])};
  for (int d = 2; d < 4; ++d) {
    std::vector<int64_t> tab(o[d]);
    for (int64_t i = 0; i < o[d]; ++i) {
      // align_corners rounds the corner-aligned coordinate (TensorFlow); otherwise floor(i * in / out).
      int64_t j = corners ? static_cast<int64_t>(std::round(
                                cpu::source_coord(i, s[d], o[d], cpu::CoordMode::kAlignCorners)))
                          : i * s[d] / o[d];
      tab[i] = std::min(j, s[d] - 1) * st[d];
    }
    t.push_back(std::move(tab));
  }
  cpu::gather_offsets(c.in(0), c.out(0), t);
}

void bilinear_kernel(const KernelContext& c) {
  cpu::CoordMode mode = c.attrs.get_bool("align_corners")        ? cpu::CoordMode::kAlignCorners
                        : c.attrs.get_bool("half_pixel_centers") ? cpu::CoordMode::kHalfPixel
                                                                 : cpu::CoordMode::kAsymmetric;
  cpu::resize_bilinear(c.in(0), c.out(0), mode);
}

}  // namespace

MYCEL_REGISTER_OPS(resize) {
  r.add(make_op("resize_nearest_neighbor", "ResizeNearestNeighbor",
                "Nearest-neighbour resize of NCHW x to `size` (h, w).", {{"x"}},
                {attr("size", AttrKind::kInts, {}), attr("align_corners", AttrKind::kBool, false)},
                infer_resize, nearest_kernel, all_dtypes()));
  r.add(make_op("resize_bilinear", "ResizeBilinear",
                "Bilinear resize of NCHW x to `size` (h, w); half_pixel_centers matches PyTorch's "
                "align_corners=False.",
                {{"x"}},
                {attr("size", AttrKind::kInts, {}), attr("align_corners", AttrKind::kBool, false),
                 attr("half_pixel_centers", AttrKind::kBool, false)},
                infer_resize, bilinear_kernel, float_dtypes()));
}

}  // namespace mycel
