"""Training utilities (MindSpore's mindspore.train): checkpoints for now."""
from mycel.train.serialization import (save_checkpoint, load_checkpoint, load_param_into_net,
                                       save_safetensors, load_safetensors)

__all__ = ["save_checkpoint", "load_checkpoint", "load_param_into_net", "save_safetensors",
           "load_safetensors"]
