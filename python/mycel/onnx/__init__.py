"""ONNX interchange: export (mycel.export(..., file_format="ONNX")) and import (load_model)."""
from mycel.onnx.importer import OnnxModel, Unsupported, load_model, load_model_from_bytes
from mycel.onnx.importer import RULES as _IMPORT_RULES

SUPPORTED_OPS = tuple(sorted(_IMPORT_RULES))  # ONNX op types the importer has a rule for
# Rules that cover only part of their op type, so we do not claim the op type (bench table).
# (Dropout was one until its training mode was imported: every rule now covers its op type.)
PARTIAL_OPS = ()
# Op types claimed: ONNX's backend node tests pass for >= 90% of their cases (tests check it).
CLAIMED_OPS = tuple(op for op in SUPPORTED_OPS if op not in PARTIAL_OPS)

__all__ = ["load_model", "load_model_from_bytes", "OnnxModel", "Unsupported", "SUPPORTED_OPS",
           "CLAIMED_OPS", "PARTIAL_OPS"]
