"""MindSpore 1.x's `mindspore.dataset.vision.py_transforms` path: the same transforms as
`mycel.dataset.vision` (MindSpore 2.x merged the C++ and Python variants into one module)."""
from mycel.dataset.vision import *  # noqa: F401,F403
from mycel.dataset.vision import __all__  # noqa: F401
