"""Mycel: a deep-learning framework with a C++20 core, in the style of MindSpore."""
import os as _os

# How idle OpenMP threads wait (read once, when libgomp loads with _mycel below). libgomp's default
# spins ~300,000 times before sleeping: on a machine whose cores other processes also want, a
# small training step then became a lottery (LeNet5, 2 busy processes on 2 cores: 22 or 290 ms
# per step, PyTorch alike), while sleeping at once (OMP_WAIT_POLICY=PASSIVE) costs ~20% when the
# machine is idle. A short spin keeps both: 24 ms under that load, +0-5% idle
# (bench/bench_contention.py, docs/eager.md). A user's own setting wins.
if "OMP_WAIT_POLICY" not in _os.environ and "GOMP_SPINCOUNT" not in _os.environ:
    _os.environ["GOMP_SPINCOUNT"] = "1000"

from mycel import _mycel  # noqa: E402
from mycel._mycel import dtype, promote_types
from mycel.common.dtype import (bool_, int8, uint8, int16, int32, int64, float16, bfloat16,
                                float32, float64, float_, int_, half, double, single,
                                uint16, uint32, uint64, complex64, complex128)
from mycel.common.tensor import Tensor, from_dlpack
from mycel.common.sparse_tensor import CSRTensor, COOTensor, RowTensor
from mycel.common.dtype import string, dtype_to_nptype, dtype_to_pytype, pytype_to_dtype, get_py_obj_dtype
from mycel.common.string_tensor import StringTensor
from mycel.common.symbol import Symbol
from mycel.common.parameter import Parameter, ParameterTuple
from mycel import ops
from mycel.context import (set_context, get_context, PYNATIVE_MODE, GRAPH_MODE, STRICT, COMPATIBLE, LAX)
from mycel.parallel import (ParallelMode, set_auto_parallel_context, get_auto_parallel_context,
                            reset_auto_parallel_context)
from mycel.common.seed import set_seed, get_seed
from mycel.common.api import jit, ms_function, jit_class
from mycel.common.jit_config import JitConfig
from mycel.common.mutable import mutable
from mycel.common.autodiff import grad, value_and_grad, get_grad
from mycel.common.functional_ad import vjp, jvp, jacrev, jacfwd
from mycel.common.vmap import vmap
from mycel import nn
from mycel import train
from mycel import amp
from mycel.train.model import Model
from mycel.train.serialization import save_checkpoint, load_checkpoint, load_param_into_net
from mycel.insight import SummaryRecord, SummaryCollector, Profiler
from mycel.lite.export import export
from mycel.lite.graph import load

from mycel.common.generator import (Generator, default_generator, manual_seed, seed, initial_seed,
                                    get_rng_state, set_rng_state)
from mycel.common.misc import lazy_inline, is_tensor, from_numpy


def set_flush_denormal(mode):
    """Flush float32/float64 subnormals to zero (FTZ and DAZ) on this thread and the kernel thread
    pool, as torch.set_flush_denormal: off by default. On Intel CPUs each subnormal costs a
    microcode assist; a saturated training step can run several times slower without it
    (docs/training.md, "Subnormal numbers"). Returns False where the CPU has no such control."""
    return _mycel.set_flush_denormal(bool(mode))


# MindSpore's top level re-exports mindspore.train (callbacks, metrics, loss scale managers, ...);
# names defined above (export, load, ...) keep their meaning.
_train_names = [n for n in train.__all__ if n not in globals() and n not in ("callback", "metrics", "summary")]
globals().update({n: getattr(train, n) for n in _train_names})

__version__ = "0.1.0"

__all__ = ["ParallelMode", "set_auto_parallel_context", "get_auto_parallel_context",
           "reset_auto_parallel_context", "Model", "amp", "Tensor", "CSRTensor", "COOTensor", "RowTensor", "string", "StringTensor", "Symbol", "dtype_to_nptype", "dtype_to_pytype", "pytype_to_dtype", "get_py_obj_dtype", "Parameter", "ParameterTuple", "dtype", "from_dlpack", "ops", "set_context", "get_context", "PYNATIVE_MODE",
           "GRAPH_MODE", "STRICT", "COMPATIBLE", "LAX", "jit", "ms_function", "jit_class", "JitConfig", "mutable", "grad", "value_and_grad", "vjp", "jvp", "jacrev", "jacfwd", "vmap", "get_grad", "nn", "train", "save_checkpoint",
           "load_checkpoint", "load_param_into_net", "export", "load", "SummaryRecord", "SummaryCollector", "Profiler", "set_seed", "get_seed", "bool_", "int8", "uint8",
           "int16", "int32",
           "int64", "float16", "bfloat16", "float32", "float64", "uint16", "uint32", "uint64",
           "complex64", "complex128", "Generator", "default_generator", "manual_seed", "seed",
           "initial_seed", "get_rng_state", "set_rng_state", "lazy_inline", "is_tensor", "from_numpy"]
__all__ += _train_names
__all__ += ["set_flush_denormal"]

# Submodules MindSpore's top level imports (ms.dataset, ms.numpy, ...): imported on first use here,
# so that `import mycel` stays quick.
_LAZY_SUBMODULES = ("dataset", "numpy", "mindrecord", "communication", "parallel", "log", "common",
                    "context", "profiler", "insight", "lite", "onnx", "te", "armour", "mint")

# mycel.set_contxt: "did you mean 'set_context'?"
from mycel.common.suggest import module_getattr as _module_getattr  # noqa: E402
_missing = _module_getattr("mycel", globals())


def __getattr__(name):
    if name in _LAZY_SUBMODULES:
        import importlib
        try:
            return importlib.import_module(f"mycel.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"mycel.{name}":
                raise
    return _missing(name)
