"""A short tour of eager (PyNative) mode: tensors, ops in both forms, dtypes, numpy interop and
the errors bad input gets. Run with scripts/demo."""
import numpy as np

import mycel
from mycel import Tensor, ops
from mycel.ops import operations as P

mycel.set_seed(0)

print("== Tensors")
x = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
print("x =", repr(x))
print("x.shape, x.dtype, x.ndim, x.size:", x.shape, x.dtype, x.ndim, x.size)
print("x[1, ::2] =", x[1, ::2], "  x[..., None].shape =", x[..., None].shape)
print("x.asnumpy() shares memory with the tensor:", type(x.asnumpy()).__name__)

print("\n== Ops: functional and primitive-class forms")
w = ops.normal((4, 3), seed=1)
print("ops.matmul(x, w, transpose_b=True):\n", ops.matmul(x, w, transpose_b=True))
print("P.MatMul(transpose_b=True)(x, w) equals it:",
      np.array_equal(P.MatMul(transpose_b=True)(x, w).asnumpy(), ops.matmul(x, w, transpose_b=True).asnumpy()))
print("relu(x - 2) =", ops.ReLU()(x - 2))
print("x.sum(axis=1) =", x.sum(axis=1), "  ops.softmax(x) rows sum to", ops.softmax(x).sum(axis=-1))

print("\n== Convolution and pooling (oneDNN)")
img = ops.uniform((1, 3, 8, 8))
k = ops.normal((4, 3, 3, 3))
y = ops.conv2d(img, k, pad_mode="same")
print("conv2d(1x3x8x8, 4x3x3x3, same) ->", y.shape, "; max_pool2d ->",
      ops.max_pool2d(y, kernel_size=2, strides=2).shape)

print("\n== Dtypes: numpy promotion, weak Python scalars, 16-bit floats")
i = Tensor(np.array([1, 2, 3], np.int32))
print("int32 + float32 tensor ->", (i + Tensor(np.ones(3, np.float32))).dtype, "(numpy's rule)")
print("int32 + 2 ->", (i + 2).dtype, ";  int32 + 2.5 ->", (i + 2.5).dtype, "(weak scalars)")
b = Tensor(np.array([1.0, 3.14159], np.float32), dtype=mycel.bfloat16)
print("bfloat16 stores", b.asnumpy(), "; matmul in bf16:", ops.matmul(b[None], b[:, None]).dtype)

print("\n== Errors name the op, the argument and the shapes")
for bad in (lambda: ops.add(Tensor(np.ones((2, 3))), Tensor(np.ones(4))),
            lambda: ops.matmul(x, x),
            lambda: ops.sum(x, axis=5),
            lambda: ops.sigmoid(i)):
    try:
        bad()
    except (ValueError, TypeError) as e:
        print(f"  {type(e).__name__}: {e}")
