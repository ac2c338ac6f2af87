"""ONNX interchange: export (mycel.export(..., file_format="ONNX")) and import (load_model)."""
