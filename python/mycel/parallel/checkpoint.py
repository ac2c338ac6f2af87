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


def _train_layouts(fn, train_strategy_filename, layouts):
    """The training layouts {name: (device_matrix, tensor_map, shape)}: `layouts`, or
    train_strategy_filename as a dict of the same or a JSON file of one."""
    if layouts is not None and train_strategy_filename is not None:
        raise ValueError(f"{fn}: pass the training layouts once, as layouts or as train_strategy_filename")
    src = layouts if layouts is not None else train_strategy_filename
    if src is None:
        return {}
    if isinstance(src, (str, bytes)) or hasattr(src, "__fspath__"):
        import json
        from mycel.parallel import strategy_file
        try:
            if strategy_file.is_strategy_file(src):  # MindSpore's protobuf strategy file
                return strategy_file.load_strategy_file(src)
            with open(src) as f:
                src = json.load(f)
        except OSError as e:
            raise ValueError(f"{fn}: cannot read the training layouts from {src!r}: {e}") from None
        except ValueError as e:
            raise ValueError(f"{fn}: cannot read the training layouts from {src!r}: {e}") from None
    if not isinstance(src, dict):
        raise TypeError(f"{fn}: the training layouts must be a dict name -> (device_matrix, tensor_map, "
                        f"shape), got {type(src).__name__}")
    return src


def _predict_rank():
    from mycel import _mycel
    return _mycel.comm.world_rank() if _mycel.comm.initialized() else 0


def _predict_slice(fn, name, whole, entry, rank):
    """Rank's slice of the whole array under a predict_strategy entry (infer_predict_layout's
    [device_matrix, tensor_map, slice_shape, ...]), and its layout (device_matrix, tensor_map,
    whole shape); the entry's slice shape must be the one the layout gives."""
    try:
        dev, tmap, slice_shape = list(entry[0]), list(entry[1]), list(entry[2])
    except (TypeError, IndexError):
        raise ValueError(f"{fn}: predict_strategy['{name}'] must be [device_matrix, tensor_map, slice_shape, "
                         f"...] as Model.infer_predict_layout returns, got {entry!r}") from None
    lay = _layout(fn, name, (dev, tmap, list(whole.shape)))
    if list(_mycel.autopar.slice_shape(lay)) != slice_shape:
        raise ValueError(f"{fn}: predict_strategy['{name}'] gives slice shape {tuple(slice_shape)}, but its "
                         f"layout cuts the checkpoint's {tuple(whole.shape)} into "
                         f"{tuple(_mycel.autopar.slice_shape(lay))}")
    n = int(np.prod(dev))
    if not 0 <= rank < n:
        raise ValueError(f"{fn}: this process (rank {rank}) is outside predict_strategy['{name}']'s device "
                         f"matrix {dev}")
    off, shape = _mycel.autopar.slice_offset(lay, rank), _mycel.autopar.slice_shape(lay)
    part = np.ascontiguousarray(whole[tuple(slice(o, o + s) for o, s in zip(off, shape))])
    return part, (tuple(dev), tuple(tmap), tuple(whole.shape))


def load_distributed_checkpoint(network, checkpoint_filenames, predict_strategy=None, train_strategy_filename=None,
                                strict_load=False, dec_key=None, dec_mode="AES-GCM", format="ckpt", *,
                                layouts=None):
    """Loads the checkpoints written by each rank of a split run (one file per rank, in rank order)
    into `network`, MindSpore's signature. Parameters with a training layout (`layouts`, or
    train_strategy_filename: MindSpore's strategy file (protobuf, what
    set_auto_parallel_context(strategy_ckpt_save_file) writes), a dict name -> (device_matrix,
    tensor_map, shape) or a JSON file of
    one) are merged from their slices; the others are taken from the first file that holds them
    (a pipeline stage saves the other stages' Parameters empty:
    nn.PipelineCell.release_other_stages).

    predict_strategy (the dict Model.infer_predict_layout returns) re-slices for inference:
    each Parameter it names gets this process's slice of the merged tensor under its predict
    layout, stored as a slice (a `layout` attribute, as slice_parameters stores training
    weights), so the predict network runs on the slices; the others are loaded whole. None
    loads every Parameter whole. Encrypted files need dec_key/dec_mode (all ranks share the key).
    Returns the merged (whole) name -> Parameter dict."""
    fn = "load_distributed_checkpoint"
    if str(format) != "ckpt":
        raise ValueError(f"{fn}: format must be 'ckpt', got {format!r}")
    from mycel.train.serialization import load_checkpoint, load_param_into_net
    if isinstance(checkpoint_filenames, (str, bytes)):
        raise TypeError(f"{fn}: checkpoint_filenames must be a list of files (one per rank), got a single name")
    train = _train_layouts(fn, train_strategy_filename, layouts)
    if predict_strategy is not None and not isinstance(predict_strategy, dict):
        raise TypeError(f"{fn}: predict_strategy must be the dict Model.infer_predict_layout returns, got "
                        f"{type(predict_strategy).__name__}")
    per_rank = [load_checkpoint(f, dec_key=dec_key, dec_mode=dec_mode) for f in checkpoint_filenames]
    if not per_rank:
        raise ValueError(f"{fn}: checkpoint_filenames is empty")
    merged = {}
    for name in per_rank[0]:
        if name in train:
            missing = [r for r, d in enumerate(per_rank) if name not in d]
            if missing:
                raise ValueError(f"{fn}: '{name}' is missing from the files of ranks {missing}")
            merged[name] = merge_sliced_parameter([d[name] for d in per_rank], train[name], name)
        else:
            held = [d[name] for d in per_rank if name in d and int(np.prod(d[name].shape)) > 0]
            merged[name] = held[0] if held else per_rank[0][name]
    predict = predict_strategy or {}
    unknown = sorted(set(predict) - set(merged))
    if unknown:
        raise ValueError(f"{fn}: predict_strategy names parameters the checkpoints do not hold: {unknown}")
    rank = _predict_rank()
    params = dict(network.parameters_and_names())
    whole = {}
    for name, p in merged.items():
        if name not in predict:
            whole[name] = p
            continue
        part, layout = _predict_slice(fn, name, p.asnumpy(), predict[name], rank)
        target = params.get(name)
        if target is None:
            if strict_load:
                raise ValueError(f"{fn}: the network has no parameter '{name}'")
            continue
        target._rebind(Tensor(part, dtype=target.dtype))
        target.layout = layout  # the network reads it through sliced_weight (mycel.parallel.sliced)
    load_param_into_net(network, whole, strict_load=False)
    if strict_load:
        missing = sorted(set(params) - set(merged))
        if missing:
            raise ValueError(f"{fn}: the checkpoints hold no values for the network's parameters {missing}")
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
