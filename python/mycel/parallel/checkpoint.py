"""Checkpoints across layouts (MindSpore's merge_sliced_parameter / load_distributed_checkpoint):
parameters saved as slices by the ranks of a split run are merged into whole tensors for one
process, and whole tensors are cut into any rank's slice. A layout is a tuple
(device_matrix, tensor_map, shape) as in docs/parallel.md; a parameter without one is whole on
every rank."""
import numpy as np

from mycel import _mycel
from mycel.common.parameter import Parameter
from mycel.common.tensor import Tensor


def _layout(fn, name, layout):
    try:
        dev, tmap, shape = layout[:3]
        full = (list(dev), list(tmap), list(shape), [])
        _mycel.autopar.slice_shape(full)  # checks that the map fits the shape and the devices
    except (TypeError, ValueError) as e:
        raise ValueError(f"{fn}: layout of '{name}' must be (device_matrix, tensor_map, shape) with "
                         f"splits that divide the shape, got {layout!r}: {e}") from None
    return full


def _array(v):
    return (v.asnumpy() if hasattr(v, "asnumpy") else np.asarray(v))


def slice_parameter(value, layout, rank):
    """Rank `rank`'s slice of the whole tensor `value` under `layout` (a Tensor)."""
    lay = _layout("slice_parameter", "value", layout)
    a = _array(value)
    if list(a.shape) != lay[2]:
        raise ValueError(f"slice_parameter: value has shape {a.shape}, the layout's shape is {tuple(lay[2])}")
    n = int(np.prod(lay[0]))
    if not 0 <= rank < n:
        raise ValueError(f"slice_parameter: rank {rank} is not in [0, {n})")
    off, shape = _mycel.autopar.slice_offset(lay, rank), _mycel.autopar.slice_shape(lay)
    return Tensor(np.ascontiguousarray(a[tuple(slice(o, o + s) for o, s in zip(off, shape))]))


def merge_sliced_parameter(sliced_parameters, layout, name=None):
    """The whole parameter from every rank's slice (in rank order). Ranks that hold the same slice
    must hold equal values: a mismatch raises ValueError naming the ranks."""
    fn = "merge_sliced_parameter"
    lay = _layout(fn, name or "parameter", layout)
    n = int(np.prod(lay[0]))
    if len(sliced_parameters) != n:
        raise ValueError(f"{fn}: '{name}' needs one slice per rank of the device matrix ({n}), got "
                         f"{len(sliced_parameters)}")
    shape = _mycel.autopar.slice_shape(lay)
    whole = seen = None
    for r, v in enumerate(sliced_parameters):
        a = _array(v)
        if list(a.shape) != list(shape):
            raise ValueError(f"{fn}: slice of '{name}' from rank {r} has shape {a.shape}, the layout gives "
                             f"{tuple(shape)}")
        if whole is None:
            whole, seen = np.zeros(lay[2], a.dtype), {}
        off = tuple(_mycel.autopar.slice_offset(lay, r))
        idx = tuple(slice(o, o + s) for o, s in zip(off, shape))
        if off in seen:
            if not np.array_equal(whole[idx], a):
                raise ValueError(f"{fn}: ranks {seen[off]} and {r} hold different copies of the same slice "
                                 f"of '{name}'")
            continue
        seen[off] = r
        whole[idx] = a
    return Parameter(Tensor(whole), name=name or "merged")


def load_distributed_checkpoint(network, checkpoint_filenames, layouts=None, strict_load=False):
    """Loads the checkpoints written by each rank of a split run (one file per rank, in rank order)
    into `network` whole: parameters named in `layouts` (name -> layout) are merged from their
    slices, the others are taken from the first file that holds them (a pipeline stage saves
    the other stages' Parameters empty: nn.PipelineCell.release_other_stages). Returns the merged
    name -> Parameter dict."""
    from mycel.train.serialization import load_checkpoint, load_param_into_net
    per_rank = [load_checkpoint(f) for f in checkpoint_filenames]
    if not per_rank:
        raise ValueError("load_distributed_checkpoint: checkpoint_filenames is empty")
    layouts = layouts or {}
    merged = {}
    for name in per_rank[0]:
        if name in layouts:
            missing = [r for r, d in enumerate(per_rank) if name not in d]
            if missing:
                raise ValueError(f"load_distributed_checkpoint: '{name}' is missing from the files of ranks {missing}")
            merged[name] = merge_sliced_parameter([d[name] for d in per_rank], layouts[name], name)
        else:
            held = [d[name] for d in per_rank if name in d and int(np.prod(d[name].shape)) > 0]
            merged[name] = held[0] if held else per_rank[0][name]
    load_param_into_net(network, merged, strict_load=strict_load)
    return merged


def save_sliced_checkpoints(network, layouts, file_pattern):
    """The reverse: writes, for every rank r of the layouts' device matrix, file_pattern.format(rank=r)
    holding r's slice of each parameter named in `layouts` and the other parameters whole."""
    from mycel.train.serialization import save_checkpoint
    params = {p.name: p for p in network.get_parameters()}
    sizes = {int(np.prod(_layout("save_sliced_checkpoints", k, v)[0])) for k, v in layouts.items()}
    if len(sizes) > 1:
        raise ValueError(f"save_sliced_checkpoints: the layouts are on different device counts {sorted(sizes)}")
    n = sizes.pop() if sizes else 1
    unknown = sorted(set(layouts) - set(params))
    if unknown:
        raise ValueError(f"save_sliced_checkpoints: the network has no parameters {unknown}")
    files = []
    for r in range(n):
        d = {k: (slice_parameter(v, layouts[k], r) if k in layouts else Tensor(v.asnumpy()))
             for k, v in params.items()}
        files.append(file_pattern.format(rank=r))
        save_checkpoint(d, files[-1])
    return files
