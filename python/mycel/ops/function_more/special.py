"""MindSpore's special-function ops over the registry's (ops/special.cc): the names MindSpore
gives them (i0, the Tensor methods), mvlgamma and polar as compositions."""
import math

from mycel import _mycel
from mycel.common.tensor import Tensor

_ops = _mycel.ops


def i0(input):
    """The modified Bessel function I0 (MindSpore's alias of bessel_i0)."""
    return _ops.bessel_i0(input)


def mvlgamma(input, p):
    """The multivariate log-gamma of dimension p: sum_{i<p} lgamma(x - i/2) + p(p-1)/4 log(pi).
    Eagerly every element must exceed (p - 1) / 2, as MindSpore checks."""
    if not isinstance(p, int) or isinstance(p, bool) or p < 1:
        raise ValueError(f"mvlgamma: p must be an int >= 1, got {p!r}")
    if isinstance(input, Tensor) and input.size and not bool((input.asnumpy() > (p - 1) / 2).all()):
        raise ValueError(f"mvlgamma: all elements of input must be greater than (p - 1) / 2 = {(p - 1) / 2}")
    out = _ops.lgamma(input)
    for i in range(1, p):
        out = out + _ops.lgamma(input - i / 2)
    return out + p * (p - 1) / 4 * math.log(math.pi)


def polar(abs, angle):  # noqa: A002  (MindSpore's argument names)
    """The complex tensor abs * (cos(angle) + i sin(angle))."""
    return _ops.complex(abs * _ops.cos(angle), abs * _ops.sin(angle))


# MindSpore's Tensor methods of these functions (the tensor first); graph mode parses them too
# (function_more/__init__.py adds them to tensor_composites.METHODS).
def _digamma(self):
    return _ops.digamma(self)


def _lgamma(self):
    return _ops.lgamma(self)


def _i0(self):
    return _ops.bessel_i0(self)


def _igamma(self, other):
    return _ops.igamma(self, other)


def _igammac(self, other):
    return _ops.igammac(self, other)


def _gcd(self, other):
    return _ops.gcd(self, other)


def _lcm(self, other):
    return _ops.lcm(self, other)


def _mvlgamma(self, p):
    return mvlgamma(self, p)


def _nextafter(self, other):
    return _ops.nextafter(self, other)


def _polygamma(self, n):
    return _ops.polygamma(n, self)


TENSOR_METHODS = {"digamma": _digamma, "lgamma": _lgamma, "i0": _i0, "igamma": _igamma,
                  "igammac": _igammac, "gcd": _gcd, "lcm": _lcm, "mvlgamma": _mvlgamma,
                  "nextafter": _nextafter, "polygamma": _polygamma}

__all__ = ["i0", "mvlgamma", "polar"]
