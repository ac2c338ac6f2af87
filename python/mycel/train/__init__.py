"""Training utilities (MindSpore's mindspore.train): metrics and checkpoints (Model and callbacks
come next)."""
from mycel.train.serialization import (save_checkpoint, load_checkpoint, load_param_into_net,
                                       save_safetensors, load_safetensors)

__all__ = ["save_checkpoint", "load_checkpoint", "load_param_into_net", "save_safetensors",
           "load_safetensors"]
