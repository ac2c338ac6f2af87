"""MindSpore's way back from an exported model: `graph = mycel.load("net.mindir")`, then
`nn.GraphCell(graph)(x)`. The graph is a lite-runtime Session (the optimized inference program of
the file); GraphCell runs it as a Cell, in either mode, returning a Tensor or a tuple of them."""
import os

from mycel import _mycel
from mycel.common.tensor import Tensor


class MindIRGraph:
    """A loaded MINDIR model (mycel.load's result): the lite runtime's Session over the file."""

    def __init__(self, session, file_name):
        self.session = session
        self.file_name = file_name

    @property
    def num_inputs(self):
        return self.session.num_inputs

    def __repr__(self):
        return f"MindIRGraph('{self.file_name}', inputs={self.num_inputs})"


def load(file_name, **kwargs):
    """Loads a MINDIR file written by mycel.export (MindSpore's mindspore.load). The file is
    verified in full (sizes, offsets, checksums, the graph's order); a damaged or hostile file
    raises ValueError naming the problem. An encrypted file (export's enc_key) needs dec_key (bytes)
    and dec_mode. ONNX files load with mycel.onnx.load_model instead."""
    lite = getattr(_mycel, "lite", None)
    if lite is None:
        raise NotImplementedError("load: this build has no lite runtime (CMake -DMYCEL_BUILD_LITE=ON)")
    if not isinstance(file_name, (str, os.PathLike)):
        raise TypeError(f"load: file_name must be a path, got {type(file_name).__name__}")
    path = os.fspath(file_name)
    if path.lower().endswith(".onnx"):
        raise ValueError(f"load: '{path}' is an ONNX file; use mycel.onnx.load_model")
    if not os.path.isfile(path):
        raise ValueError(f"load: the file '{path}' does not exist")
    dec_key = kwargs.pop("dec_key", None)
    dec_mode = kwargs.pop("dec_mode", "AES-GCM")
    if kwargs:
        raise TypeError(f"load: unexpected arguments {sorted(kwargs)}")
    if dec_key is None:
        with open(path, "rb") as f:
            if f.read(8) == b"MYCELENC":
                raise ValueError(f"load: '{path}' is encrypted: pass dec_key (and dec_mode) to load it")
        return MindIRGraph(lite.Session.from_file(path), path)
    from mycel.common import encryption
    with open(path, "rb") as f:
        blob = encryption.decrypt("load", f.read(), dec_key, dec_mode, path)
    return MindIRGraph(lite.Session.from_bytes(blob), path)


def run_graph(graph, inputs):
    """Runs a loaded graph on Tensors or arrays: a Tensor for one output, else a tuple."""
    if len(inputs) != graph.num_inputs:
        raise TypeError(f"GraphCell: the graph takes {graph.num_inputs} input(s), got {len(inputs)}")
    outs = graph.session.run([x.asnumpy() if isinstance(x, Tensor) else x for x in inputs])
    outs = [o if isinstance(o, Tensor) else Tensor(o) for o in outs]
    return outs[0] if len(outs) == 1 else tuple(outs)
