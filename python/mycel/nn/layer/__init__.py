"""Layers (MindSpore's mindspore.nn layers), each a Cell built from registry ops only, so every
layer runs in both modes and is differentiable wherever its ops are."""
from mycel.nn.layer.activation import (ReLU, ReLU6, LeakyReLU, GELU, SiLU, Sigmoid, Tanh, Softmax,
                                       LogSoftmax, get_activation)
from mycel.nn.layer.basic import Dense, Flatten, Dropout, L1Regularizer
from mycel.nn.layer.conv import Conv2d, Conv2dTranspose
from mycel.nn.layer.pooling import MaxPool2d, AvgPool2d, AdaptiveAvgPool2d
from mycel.nn.layer.normalization import BatchNorm1d, BatchNorm2d, LayerNorm
from mycel.nn.layer.sync_batch_norm import SyncBatchNorm
from mycel.nn.layer.embedding import Embedding
from mycel.nn.layer.transformer import MultiheadAttention, TransformerEncoderLayer
from mycel.nn.layer.rnn import LSTM, GRU, RNN
from mycel.nn.layer.rnn_cells import LSTMCell, GRUCell, RNNCell
from mycel.nn.layer.activation_more import *  # noqa: F401,F403  (ELU, Softplus, Mish, PReLU, ...)
from mycel.nn.layer.activation_more import __all__ as _activation_more_all
from mycel.nn.layer.conv1d import Conv1d, Conv1dTranspose, MaxPool1d, AvgPool1d
from mycel.nn.layer.conv3d import Conv3d, Conv3dTranspose, MaxPool3d, AvgPool3d
from mycel.nn.layer.group_norm import GroupNorm, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from mycel.nn.layer.layers_more import *  # noqa: F401,F403  (Softmin, GLU, PixelShuffle, Dropout2d, ...)
from mycel.nn.layer.layers_more import __all__ as _layers_more_all
from mycel.nn.layer.sparse import SparseToDense, SparseTensorDenseMatmul
from mycel.nn.layer.padding import *  # noqa: F401,F403  (ConstantPad2d, ReflectionPad1d, nn.Pad, Unflatten, ...)
from mycel.nn.layer.padding import __all__ as _padding_all
from mycel.nn.layer.layers_extra import *  # noqa: F401,F403  (BatchNorm3d, LRN, LPPool2d, PSNR, ...)
from mycel.nn.layer.layers_extra import __all__ as _extra_all
from mycel.nn.layer.layers_wrap import *  # noqa: F401,F403  (BiDense, TimeDistributed, AdaptiveMaxPool2d, ...)
from mycel.nn.layer.layers_wrap import __all__ as _wrap_all
from mycel.nn.layer.pooling_more import *  # noqa: F401,F403  (AdaptiveMaxPool3d, MaxUnpool2d, ...)
from mycel.nn.layer.pooling_more import __all__ as _pooling_more_all
from mycel.nn.layer.image_quality import SSIM, MSSSIM
from mycel.nn.layer.embedding_fields import MultiFieldEmbeddingLookup
from mycel.nn.layer.legacy import *  # noqa: F401,F403  (Linear, Range, Norm, OneHot, MatrixDiag, ...)
from mycel.nn.layer.legacy import __all__ as _legacy_all
from mycel.nn.layer.transformer_stack import (TransformerDecoderLayer, TransformerEncoder, TransformerDecoder,
                                              Transformer)

__all__ = ["ReLU", "ReLU6", "LeakyReLU", "GELU", "SiLU", "Sigmoid", "Tanh", "Softmax", "LogSoftmax",
           "get_activation", "Dense", "Flatten", "Dropout", "L1Regularizer", "Conv2d", "Conv2dTranspose",
           "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d", "BatchNorm1d", "BatchNorm2d", "SyncBatchNorm", "LayerNorm", "Embedding",
           "MultiheadAttention", "TransformerEncoderLayer", "LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell",
           "TransformerDecoderLayer", "TransformerEncoder", "TransformerDecoder", "Transformer",
           "Conv1d", "Conv1dTranspose", "MaxPool1d", "AvgPool1d", "Conv3d", "Conv3dTranspose", "MaxPool3d", "AvgPool3d", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
           "SparseToDense", "SparseTensorDenseMatmul"] + _activation_more_all + \
    _layers_more_all + _padding_all + _extra_all + _wrap_all + _pooling_more_all + \
    ["SSIM", "MSSSIM", "MultiFieldEmbeddingLookup"] + _legacy_all
