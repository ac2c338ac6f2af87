"""mutable(x): MindSpore marks a graph input as a variable (no recompiling when its value
changes). Mycel's graphs already take Tensors, and tuples/lists of them, as run-time inputs, so
mutable returns such an input as it is; Python numbers stay compile-time constants (a graph is
specialized per value), so mutable refuses them and says to pass a 0-d Tensor."""
from mycel import _mycel


def _check(x, where):
    if isinstance(x, _mycel.Tensor):
        return
    if isinstance(x, (tuple, list)):
        for i, item in enumerate(x):
            _check(item, f"{where}[{i}]")
        return
    if isinstance(x, dict):
        for k, item in x.items():
            _check(item, f"{where}[{k!r}]")
        return
    raise TypeError(f"mutable: {where} must be a Tensor, or a tuple/list/dict of Tensors, got "
                    f"{type(x).__name__}; a number that changes between calls should be a 0-d Tensor")


def mutable(input_data, dynamic_len=False):
    """input_data unchanged after checking it holds only Tensors (see the module doc)."""
    if dynamic_len and not isinstance(input_data, (tuple, list)):
        raise TypeError(f"mutable: dynamic_len=True needs a tuple or list, got {type(input_data).__name__}")
    _check(input_data, "input_data")
    return input_data
