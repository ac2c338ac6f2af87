"""A short tour of eager (PyNative) mode: tensors, ops in both forms, numpy interop."""
import numpy as np

import mycel
from mycel import Tensor, ops

x = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
y = Tensor([[1.0, 2.0, 3.0]])
print("x =", x)
print("x + y =", x + y)
print("exp(x) =", ops.exp(x))
print("relu(x - 2) =", ops.ReLU()(x - 2))
print("x.asnumpy() is a numpy array:", type(x.asnumpy()).__name__, x.asnumpy().dtype)
