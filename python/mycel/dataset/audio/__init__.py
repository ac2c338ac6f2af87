"""Audio transforms and filter banks (MindSpore's mindspore.dataset.audio): spectrograms, mel
scales, MFCC, decibels, resampling, time stretching, masking, volume and fades, as numpy
functions the map op runs on its workers (docs/dataset.md)."""
from mycel.dataset.audio.utils import *  # noqa: F401,F403
from mycel.dataset.audio.transforms import *  # noqa: F401,F403
from mycel.dataset.audio import utils as _u, transforms as _t

__all__ = list(_u.__all__) + list(_t.__all__)
