"""Edge deployment: export of inference graphs (ONNX, MINDIR), the lite runtime's Python binding
(Session, when the build has MYCEL_BUILD_LITE), int8 quantization (mycel.lite.quant, with the
int8 export rewrites in mycel.lite.int8), pruning (mycel.lite.prune) and knowledge distillation
(mycel.lite.distill)."""
from mycel import _mycel
from mycel.lite.export import export

_lite = getattr(_mycel, "lite", None)
if _lite is not None:
    Session = _lite.Session  # a loaded, optimized MINDIR model: Session.from_file(path).run([x])
    verify = _lite.verify    # checks MINDIR bytes, raising ValueError naming the first problem

__all__ = ["export", "Session", "verify"] if _lite is not None else ["export"]
