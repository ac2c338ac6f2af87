// Shape ops: views (reshape, flatten, expand_dims, squeeze, identity), permutations and
// broadcasts (transpose, broadcast_to, tile), joins and splits (concat, stack, split), cast.
#include <algorithm>
#include <cstring>

#include "mycel/core/parallel.h"
#include "mycel/kernels/cpu/norm_nhwc.h"
#include "mycel/kernels/cpu/shape.h"
#include "mycel/ops/bprop_complex.h"
#include "mycel/ops/gather_tables.h"
#include "mycel/ops/shape_common.h"

namespace mycel {
namespace {
using detail::attr;
using detail::Ints;
using detail::make_op;
using detail::optional_attr;

// ---- views: output shares the input's storage in eager mode; the kernel copies (graph mode) ----

Tensor as_view(const Tensor& x, const TensorMeta& out) { return x.view(out.shape); }
void copy_kernel(const KernelContext& c) { cpu::copy_all(c.in(0), c.out(0)); }

OpDef with_rule(OpDef d, shard::LabelSpec (*spec)(const shard::ShardContext&)) {
  shard::set_label_rule(d, spec);
  return d;
}

// Sharding of reshape-like ops (reshape, flatten, squeeze, expand_dims, identity): input dim i may
// split in k when some output dim j starts at the same flat offset (equal products of the dims
// before them) and both divide by k: then each slice is the same contiguous block in and out.
// Reshape's local op gets the slice's shape as its `shape`.
int64_t out_dim_for(const Shape& in, const Shape& out, size_t i, int64_t k) {
  int64_t pin = 1, pout = 1;
  for (size_t d = 0; d < i; ++d) pin *= in[d];
  for (size_t j = 0; j < out.size(); pout *= out[j], ++j)
    if (pout == pin && out[j] > 1 && out[j] % k == 0 && in[i] % k == 0)
      return static_cast<int64_t>(j);
  return -1;
}

shard::ShardPlan reshape_plan(const shard::ShardContext& c, const shard::Strategy& s) {
  const Shape &in = c.in(0).shape, &out = c.outputs.at(0).shape;
  if (s.size() != 1 || s[0].size() != in.size())
    MYCEL_THROW(ValueError, "[", c.op.name, "] strategy must be one tuple of ", in.size(),
                " split counts (x has shape ", shape_str(in), ")");
  shard::ShardPlan p;
  int64_t used = 1;
  std::vector<int> in_map(in.size(), -1), out_map(out.size(), -1);
  for (size_t i = 0; i < in.size(); ++i) {
    const int64_t k = s[0][i];
    if (k < 1)
      MYCEL_THROW(ValueError, "[", c.op.name, "] strategy for dim ", i, " is ", k,
                  ", expected >= 1");
    if (k == 1) continue;
    const int64_t j = out_dim_for(in, out, i, k);
    if (j < 0)
      MYCEL_THROW(ValueError, "[", c.op.name, "] cannot split dim ", i, " of ", shape_str(in),
                  " in ", k, " for output shape ", shape_str(out),
                  ": no output dim starts there with a size divisible by ", k);
    in_map[i] = out_map[j] = static_cast<int>(p.device.dims.size());
    p.device.dims.push_back(k);
    used *= k;
  }
  if (c.device_num % used != 0)
    MYCEL_THROW(ValueError, "[", c.op.name, "] strategy uses ", used,
                " devices, which does not divide device_num ", c.device_num);
  p.device.dims.push_back(c.device_num / used);  // the last axis repeats the work
  p.inputs = {shard::TensorLayout{p.device, in_map, in, {}}};
  p.outputs = {shard::TensorLayout{p.device, out_map, out, {}}};
  if (c.op.attr_index("shape") >= 0)
    p.local_int_attrs.push_back({"shape", p.outputs[0].slice_shape()});
  return p;
}

std::vector<shard::Strategy> reshape_strategies(const shard::ShardContext& c) {
  const Shape &in = c.in(0).shape, &out = c.outputs.at(0).shape;
  std::vector<shard::Strategy> all = {{shard::Dims(in.size(), 1)}};
  shard::Dims pick(in.size(), 1);
  std::function<void(size_t, int64_t)> go = [&](size_t i, int64_t used) {
    if (i == in.size()) {
      if (used > 1) all.push_back({pick});
      return;
    }
    for (int64_t k = 1; k <= c.device_num / used; ++k) {
      if (c.device_num % (used * k) != 0 || (k > 1 && out_dim_for(in, out, i, k) < 0)) continue;
      pick[i] = k;
      go(i + 1, used * k);
    }
    pick[i] = 1;
  };
  go(0, 1);
  return all;
}

shard::LabelSpec transpose_spec(const shard::ShardContext& c) {
  const size_t nd = c.in(0).shape.size();
  std::vector<int64_t> perm = c.attrs.get_ints("perm");
  if (perm.empty())
    for (size_t d = nd; d-- > 0;) perm.push_back(static_cast<int64_t>(d));
  shard::LabelSpec sp;
  sp.inputs = {shard::labels(nd)};
  std::string o;
  for (int64_t a : perm)
    o +=
        sp.inputs[0][static_cast<size_t>(normalize_axis(a, static_cast<int64_t>(nd), "transpose"))];
  sp.outputs = {o};
  return sp;
}

OpDef view_op(std::string name, std::string cls, std::string doc, std::vector<AttrDef> attrs,
              InferFn infer) {
  OpDef d = make_op(std::move(name), std::move(cls), std::move(doc), {{"x"}}, std::move(attrs),
                    std::move(infer), copy_kernel, every_dtype(), "bprop");  // bytes only
  d.view = as_view;
  d.shard = {reshape_plan, reshape_strategies};
  return d;
}

std::vector<TensorMeta> infer_reshape(const InferContext& c) {
  const TensorMeta& x = c.in(0);
  Ints shape = c.attrs.get_ints("shape");
  int64_t known = 1, infer_at = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer_at >= 0)
        MYCEL_THROW(ValueError, "[reshape] shape ", shape_str(shape), " has more than one -1");
      infer_at = static_cast<int64_t>(i);
    } else if (shape[i] < 0) {
      MYCEL_THROW(ValueError, "[reshape] shape ", shape_str(shape), " has a negative dimension ",
                  shape[i], " (only -1 is allowed, once)");
    } else if (__builtin_mul_overflow(known, shape[i], &known)) {
      MYCEL_THROW(ValueError, "[reshape] shape ", shape_str(shape), " has too many elements");
    }
  }
  const int64_t n = numel(x.shape);
  if (infer_at >= 0) {
    if (known == 0 || n % known != 0)
      MYCEL_THROW(ValueError, "[reshape] cannot reshape a tensor of shape ", shape_str(x.shape),
                  " (", n, " elements) into shape ", shape_str(shape));
    shape[infer_at] = n / known;
  } else if (known != n) {
    MYCEL_THROW(ValueError, "[reshape] cannot reshape a tensor of shape ", shape_str(x.shape), " (",
                n, " elements) into shape ", shape_str(shape), " (", known, " elements)");
  }
  return {{shape, x.dtype}};
}

std::vector<TensorMeta> infer_flatten(const InferContext& c) {
  const TensorMeta& x = c.in(0);
  if (x.shape.empty())
    MYCEL_THROW(ShapeError,
                "[flatten] input 'x' must have rank >= 1 (dimension 0 is kept), got shape ()");
  int64_t rest = 1;
  for (size_t i = 1; i < x.shape.size(); ++i) rest *= x.shape[i];
  return {{{x.shape[0], rest}, x.dtype}};
}

std::vector<TensorMeta> infer_expand_dims(const InferContext& c) {
  Shape s = c.in(0).shape;
  int64_t nd = static_cast<int64_t>(s.size());
  int64_t axis = normalize_axis(c.attrs.get_int("axis"), nd + 1, "expand_dims");
  s.insert(s.begin() + axis, 1);
  return {{s, c.in(0).dtype}};
}

std::vector<TensorMeta> infer_squeeze(const InferContext& c) {
  const Shape& s = c.in(0).shape;
  const Ints& axis = c.attrs.get_ints("axis");
  Ints axes = normalize_axes(axis, static_cast<int64_t>(s.size()), "squeeze");
  Shape out;
  for (size_t d = 0; d < s.size(); ++d) {
    bool listed = std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) != axes.end();
    if (listed && s[d] == 1) continue;
    if (listed && !axis.empty())
      MYCEL_THROW(ValueError, "[squeeze] cannot squeeze axis ", d, " of shape ", shape_str(s),
                  ": its size is ", s[d], ", not 1");
    out.push_back(s[d]);  // not listed, or not size 1 when squeezing "all size-1 dims"
  }
  return {{out, c.in(0).dtype}};
}

// ---- transpose, broadcast_to, tile: offset-table gathers ----

Ints transpose_perm(const Ints& perm, int64_t nd) {
  if (perm.empty()) {
    Ints p(nd);
    for (int64_t i = 0; i < nd; ++i) p[i] = nd - 1 - i;
    return p;
  }
  if (static_cast<int64_t>(perm.size()) != nd)
    MYCEL_THROW(ValueError, "[transpose] perm ", shape_str(perm), " has ", perm.size(),
                " entries, expected one per dimension of the input (", nd, ")");
  Ints p;
  for (int64_t a : perm) {
    int64_t n = normalize_axis(a, nd, "transpose", "perm entry");
    if (std::find(p.begin(), p.end(), n) != p.end())
      MYCEL_THROW(ValueError, "[transpose] perm ", shape_str(perm), " is not a permutation (axis ",
                  n, " appears twice)");
    p.push_back(n);
  }
  return p;
}

std::vector<TensorMeta> infer_transpose(const InferContext& c) {
  const Shape& s = c.in(0).shape;
  Ints p = transpose_perm(c.attrs.get_ints("perm"), static_cast<int64_t>(s.size()));
  Shape out;
  for (int64_t a : p) out.push_back(s[a]);
  return {{out, c.in(0).dtype}};
}

void transpose_kernel(const KernelContext& c) {
  std::unique_ptr<GatherTables> local;
  const GatherTables& t = gather_tables(c, local, [&](GatherTables& g) {
    const Shape& s = c.in(0).shape();
    Ints p = transpose_perm(c.attrs.get_ints("perm"), c.in(0).ndim());
    auto st = contiguous_strides(s);
    for (int64_t a : p) g.tables.push_back(cpu::strided_table(s[a], 0, 1, st[a]));
  });
  cpu::gather_offsets(c.in(0), c.out(0), t.tables);
}

std::vector<TensorMeta> infer_broadcast_to(const InferContext& c) {
  const Shape& s = c.in(0).shape;
  Ints shape = c.attrs.get_ints("shape");
  const size_t nd = s.size();
  if (shape.size() < nd)
    MYCEL_THROW(ValueError, "[broadcast_to] cannot broadcast shape ", shape_str(s), " to ",
                shape_str(shape), ": target has fewer dimensions");
  const size_t lead = shape.size() - nd;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == -1) {
      if (d < lead)
        MYCEL_THROW(ValueError, "[broadcast_to] shape ", shape_str(shape),
                    ": -1 at new leading axis ", d, " has no input dimension to keep");
      shape[d] = s[d - lead];
    } else if (shape[d] < 0) {
      MYCEL_THROW(ValueError, "[broadcast_to] shape ", shape_str(shape),
                  " has a negative dimension");
    } else if (d >= lead && s[d - lead] != 1 && s[d - lead] != shape[d]) {
      MYCEL_THROW(ShapeError, "[broadcast_to] cannot broadcast shape ", shape_str(s), " to ",
                  shape_str(c.attrs.get_ints("shape")), " (dimension ", d, ": ", s[d - lead],
                  " vs ", shape[d], ")");
    }
  }
  detail::check_size(shape, "broadcast_to");
  return {{shape, c.in(0).dtype}};
}

// One element repeated: a fill. (The gather below builds an offset table per output dim: for a
// scalar broadcast to a long 1-d tensor, as sum's gradient broadcast_like(dout, x), that is one
// int64 per element, 8 MB of fresh pages for 1M floats and 2 ms instead of 0.1.)
template <class U>
void fill_with(const void* value, void* out, int64_t n) {
  U v;
  std::memcpy(&v, value, sizeof(U));
  U* y = static_cast<U*>(out);
  parallel_for(n, 1, [&](int64_t b, int64_t e) { std::fill(y + b, y + e, v); });
}

bool fill_broadcast(const Tensor& x, Tensor& out) {
  if (x.numel() != 1 || out.numel() == 0) return false;
  switch (itemsize(out.dtype())) {
    case 1:
      fill_with<uint8_t>(x.data(), out.data(), out.numel());
      return true;
    case 2:
      fill_with<uint16_t>(x.data(), out.data(), out.numel());
      return true;
    case 4:
      fill_with<uint32_t>(x.data(), out.data(), out.numel());
      return true;
    case 8:
      fill_with<uint64_t>(x.data(), out.data(), out.numel());
      return true;
    default:
      return false;
  }
}

template <class U>
void repeat_each(const void* value, void* out, int64_t count, int64_t run) {
  const U* x = static_cast<const U*>(value);
  U* y = static_cast<U*>(out);
  parallel_for(count, run, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) std::fill(y + i * run, y + (i + 1) * run, x[i]);
  });
}

// x of out's rank whose trailing dims are 1 and the others out's (mean's gradient, (N, C, 1, 1)
// to (N, C, H, W)): each element fills a run of out. The offset tables' rows of H*W elements
// cost ~6 ns each: ResNet-18's (32, 512, 1, 1) -> (32, 512, 4, 4) in bf16 took 0.40 ms.
bool repeat_broadcast(const Tensor& x, Tensor& out) {
  const Shape &s = x.shape(), &o = out.shape();
  if (s.size() != o.size() || out.numel() == 0) return false;
  size_t k = s.size();
  while (k > 0 && s[k - 1] == 1) --k;
  int64_t run = 1;
  for (size_t d = 0; d < s.size(); ++d) {
    if (d < k && s[d] != o[d]) return false;
    if (d >= k) run *= o[d];
  }
  if (run < 2) return false;
  switch (itemsize(out.dtype())) {
    case 1:
      repeat_each<uint8_t>(x.data(), out.data(), x.numel(), run);
      return true;
    case 2:
      repeat_each<uint16_t>(x.data(), out.data(), x.numel(), run);
      return true;
    case 4:
      repeat_each<uint32_t>(x.data(), out.data(), x.numel(), run);
      return true;
    case 8:
      repeat_each<uint64_t>(x.data(), out.data(), x.numel(), run);
      return true;
    default:
      return false;
  }
}

void broadcast_kernel(const KernelContext& c) {
  // The layout step's NHWC activations: an (N, C, 1, 1) x repeated over H, W (norm_nhwc.h).
  if (c.params && cpu::broadcast_hw_nhwc_launch(c)) return;
  if (fill_broadcast(c.in(0), c.out(0)) || repeat_broadcast(c.in(0), c.out(0))) return;
  std::unique_ptr<GatherTables> local;
  const GatherTables& t = gather_tables(c, local, [&](GatherTables& g) {
    const Shape& s = c.in(0).shape();
    const Shape& o = c.out(0).shape();
    auto st = contiguous_strides(s);
    const size_t lead = o.size() - s.size();
    for (size_t d = 0; d < o.size(); ++d) {
      bool stretched = d < lead || s[d - lead] == 1;
      g.tables.push_back(
          cpu::strided_table(o[d], 0, stretched ? 0 : 1, stretched ? 0 : st[d - lead]));
    }
  });
  cpu::gather_offsets(c.in(0), c.out(0), t.tables);
}

// broadcast_like(x, like): x broadcast to like's shape, read at run time (dynamic dims welcome).
std::vector<TensorMeta> infer_broadcast_like(const InferContext& c) {
  const Shape& s = c.in(0).shape;
  const Shape& to = c.in(1).shape;
  bool ok = to.size() >= s.size();
  for (size_t d = 0; ok && d < s.size(); ++d) {
    int64_t a = s[d], b = to[to.size() - s.size() + d];
    ok = a == 1 || a == b;
  }
  if (!ok)
    MYCEL_THROW(ShapeError, "[broadcast_like] cannot broadcast input 'x' of shape ", shape_str(s),
                " to the shape ", shape_str(to), " of input 'like'");
  return {{to, c.in(0).dtype}};
}

// Input shape and multiples, both padded with leading 1s to a common rank.
std::pair<Shape, Ints> tile_plan(const Shape& s, const Ints& m) {
  size_t r = std::max(s.size(), m.size());
  Shape in(r - s.size(), 1);
  in.insert(in.end(), s.begin(), s.end());
  Ints mult(r - m.size(), 1);
  mult.insert(mult.end(), m.begin(), m.end());
  return {in, mult};
}

std::vector<TensorMeta> infer_tile(const InferContext& c) {
  const Ints& m = c.attrs.get_ints("multiples");
  for (int64_t v : m)
    if (v < 0)
      MYCEL_THROW(ValueError, "[tile] multiples ", shape_str(m), " has a negative entry ", v);
  auto [in, mult] = tile_plan(c.in(0).shape, m);
  Shape out(in.size());
  for (size_t d = 0; d < in.size(); ++d)
    if (__builtin_mul_overflow(in[d], mult[d], &out[d]))
      MYCEL_THROW(ValueError, "[tile] multiples ", shape_str(m), " make dimension ", d,
                  " overflow");
  detail::check_size(out, "tile");
  return {{out, c.in(0).dtype}};
}

void tile_kernel(const KernelContext& c) {
  // An empty output needs no offset tables, and building them could ask for gigabytes: x of
  // shape (0, 2) tiled by (2, 3, 2**31) is (2, 0, 2**32), a 2**32-entry table for the last axis.
  if (c.out(0).numel() == 0) return;
  auto [in, mult] = tile_plan(c.in(0).shape(), c.attrs.get_ints("multiples"));
  auto st = contiguous_strides(in);
  const Shape& o = c.out(0).shape();
  cpu::OffsetTables t;
  for (size_t d = 0; d < in.size(); ++d) {
    std::vector<int64_t> tab(o[d]);
    for (int64_t i = 0; i < o[d]; ++i) tab[i] = (i % in[d]) * st[d];
    t.push_back(std::move(tab));
  }
  cpu::gather_offsets(c.in(0), c.out(0), t);
}

// ---- concat, stack, split ----

std::vector<TensorMeta> infer_concat(const InferContext& c) {
  const size_t n = c.num_inputs();
  if (n == 0) MYCEL_THROW(ValueError, "[concat] needs at least one tensor, got an empty sequence");
  const TensorMeta& x0 = c.in(0);
  if (x0.shape.empty()) MYCEL_THROW(ValueError, "[concat] cannot concatenate 0-d tensors");
  const int64_t nd = static_cast<int64_t>(x0.shape.size());
  const int64_t axis = normalize_axis(c.attrs.get_int("axis"), nd, "concat");
  Shape out = x0.shape;
  for (size_t i = 1; i < n; ++i) {
    const TensorMeta& x = c.in(i);
    if (x.dtype != x0.dtype)
      MYCEL_THROW(TypeError, "[concat] all tensors must have the same dtype: tensors[0] is ",
                  dtype_name(x0.dtype), ", tensors[", i, "] is ", dtype_name(x.dtype));
    bool ok = static_cast<int64_t>(x.shape.size()) == nd;
    for (int64_t d = 0; ok && d < nd; ++d) ok = d == axis || x.shape[d] == x0.shape[d];
    if (!ok)
      MYCEL_THROW(ShapeError, "[concat] tensors[", i, "] has shape ", shape_str(x.shape),
                  ", incompatible with tensors[0] shape ", shape_str(x0.shape),
                  ": all dimensions except axis ", axis, " must match");
    out[axis] += x.shape[axis];
  }
  return {{out, x0.dtype}};
}

void concat_kernel(const KernelContext& c) {
  cpu::concat_blocks(c.inputs, c.out(0),
                     normalize_axis(c.attrs.get_int("axis"), c.in(0).ndim(), "concat"));
}

std::vector<TensorMeta> infer_stack(const InferContext& c) {
  const size_t n = c.num_inputs();
  if (n == 0) MYCEL_THROW(ValueError, "[stack] needs at least one tensor, got an empty sequence");
  const TensorMeta& x0 = c.in(0);
  for (size_t i = 1; i < n; ++i) {
    if (c.in(i).dtype != x0.dtype)
      MYCEL_THROW(TypeError, "[stack] all tensors must have the same dtype: tensors[0] is ",
                  dtype_name(x0.dtype), ", tensors[", i, "] is ", dtype_name(c.in(i).dtype));
    if (c.in(i).shape != x0.shape)
      MYCEL_THROW(ShapeError, "[stack] all tensors must have the same shape: tensors[0] is ",
                  shape_str(x0.shape), ", tensors[", i, "] is ", shape_str(c.in(i).shape));
  }
  const int64_t nd = static_cast<int64_t>(x0.shape.size());
  int64_t axis = normalize_axis(c.attrs.get_int("axis"), nd + 1, "stack");
  Shape out = x0.shape;
  out.insert(out.begin() + axis, static_cast<int64_t>(n));
  return {{out, x0.dtype}};
}

void stack_kernel(const KernelContext& c) {
  cpu::concat_blocks(c.inputs, c.out(0),
                     normalize_axis(c.attrs.get_int("axis"), c.in(0).ndim() + 1, "stack"));
}

std::vector<TensorMeta> infer_split(const InferContext& c) {
  const Shape& s = c.in(0).shape;
  if (s.empty()) MYCEL_THROW(ValueError, "[split] cannot split a 0-d tensor");
  const int64_t axis =
      normalize_axis(c.attrs.get_int("axis"), static_cast<int64_t>(s.size()), "split");
  const int64_t dim = s[axis];
  const int64_t num = c.attrs.get_int("output_num");
  Ints sizes;
  if (c.attrs.has("size_splits")) {
    sizes = c.attrs.get_ints("size_splits");
    if (sizes.empty()) MYCEL_THROW(ValueError, "[split] size_splits must not be empty");
    if (num != 1 && num != static_cast<int64_t>(sizes.size()))
      MYCEL_THROW(ValueError, "[split] output_num ", num, " disagrees with size_splits ",
                  shape_str(sizes), " (", sizes.size(), " parts)");
    int64_t known = 0, free_at = -1;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] == -1 && free_at < 0)
        free_at = static_cast<int64_t>(i);
      else if (sizes[i] < 0)
        MYCEL_THROW(ValueError, "[split] size_splits ", shape_str(sizes),
                    " has a negative entry (one -1 is allowed)");
      else if (sizes[i] > dim - known)
        MYCEL_THROW(ValueError, "[split] size_splits ", shape_str(sizes), " must sum to dimension ",
                    axis, " of shape ", shape_str(s), " (", dim, ")");
      else
        known += sizes[i];
    }
    if (free_at >= 0 && known <= dim)
      sizes[free_at] = dim - known;
    else if (free_at >= 0 || known != dim)
      MYCEL_THROW(ValueError, "[split] size_splits ", shape_str(sizes), " must sum to dimension ",
                  axis, " of shape ", shape_str(s), " (", dim, ")");
  } else {
    if (num <= 0) MYCEL_THROW(ValueError, "[split] output_num must be positive, got ", num);
    if (dim % num != 0)
      MYCEL_THROW(ValueError, "[split] dimension ", axis, " of shape ", shape_str(s), " (", dim,
                  ") is not divisible by output_num ", num);
    sizes.assign(num, dim / num);
  }
  std::vector<TensorMeta> outs;
  for (int64_t k : sizes) {
    Shape o = s;
    o[axis] = k;
    outs.push_back({o, c.in(0).dtype});
  }
  return outs;
}

void split_kernel(const KernelContext& c) {
  cpu::split_blocks(c.in(0), c.outputs,
                    normalize_axis(c.attrs.get_int("axis"), c.in(0).ndim(), "split"));
}

// ---- cast ----

std::vector<TensorMeta> infer_cast(const InferContext& c) {
  return {{c.in(0).shape, c.attrs.get_dtype("dtype")}};
}

void cast_kernel(const KernelContext& c) {
  convert_elements(c.in(0).data(), c.in(0).dtype(), c.out(0).data(), c.out(0).dtype(),
                   c.in(0).numel());
}

}  // namespace

MYCEL_REGISTER_OPS(shape) {
  const AttrValue no_ints = Ints{};
  r.add(with_traits(view_op("reshape", "Reshape",
                            "Reshapes x to `shape` (one entry may be -1); a view in eager mode.",
                            {attr("shape", AttrKind::kInts, {}, {"input_shape"})}, infer_reshape),
                    [](OpDef& d) { d.dynamic_shape_attr = "shape"; }));
  r.add(view_op("flatten", "Flatten",
                "Keeps dimension 0 and flattens the rest: (N, ...) -> (N, X).", {}, infer_flatten));
  r.add(view_op("expand_dims", "ExpandDims", "Inserts a size-1 dimension at `axis`.",
                {attr("axis", AttrKind::kInt, {}, {"dim"})}, infer_expand_dims));
  r.add(view_op("squeeze", "Squeeze", "Removes size-1 dimensions (`axis`, or all when empty).",
                {attr("axis", AttrKind::kInts, no_ints)}, infer_squeeze));
  r.add(view_op("identity", "Identity", "Returns x (a view in eager mode).", {},
                infer_same_as_input));
  {
    OpDef d = with_rule(
        make_op("transpose", "Transpose", "Permutes dimensions by `perm` (empty: reverse them).",
                {{"x"}}, {attr("perm", AttrKind::kInts, no_ints, {"input_perm", "axes"})},
                infer_transpose, transpose_kernel, every_dtype(), "bprop"),
        transpose_spec);  // bytes only
    d.backend.permutes_axes = true;
    r.add(std::move(d));
  }
  r.add(make_op("broadcast_to", "BroadcastTo", "Broadcasts x to `shape` (-1 keeps a dimension).",
                {{"x"}}, {attr("shape", AttrKind::kInts, {})}, infer_broadcast_to, broadcast_kernel,
                every_dtype(), "bprop"));  // bytes only
  {
    OpDef d = make_op("broadcast_like", "BroadcastLike",
                      "Broadcasts x to the shape of `like` (whose values are not read).",
                      {{"x"}, {"like"}}, {}, infer_broadcast_like, broadcast_kernel, every_dtype(),
                      "bprop");
    // The mean pool's gradient may write an NHWC activation (norm_nhwc.h); `like` is a shape.
    d.backend.nhwc = NhwcKind::kSame;
    d.backend.nhwc_outputs = 1;
    d.backend.shape_only_inputs = 2;
    r.add(std::move(d));
  }
  r.add(make_op("tile", "Tile", "Repeats x `multiples` times along each dimension (numpy.tile).",
                {{"x"}}, {attr("multiples", AttrKind::kInts, {}, {"reps", "dims"})}, infer_tile,
                tile_kernel, every_dtype(), "bprop"));  // bytes only
  r.add(make_op("concat", "Concat", "Joins tensors along an existing axis.",
                {{"tensors", false, true}}, {attr("axis", AttrKind::kInt, int64_t{0}, {"dim"})},
                infer_concat, concat_kernel, every_dtype(), "bprop"));  // bytes only
  r.add(make_op("stack", "Stack", "Joins same-shape tensors along a new axis.",
                {{"tensors", false, true}}, {attr("axis", AttrKind::kInt, int64_t{0}, {"dim"})},
                infer_stack, stack_kernel, every_dtype(), "bprop"));
  OpDef split =
      make_op("split", "Split",
              "Splits x along `axis` into `output_num` equal parts, or by `size_splits`.", {{"x"}},
              {attr("axis", AttrKind::kInt, int64_t{0}, {"dim"}),
               attr("output_num", AttrKind::kInt, int64_t{1}),
               optional_attr("size_splits", AttrKind::kInts)},
              infer_split, split_kernel, every_dtype(), "bprop");
  split.tuple_output = true;
  r.add(std::move(split));
  r.add(with_traits(make_op("cast", "Cast", "Converts x to `dtype` (numpy astype semantics).",
                            {{"x"}}, {attr("dtype", AttrKind::kDType, {})}, infer_cast, cast_kernel,
                            every_dtype(), "bprop"),
                    ew_step(cpu::EwOp::kCast)));
}

// Backward rules: every op here is linear, so each rule is the adjoint data movement (reshape
// back, inverse permutation, sum over broadcast or tiled copies, split a concat, concat a split).
// Integer and bool inputs get no gradient; complex ones do (linear maps need no conjugation).
MYCEL_REGISTER_BPROPS(shape) {
  using bprop::is_diff;
  // Views: the gradient is dout reshaped to x's shape (one dynamic dim at most; it becomes -1).
  for (const char* name : {"reshape", "flatten", "squeeze"}) {
    b.add(name, [](BpropBuilder& g) -> std::vector<GradVar> {
      GradVar x = g.input(0);
      if (!is_diff(g, x)) return {GradVar()};
      return {g.reshape(g.dout(), g.meta(x).shape)};
    });
  }
  b.add("expand_dims", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar x = g.input(0);
    if (!is_diff(g, x)) return {GradVar()};
    int64_t axis = normalize_axis(g.attrs().get_int("axis"),
                                  static_cast<int64_t>(g.meta(x).shape.size()) + 1, "expand_dims");
    return {g.call("squeeze", {g.dout()}, {{"axis", Ints{axis}}})};
  });
  b.add("identity", [](BpropBuilder& g) -> std::vector<GradVar> {
    if (!is_diff(g, g.input(0))) return {GradVar()};
    return {g.dout()};
  });
  b.add("transpose", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar x = g.input(0);
    if (!is_diff(g, x)) return {GradVar()};
    Ints p =
        transpose_perm(g.attrs().get_ints("perm"), static_cast<int64_t>(g.meta(x).shape.size()));
    Ints inverse(p.size());
    for (size_t i = 0; i < p.size(); ++i) inverse[p[i]] = static_cast<int64_t>(i);
    return {g.call("transpose", {g.dout()}, {{"perm", inverse}})};
  });
  b.add("broadcast_to", [](BpropBuilder& g) -> std::vector<GradVar> {
    if (!is_diff(g, g.input(0))) return {GradVar()};
    return {g.reduce_to(g.dout(), g.input(0))};
  });
  b.add("broadcast_like", [](BpropBuilder& g) -> std::vector<GradVar> {
    if (!is_diff(g, g.input(0))) return {GradVar(), GradVar()};
    return {g.reduce_to(g.dout(), g.input(0)), GradVar()};  // `like` only lends its shape
  });
  b.add("tile", [](BpropBuilder& g) -> std::vector<GradVar> {
    // dout viewed as (m0, s0, m1, s1, ...) holds the m0 * m1 * ... copies: sum over the m axes.
    GradVar x = g.input(0);
    if (!is_diff(g, x)) return {GradVar()};
    const Shape xs = g.meta(x).shape;
    auto [in, mult] = tile_plan(xs, g.attrs().get_ints("multiples"));
    Shape split;
    Ints copy_axes;
    for (size_t d = 0; d < in.size(); ++d) {
      copy_axes.push_back(static_cast<int64_t>(split.size()));
      split.push_back(mult[d]);
      split.push_back(in[d]);
    }
    GradVar summed = g.sum(g.reshape(g.dout(), split), copy_axes, false);
    return {g.reshape(summed, xs)};
  });
  b.add("concat", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar xs = g.input(0);
    const size_t n = g.tuple_size(xs);
    Ints sizes;
    bool floating = true;
    int64_t axis = 0;
    for (size_t k = 0; k < n; ++k) {
      TensorMeta m = g.meta(g.tuple_get(xs, k));
      axis =
          normalize_axis(g.attrs().get_int("axis"), static_cast<int64_t>(m.shape.size()), "concat");
      sizes.push_back(m.shape[axis]);
      floating = floating && (is_floating(m.dtype) || is_complex(m.dtype));
    }
    if (!floating) return {GradVar()};
    if (n == 1) return {g.make_tuple({g.dout()})};
    GradVar parts =
        g.call("split", {g.dout()},
               {{"axis", axis}, {"output_num", static_cast<int64_t>(n)}, {"size_splits", sizes}});
    std::vector<GradVar> items;
    for (size_t k = 0; k < n; ++k) items.push_back(g.tuple_get(parts, k));
    return {g.make_tuple(items)};
  });
  b.add("stack", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar xs = g.input(0);
    const size_t n = g.tuple_size(xs);
    TensorMeta m = g.meta(g.tuple_get(xs, 0));
    if (!(is_floating(m.dtype) || is_complex(m.dtype))) return {GradVar()};
    int64_t axis = normalize_axis(g.attrs().get_int("axis"),
                                  static_cast<int64_t>(m.shape.size()) + 1, "stack");
    std::vector<GradVar> items;
    GradVar parts = n == 1
                        ? g.dout()
                        : g.call("split", {g.dout()}, {{"axis", axis}, {"output_num", int64_t(n)}});
    for (size_t k = 0; k < n; ++k) {
      GradVar part = n == 1 ? parts : g.tuple_get(parts, k);
      items.push_back(g.call("squeeze", {part}, {{"axis", Ints{axis}}}));
    }
    return {g.make_tuple(items)};
  });
  b.add("split", [](BpropBuilder& g) -> std::vector<GradVar> {
    // dout holds one sensitivity per part (zeros for unused parts): join them back.
    GradVar x = g.input(0);
    if (!is_diff(g, x)) return {GradVar()};
    const Attrs& a = g.attrs();
    size_t parts = a.has("size_splits") ? a.get_ints("size_splits").size()
                                        : static_cast<size_t>(a.get_int("output_num"));
    if (parts == 1) return {g.dout()};
    return {g.call("concat", {g.dout()}, {{"axis", a.get_int("axis")}})};
  });
  b.add("cast", [](BpropBuilder& g) -> std::vector<GradVar> {
    // Only float/complex -> float/complex casts carry a gradient (to an integer the result is
    // piecewise constant); complex -> real keeps the real part, so its gradient is (d, 0).
    GradVar x = g.input(0);
    if (!is_diff(g, x) || !(is_floating(g.out_meta(0).dtype) || is_complex(g.out_meta(0).dtype)))
      return {GradVar()};
    return {g.cast(g.dout(), g.meta(x).dtype)};
  });
}

}  // namespace mycel
