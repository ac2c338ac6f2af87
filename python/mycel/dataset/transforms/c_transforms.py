"""MindSpore 1.x's `mindspore.dataset.transforms.c_transforms` path: the same transforms as
`mycel.dataset.transforms` (MindSpore 2.x merged the C++ and Python variants into one module)."""
from mycel.dataset.transforms import *  # noqa: F401,F403
from mycel.dataset.transforms import __all__  # noqa: F401
