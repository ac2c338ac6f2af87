"""Audio transforms and filter banks (MindSpore's mindspore.dataset.audio): spectrograms, mel
scales, MFCC, decibels, resampling, time stretching, masking, volume and fades, IIR filters (the
biquad family, LFilter, Filtfilt) and the inverse transforms (GriffinLim, InverseMelScale,
PitchShift) and voice activity trimming (Vad), as numpy functions the map op runs on its workers (docs/dataset.md)."""
from mycel.dataset.audio.utils import *  # noqa: F401,F403
from mycel.dataset.audio.transforms import *  # noqa: F401,F403
from mycel.dataset.audio.filters import *  # noqa: F401,F403
from mycel.dataset.audio.inverse import *  # noqa: F401,F403
from mycel.dataset.audio.vad import *  # noqa: F401,F403
from mycel.dataset.audio import utils as _u, transforms as _t, filters as _f, inverse as _i, vad as _v

__all__ = list(_u.__all__) + list(_t.__all__) + list(_f.__all__) + list(_i.__all__) + list(_v.__all__)
