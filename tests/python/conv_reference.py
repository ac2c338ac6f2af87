"""float64 numpy references for conv2d gradients, shared by the conv tests."""
import numpy as np


def filter_grad_ref(x, dy, k, stride, pad):
    """dW[o, c, i, j] = sum_{n, p, q} dy[n, o, p, q] * xpad[n, c, p*stride + i, q*stride + j]."""
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = dy.shape[2:]
    dw = np.zeros((dy.shape[1], x.shape[1], k, k))
    for i in range(k):
        for j in range(k):
            patch = x[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride]
            dw[:, :, i, j] = np.einsum("nopq,ncpq->oc", dy.astype(np.float64), patch)
    return dw
