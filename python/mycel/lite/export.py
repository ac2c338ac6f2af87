"""mycel.export: writes a network's inference graph to a file. The graph is the graph-mode IR
(parsed from construct, specialized for the example inputs, optimized), never a trace of Python."""
import os
import tempfile

from mycel import _mycel
from mycel.common.tensor import Tensor

FORMATS = ("ONNX", "MINDIR")


def _with_dynamic_batch(x):
    """A Tensor(shape=[None, ...]) placeholder for x: the batch dim stays dynamic in the file."""
    if isinstance(x, Tensor) and x.ndim >= 1 and not hasattr(x, "_dynamic_shape"):
        return Tensor(shape=[None] + list(x.shape[1:]), dtype=x.dtype)
    return x


def inference_graph(net, *inputs, dynamic_batch=True):
    """The optimized inference graph of `net` for `inputs` as Python data (see graph_data)."""
    training = getattr(net, "training", False)
    if hasattr(net, "set_train"):
        net.set_train(False)
    try:
        compiled = _mycel.graph.compile(net)
        args = [_with_dynamic_batch(x) for x in inputs] if dynamic_batch else list(inputs)
        return compiled.graph_data(*args)
    finally:
        if hasattr(net, "set_train"):
            net.set_train(training)


def write_atomic(path, data):
    """Writes bytes to path through a temporary file in the same folder and a rename."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp_export_")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


QUANT_MODES = ("QUANT", "NONQUANT")


def export(net, *inputs, file_name, file_format="MINDIR", dynamic_batch=True, input_names=None,
           output_names=None, quant_mode="QUANT", enc_key=None, enc_mode="AES-GCM"):
    """Exports `net`'s inference graph for example `inputs` as file_format "ONNX" (opset 17) or
    "MINDIR" (Mycel's FlatBuffers model file). The file name gets ".onnx"/".mindir" if it has no
    such suffix, as MindSpore does; returns the path written. With dynamic_batch (the default)
    each input's first dimension is left symbolic. A net quantized by mycel.lite.quant exports
    its int8 form (quant_mode="QUANT": int8 MINDIR, QDQ ONNX) or, with "NONQUANT", its
    fake-quant float32 graph. `enc_key` (bytes) encrypts a MINDIR file with `enc_mode`
    ("AES-GCM", "AES-CBC" or "SM4-CBC"); mycel.load reads it back with dec_key/dec_mode."""
    fmt = str(file_format).upper()
    if fmt not in FORMATS:
        raise ValueError(f"export: file_format must be one of {FORMATS}, got {file_format!r}")
    mode = str(quant_mode).upper()
    if mode not in QUANT_MODES:
        raise ValueError(f"export: quant_mode must be one of {QUANT_MODES}, got {quant_mode!r}")
    if not inputs:
        raise ValueError("export: pass at least one example input (a Tensor of the input's shape)")
    if enc_key is not None and fmt != "MINDIR":
        raise ValueError(f"export: enc_key encrypts MINDIR files only, got file_format {file_format!r}")
    suffix = "." + fmt.lower()
    path = file_name if file_name.lower().endswith(suffix) else file_name + suffix
    from mycel.lite import quant
    with quant.int8_mode(net, mode == "QUANT"):
        data = inference_graph(net, *inputs, dynamic_batch=dynamic_batch)
    pools = getattr(net, "_quant_pools", None) if mode == "QUANT" else None
    if fmt == "ONNX":
        from mycel.onnx.exporter import graph_to_onnx
        blob = graph_to_onnx(data, input_names, output_names, type(net).__name__, pools=pools)
    else:
        from mycel.lite.mindir import graph_to_mindir
        blob = graph_to_mindir(data, pools=pools)
        if enc_key is not None:
            from mycel.common import encryption
            blob = encryption.encrypt("export", blob, enc_key, enc_mode)
    write_atomic(path, blob)
    return path
