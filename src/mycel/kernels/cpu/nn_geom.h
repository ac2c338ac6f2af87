// Geometry of the dense and windowed nn ops, computed (and validated) once by the op's infer and
// shared by the oneDNN kernels and the reference loops.
#pragma once
#include <cstdint>

#include "mycel/core/shape.h"

namespace mycel::cpu {

/// C[b] = op(A[b]) @ op(B[b]) with numpy-broadcast batch dims. a_batch and b_batch are padded with
/// leading 1s to batch's rank; A is stored (a_batch, M, K) or, transposed, (a_batch, K, M).
struct MatmulGeom {
  Shape batch, a_batch, b_batch;
  int64_t m = 1, k = 1, n = 1;
  bool trans_a = false, trans_b = false;
  Shape out_shape;  // batch + [M if x was >= 2-d] + [N if y was >= 2-d]
  int64_t batch_count() const { return numel(batch); }
};

/// A 2-d sliding window over NCHW input: convolution (with weights) or pooling (kernel only).
struct WindowGeom {
  int64_t n = 0, c = 0, h = 0, w = 0;      // input
  int64_t oc = 0, oh = 0, ow = 0;          // output channels and size
  int64_t kh = 1, kw = 1;                  // kernel
  int64_t sh = 1, sw = 1;                  // stride
  int64_t dh = 1, dw = 1;                  // dilation (1 = dense)
  int64_t pt = 0, pb = 0, pl = 0, pr = 0;  // padding: top, bottom, left, right
  int64_t groups = 1;
};

/// Whether two windows are the same geometry (all fields).
inline bool same_geom(const WindowGeom& a, const WindowGeom& b) {
  return a.n == b.n && a.c == b.c && a.h == b.h && a.w == b.w && a.oc == b.oc && a.oh == b.oh &&
         a.ow == b.ow && a.kh == b.kh && a.kw == b.kw && a.sh == b.sh && a.sw == b.sw &&
         a.dh == b.dh && a.dw == b.dw && a.pt == b.pt && a.pb == b.pb && a.pl == b.pl &&
         a.pr == b.pr && a.groups == b.groups;
}

}  // namespace mycel::cpu
