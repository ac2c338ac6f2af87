"""float64 numpy references for conv2d and its gradients, shared by the conv tests."""
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


def forward_ref(x, w, stride, pad, dilation=1):
    """y[n, o, p, q] = sum_{c, i, j} w[o, c, i, j] * xpad[n, c, p*stride + i*dilation, q*stride + j*dilation]."""
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oc, _, kh, kw = w.shape
    oh = (x.shape[2] - dilation * (kh - 1) - 1) // stride + 1
    ow = (x.shape[3] - dilation * (kw - 1) - 1) // stride + 1
    y = np.zeros((x.shape[0], oc, oh, ow))
    for i in range(kh):
        for j in range(kw):
            patch = x[:, :, i * dilation:i * dilation + stride * oh:stride,
                      j * dilation:j * dilation + stride * ow:stride]
            y += np.einsum("ncpq,oc->nopq", patch, w[:, :, i, j].astype(np.float64))
    return y
