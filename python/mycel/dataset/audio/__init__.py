"""Audio transforms and filter banks (MindSpore's mindspore.dataset.audio): spectrograms, mel
scales, MFCC, decibels, resampling, time stretching, masking, volume and fades, IIR filters (the
biquad family, LFilter, Filtfilt), the inverse transforms (GriffinLim, InverseMelScale,
PitchShift, InverseSpectrogram, PhaseVocoder), spectral centroids, voice activity trimming (Vad), contrast and mu-law companding, DC shift, dither and
overdrive, flanger and phaser, LFCC, pitch detection, sliding-window CMN and Magphase, as numpy functions
the map op runs on its workers (docs/dataset.md)."""
from mycel.dataset.audio.utils import *  # noqa: F401,F403
from mycel.dataset.audio.transforms import *  # noqa: F401,F403
from mycel.dataset.audio.filters import *  # noqa: F401,F403
from mycel.dataset.audio.inverse import *  # noqa: F401,F403
from mycel.dataset.audio.vad import *  # noqa: F401,F403
from mycel.dataset.audio.effects import *  # noqa: F401,F403
from mycel.dataset.audio.spectral import *  # noqa: F401,F403
from mycel.dataset.audio.distortion import *  # noqa: F401,F403
from mycel.dataset.audio.modulation import *  # noqa: F401,F403
from mycel.dataset.audio.features import *  # noqa: F401,F403
from mycel.dataset.audio import (utils as _u, transforms as _t, filters as _f, inverse as _i, vad as _v,
                                 effects as _e, spectral as _s, distortion as _d, modulation as _m,
                                 features as _x)

__all__ = [name for mod in (_u, _t, _f, _i, _v, _e, _s, _d, _m, _x) for name in mod.__all__]
