"""ONNX interchange: export (mycel.export(..., file_format="ONNX")) and import (load_model)."""
from mycel.onnx.importer import OnnxModel, Unsupported, load_model, load_model_from_bytes
from mycel.onnx.importer import RULES as _IMPORT_RULES

SUPPORTED_OPS = tuple(sorted(_IMPORT_RULES))  # ONNX op types the importer has a rule for

__all__ = ["load_model", "load_model_from_bytes", "OnnxModel", "Unsupported", "SUPPORTED_OPS"]
