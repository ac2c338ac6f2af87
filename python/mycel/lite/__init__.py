"""Edge deployment: export of inference graphs (ONNX, MINDIR)."""
from mycel.lite.export import export

__all__ = ["export"]
