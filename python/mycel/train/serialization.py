"""Saving and loading parameters with MindSpore's API: save_checkpoint, load_checkpoint and
load_param_into_net, plus safetensors files. The file formats, their validation and the atomic
writes live in C++ (src/mycel/io, spec in docs/checkpoints.md); this module gathers names and
tensors and matches them to a network's Parameters."""
import os

import numpy as np

from mycel import _mycel
from mycel.common import encryption
from mycel.common.parameter import Parameter
from mycel.common.tensor import Tensor
from mycel.nn.cell import Cell

_CKPT_SUFFIX = ".ckpt"
_ST_SUFFIX = ".safetensors"


def _check_file_name(fn, name):
    if not isinstance(name, (str, os.PathLike)):
        raise TypeError(f"{fn}: the file name must be a str or os.PathLike, "
                        f"got {type(name).__name__}")
    return os.fspath(name)


def _as_tensor(fn, name, value):
    if isinstance(value, Tensor):  # Parameter included
        return value
    if isinstance(value, (bool, int, float, np.ndarray, np.generic)):
        return Tensor(value)
    raise TypeError(f"{fn}: the value of '{name}' must be a Tensor, Parameter, numpy array or "
                    f"number, got {type(value).__name__}")


def _named_tensors(fn, save_obj):
    """[(name, Tensor)] from a Cell, a list of {"name", "data"} dicts or a dict name -> Tensor."""
    if isinstance(save_obj, Cell):
        items = list(save_obj.parameters_and_names())
    elif isinstance(save_obj, dict):
        items = list(save_obj.items())
    elif isinstance(save_obj, (list, tuple)):
        items = []
        for i, entry in enumerate(save_obj):
            if not isinstance(entry, dict) or "name" not in entry or "data" not in entry:
                raise TypeError(f"{fn}: save_obj[{i}] must be a dict with keys 'name' and 'data', "
                                f"got {entry!r:.80}")
            items.append((entry["name"], entry["data"]))
    else:
        raise TypeError(f"{fn}: save_obj must be a Cell, a list of {{'name': str, 'data': Tensor}} "
                        f"dicts or a dict of name -> Tensor, got {type(save_obj).__name__}")
    out = []
    for name, value in items:
        if not isinstance(name, str):
            raise TypeError(f"{fn}: parameter names must be str, "
                            f"got {type(name).__name__} {name!r}")
        out.append((name, _as_tensor(fn, name, value)))
    return out


def save_checkpoint(save_obj, ckpt_file_name, integrated_save=True, async_save=False,
                    append_dict=None, enc_key=None, enc_mode="AES-GCM", choice_func=None, **kwargs):
    """Saves the parameters of `save_obj` (a Cell, a list of {"name": str, "data": Tensor} dicts
    or a dict name -> Tensor) to `ckpt_file_name`.

    A name ending in ".safetensors" writes a safetensors file; otherwise ".ckpt" is appended when
    missing (as MindSpore does) and the checksummed Mycel format is written. `append_dict` adds
    extra name -> Tensor/number entries; `choice_func(name)` keeps only the names it accepts. The
    write is atomic: a crash leaves the previous file intact. `enc_key` (bytes) encrypts the
    file with `enc_mode` ("AES-GCM", the default, "AES-CBC" or "SM4-CBC"), as MindSpore does.
    """
    fn = "save_checkpoint"
    path = _check_file_name(fn, ckpt_file_name)
    if enc_key is not None:
        enc_key = encryption.key_bytes(fn, "enc_key", enc_key)
        enc_mode = encryption.mode_name(fn, "enc_mode", enc_mode)
        if path.endswith(_ST_SUFFIX):
            raise ValueError(f"{fn}: safetensors files are not encrypted; save to a .ckpt file "
                             f"to use enc_key")
    if async_save:
        raise NotImplementedError(f"{fn}: async_save=True is not supported; save synchronously")
    tensors = _named_tensors(fn, save_obj)
    if append_dict is not None:
        if not isinstance(append_dict, dict):
            raise TypeError(f"{fn}: append_dict must be a dict, got {type(append_dict).__name__}")
        tensors += _named_tensors(fn, append_dict)
    if choice_func is not None:
        tensors = [(n, t) for n, t in tensors if choice_func(n)]
    if path.endswith(_ST_SUFFIX):
        _mycel.io.save_safetensors(path, tensors)
        return
    if not path.endswith(_CKPT_SUFFIX):
        path += _CKPT_SUFFIX
    if enc_key is not None:
        _mycel.io.save_ckpt_encrypted(path, tensors, enc_key, enc_mode)
    else:
        _mycel.io.save_ckpt(path, tensors)


def _prefixes(fn, arg, value):
    if value is None:
        return ()
    values = (value,) if isinstance(value, str) else tuple(value)
    if not values or not all(isinstance(v, str) and v for v in values):
        raise TypeError(f"{fn}: {arg} must be a non-empty str or a list of them, got {value!r}")
    return values


def load_checkpoint(ckpt_file_name, net=None, strict_load=False, filter_prefix=None, dec_key=None,
                    dec_mode="AES-GCM", specify_prefix=None, choice_func=None):
    """Reads a checkpoint into a dict name -> Parameter (in file order).

    The format is picked by extension (".safetensors", else Mycel's ".ckpt"); a corrupt or
    hostile file raises ValueError naming the file and the problem. `filter_prefix` drops names
    starting with the given prefix(es), `specify_prefix` keeps only such names, `choice_func(name)`
    keeps the names it accepts. With `net`, the parameters are also loaded into it
    (load_param_into_net with `strict_load`). An encrypted checkpoint needs its `dec_key` and
    `dec_mode`; a wrong key raises ValueError.
    """
    fn = "load_checkpoint"
    path = _check_file_name(fn, ckpt_file_name)
    if dec_key is not None:
        dec_key = encryption.key_bytes(fn, "dec_key", dec_key)
        dec_mode = encryption.mode_name(fn, "dec_mode", dec_mode)
    if not os.path.isfile(path):
        raise ValueError(f"{fn}: the checkpoint file '{path}' does not exist")
    drop = _prefixes(fn, "filter_prefix", filter_prefix)
    keep = _prefixes(fn, "specify_prefix", specify_prefix)
    if path.endswith(_ST_SUFFIX):
        if dec_key is not None:
            raise ValueError(f"{fn}: safetensors files are not encrypted; drop dec_key")
        pairs, _ = _mycel.io.load_safetensors(path)
    elif dec_key is not None:
        pairs = _mycel.io.load_ckpt_encrypted(path, dec_key, dec_mode)
    else:
        pairs = _mycel.io.load_ckpt(path)
    params = {}
    for name, tensor in pairs:
        if drop and name.startswith(drop) or keep and not name.startswith(keep):
            continue
        if choice_func is not None and not choice_func(name):
            continue
        params[name] = Parameter(tensor, name=name)
    if net is not None:
        load_param_into_net(net, params, strict_load=strict_load)
    return params


def load_param_into_net(net, parameter_dict, strict_load=False):
    """Copies the values of `parameter_dict` (name -> Tensor/Parameter) into the Parameters of
    `net` with the same hierarchical name (as in `net.parameters_and_names()`).

    Returns (param_not_load, ckpt_not_load): the names of the network's Parameters that the dict
    lacks, and the names in the dict that match no Parameter (MindSpore 2.x returns both too).
    A shape mismatch raises ValueError. Different dtypes are converted when both are floating
    point and `strict_load` is False; otherwise they raise ValueError. Everything is checked
    before anything is written, so a failed load leaves the network unchanged.
    """
    fn = "load_param_into_net"
    if not isinstance(net, Cell):
        raise TypeError(f"{fn}: net must be a Cell, got {type(net).__name__}")
    if not isinstance(parameter_dict, dict):
        raise TypeError(f"{fn}: parameter_dict must be a dict, got {type(parameter_dict).__name__}")
    updates, param_not_load, used = [], [], set()
    for name, param in net.parameters_and_names():
        if name not in parameter_dict:
            param_not_load.append(name)
            continue
        value = _as_tensor(fn, name, parameter_dict[name])
        used.add(name)
        if tuple(value.shape) != tuple(param.shape):
            raise ValueError(f"{fn}: parameter '{name}' has shape {tuple(param.shape)} "
                             f"in the network but {tuple(value.shape)} in the checkpoint")
        if value.dtype != param.dtype:
            floats = value.dtype.is_floating_point and param.dtype.is_floating_point
            if strict_load or not floats:
                raise ValueError(f"{fn}: parameter '{name}' has dtype {param.dtype} in the network "
                                 f"but {value.dtype} in the checkpoint"
                                 + (" (strict_load=True)" if floats else ""))
        updates.append((param, value))
    for param, value in updates:
        param.set_data(value)
    ckpt_not_load = [n for n in parameter_dict if n not in used]
    return param_not_load, ckpt_not_load


def save_safetensors(save_obj, filename, metadata=None):
    """Writes `save_obj` (a Cell, a list of {"name", "data"} dicts or a dict name -> Tensor) as a
    safetensors file, atomically; `metadata` is an optional dict str -> str."""
    fn = "save_safetensors"
    path = _check_file_name(fn, filename)
    meta = {} if metadata is None else metadata
    if not isinstance(meta, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                             for k, v in meta.items()):
        raise TypeError(f"{fn}: metadata must be a dict of str -> str, got {metadata!r:.80}")
    _mycel.io.save_safetensors(path, _named_tensors(fn, save_obj), meta)


def load_safetensors(filename, return_metadata=False):
    """Reads a safetensors file into a dict name -> Tensor; with `return_metadata`, returns
    (dict, metadata dict). A malformed file raises ValueError naming the file and the problem."""
    fn = "load_safetensors"
    path = _check_file_name(fn, filename)
    if not os.path.isfile(path):
        raise ValueError(f"{fn}: the file '{path}' does not exist")
    pairs, meta = _mycel.io.load_safetensors(path)
    tensors = dict(pairs)
    return (tensors, meta) if return_metadata else tensors


def export(net, *inputs, file_name, file_format="MINDIR", **kwargs):
    """MindSpore's export(net, *inputs, file_name, file_format): the inference graph as a MINDIR
    (FlatBuffers, for the lite runtime) or ONNX file (mycel.lite.export)."""
    from mycel.lite.export import export as export_model  # the exporter needs nn and the graph glue
    return export_model(net, *inputs, file_name=file_name, file_format=file_format, **kwargs)


def check_checkpoint(ckpt_file_name):
    """Whether ckpt_file_name is a complete, uncorrupted checkpoint (MindSpore's check_checkpoint):
    the loader's own checks (format, bounds, checksums) decide; False instead of the error."""
    name = _check_file_name("check_checkpoint", ckpt_file_name)
    try:
        load_checkpoint(name)
    except (ValueError, RuntimeError, OSError, TypeError):
        return False
    return True


def load_checkpoint_async(ckpt_file_name, net=None, strict_load=False, filter_prefix=None,
                          dec_key=None, dec_mode="AES-GCM", specify_prefix=None,
                          choice_func=None):
    """load_checkpoint on a background thread: returns a concurrent.futures.Future whose
    result() is the parameter dict (MindSpore's load_checkpoint_async); errors surface there."""
    import concurrent.futures
    name = _check_file_name("load_checkpoint_async", ckpt_file_name)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="mycel-ckpt")
    try:
        return pool.submit(load_checkpoint, name, net, strict_load, filter_prefix, dec_key, dec_mode,
                           specify_prefix, choice_func)
    finally:
        pool.shutdown(wait=False)  # the thread finishes the one load, then exits
