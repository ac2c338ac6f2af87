"""How much of MindSpore's public API names exist in Mycel: mindspore.ops functions (2.x),
the operator primitives (the 1.9 reference list), nn layers, Tensor methods, mindspore.mint.
The name lists are MindSpore's API reference (mindspore.cn/docs, r2.2-r2.4 for the functions);
existing is not the same as equal behaviour, which tests/python/compat checks.

    .venv/bin/python bench/compat_api_coverage.py [--missing]
"""
import argparse
import importlib

OPS_FUNCTIONS = """
adaptive_avg_pool1d adaptive_avg_pool2d adaptive_avg_pool3d adaptive_max_pool1d adaptive_max_pool2d
avg_pool1d avg_pool2d avg_pool3d batch_norm bias_add bidense ctc_greedy_decoder conv1d conv2d conv3d
deformable_conv2d dense dropout dropout1d dropout2d dropout3d embedding flatten fold
fractional_max_pool3d group_norm layer_norm lp_pool1d lp_pool2d lrn max_pool2d max_pool3d
max_unpool1d max_unpool2d max_unpool3d unfold
binary_cross_entropy binary_cross_entropy_with_logits cosine_embedding_loss cross_entropy ctc_loss
gaussian_nll_loss hinge_embedding_loss huber_loss kl_div l1_loss margin_ranking_loss mse_loss
multi_margin_loss multilabel_margin_loss multilabel_soft_margin_loss nll_loss smooth_l1_loss
soft_margin_loss triplet_margin_loss
celu elu fast_gelu gelu glu gumbel_softmax hardshrink hardsigmoid hardswish hardtanh leaky_relu
log_softmax logsigmoid mish prelu relu relu6 rrelu selu sigmoid silu softmax softmin softshrink
softsign tanh threshold
cdist dist pdist choice_with_mask random_categorical log_uniform_candidate_sampler
uniform_candidate_sampler
affine_grid bounding_box_decode bounding_box_encode col2im check_valid crop_and_resize grid_sample
interpolate iou pad pixel_shuffle pixel_unshuffle upsample
abs absolute accumulate_n acos acosh add addcdiv addcmul addmv addn angle arccos arccosh arcsin
arcsinh arctan arctan2 arctanh asin asinh atan atan2 atanh bessel_i0 bessel_i0e bessel_i1
bessel_i1e bessel_j0 bessel_j1 bessel_k0 bessel_k0e bessel_k1 bessel_k1e bessel_y0 bessel_y1
bitwise_and bitwise_left_shift bitwise_or bitwise_right_shift bitwise_xor ceil clamp clip
combinations copysign cos cosh cosine_similarity cov diag_embed diff deg2rad digamma div divide
erf erfc erfinv exp exp2 expm1 floor floor_div floor_mod float_power fmax fmin fmod frac gcd
hypot igamma igammac imag i0 inv invert lcm ldexp lerp log log2 log10 log1p logaddexp logaddexp2
logical_and logical_not logical_or logical_xor logit mul multiply mvlgamma neg negative nextafter
polar polygamma positive pow rad2deg ravel real reciprocal remainder rot90 round rsqrt sgn sign
signbit sin sinc sinh sqrt square sub subtract t tan tanhshrink trapz tril_indices triu_indices
true_divide trunc truncate_div truncate_mod xdivy xlogy
all amax amin aminmax any argmax argmin cummax cummin cumprod cumsum histc logcumsumexp logsumexp
max mean median min nanmedian nansum norm prod std std_mean sum var var_mean
approximate_equal equal ge greater greater_equal gt intopk isclose isfinite isinf isnan isneginf
isposinf isreal is_complex is_floating_point le less less_equal lt maximum minimum msort ne
not_equal searchsorted topk
addbmm addmm addr adjoint baddbmm batch_dot bmm cholesky cholesky_solve cond cross det dot eig
geqrf ger inner inverse kron logdet lu_solve lu_unpack matmul matrix_band_part matrix_power
matrix_solve mm mv orgqr ormqr outer pinv qr slogdet svd tensor_dot trace
bartlett_window blackman_window hamming_window hann_window kaiser_window
eps eye fill full full_like linspace logspace one_hot ones ones_like arange range zeros zeros_like
bernoulli gamma laplace multinomial multinomial_with_replacement rand rand_like randint
randint_like randn randn_like random_gamma random_poisson randperm standard_laplace
standard_normal uniform
argwhere batch_to_space_nd bincount block_diag broadcast_to cat channel_shuffle chunk column_stack
concat conj count_nonzero deepcopy diag diagflat diagonal diagonal_scatter dsplit dstack einsum
expand_dims flip fliplr flipud gather gather_d gather_elements gather_nd hsplit hstack index_add
index_fill index_select inplace_add inplace_index_add inplace_sub inplace_update is_nonzero
masked_fill masked_select meshgrid moveaxis movedim narrow nan_to_num normal nonzero numel permute
population_count rank repeat_elements repeat_interleave reshape reverse reverse_sequence roll
scatter scatter_nd select select_scatter sequence_mask shape shuffle size slice slice_scatter sort
space_to_batch_nd split squeeze stack strided_slice swapaxes swapdims tensor_scatter_add
tensor_scatter_div tensor_scatter_max tensor_scatter_min tensor_scatter_mul tensor_scatter_sub
tensor_scatter_elements tensor_split tile tril triu transpose unbind unique unique_consecutive
unique_with_pad unsorted_segment_max unsorted_segment_min unsorted_segment_prod
unsorted_segment_sum unsqueeze unstack view_as_real vsplit vstack where
scalar_cast scalar_to_tensor tuple_to_array
clip_by_global_norm clip_by_value clip_by_norm
assign assign_add assign_sub scatter_add scatter_div scatter_max scatter_min scatter_mul
scatter_nd_add scatter_nd_div scatter_nd_max scatter_nd_min scatter_nd_mul scatter_nd_sub
scatter_update
grad value_and_grad get_grad jacfwd jacrev jvp vjp vmap print_ stop_gradient depend
""".split()

OPS_PRIMITIVES = """
Primitive PrimitiveWithCheck PrimitiveWithInfer constexpr custom_info_register ms_kernel
op_info_register prim_attr_register AvgPool AvgPool3D BasicLSTMCell BatchNorm Conv2D
Conv2DBackpropInput Conv2DTranspose Conv3D Conv3DTranspose CTCGreedyDecoder DepthwiseConv2dNative
Dropout Dropout2D Dropout3D DropoutDoMask DropoutGenMask DynamicGRUV2 DynamicRNN Flatten LayerNorm
LRN LSTM MaxPool MaxPool3D MaxPoolWithArgmax MirrorPad Pad EmbeddingLookup Padding
ResizeNearestNeighbor ResizeBilinear BCEWithLogitsLoss BinaryCrossEntropy CTCLoss KLDivLoss L2Loss
NLLLoss RNNTLoss SigmoidCrossEntropyWithLogits SmoothL1Loss SoftMarginLoss
SoftmaxCrossEntropyWithLogits SparseSoftmaxCrossEntropyWithLogits Elu FastGeLU GeLU HShrink
HSigmoid HSwish LogSoftmax Mish PReLU ReLU ReLU6 ReLUV2 SeLU Sigmoid Softmax Softplus SoftShrink
Softsign Tanh Adam AdamNoUpdateParam AdamWeightDecay AdaptiveAvgPool2D ApplyAdadelta ApplyAdagrad
ApplyAdagradDA ApplyAdagradV2 ApplyAdaMax ApplyAddSign ApplyCenteredRMSProp ApplyFtrl
ApplyGradientDescent ApplyMomentum ApplyPowerSign ApplyProximalAdagrad
ApplyProximalGradientDescent ApplyRMSProp FusedSparseAdam FusedSparseFtrl FusedSparseLazyAdam
FusedSparseProximalAdagrad LARSUpdate SparseApplyAdagrad SparseApplyAdagradV2
SparseApplyProximalAdagrad SGD SparseApplyFtrl SparseApplyFtrlV2 Cdist EditDistance LpNorm
ComputeAccidentalHits LogUniformCandidateSampler UniformCandidateSampler BoundingBoxDecode
BoundingBoxEncode CheckValid CropAndResize ExtractVolumePatches IOU L2Normalize NMSWithMask
ROIAlign NoRepeatNGram Abs AccumulateNV2 ACos Acosh Add Addcdiv Addcmul AddN Asin Asinh Atan Atan2
Atanh BesselI0e BesselI1e BitwiseAnd BitwiseOr BitwiseXor Ceil Conj Cos Cosh Div DivNoNan Einsum
Erf Erfc Erfinv Exp Expm1 Floor FloorDiv FloorMod Imag Inv Invert Lerp Log Log1p LogicalAnd
LogicalNot LogicalOr Mod Mul MulNoNan Neg Pow Real RealDiv Reciprocal Rint Round Rsqrt Sign Sin
Sinh Sqrt Square SquaredDifference SquareSumAll Sub Tan Trunc TruncateDiv TruncateMod Xdivy Xlogy
Argmax ArgMaxWithValue Argmin ArgMinWithValue ReduceAll ReduceAny ReduceMax ReduceMean ReduceMin
ReduceProd ReduceSum ApproximateEqual CheckBprop Equal EqualCount Greater GreaterEqual InTopK
IsFinite IsInf IsInstance IsNan IsSubClass Less LessEqual Maximum Minimum NotEqual SameTypeShape
TopK BatchMatMul BiasAdd Ger MatMul MatrixInverse Eps Eye Fill LinSpace OneHot Ones OnesLike Zeros
ZerosLike Gamma Multinomial Poisson RandomCategorical RandomChoiceWithMask Randperm
StandardLaplace StandardNormal UniformInt UniformReal BatchToSpace BatchToSpaceND BroadcastTo Cast
Concat CumProd CumSum DataFormatDimMap DepthToSpace DType DynamicShape ExpandDims FloatStatus
Gather GatherD GatherNd HistogramFixedWidth Identity IndexAdd InplaceAdd InplaceSub InplaceUpdate
InvertPermutation MaskedFill MaskedSelect Meshgrid ParallelConcat PopulationCount Range Rank
Reshape ReverseSequence ReverseV2 ScatterNd Select Shape Size Slice Sort SpaceToBatch
SpaceToBatchND SpaceToDepth SparseGatherV2 Split SplitV Squeeze Stack StridedSlice
TensorScatterAdd TensorScatterDiv TensorScatterMax TensorScatterMin TensorScatterMul
TensorScatterSub TensorScatterUpdate TensorShape Tile Transpose Unique UniqueWithPad
UnsortedSegmentMax UnsortedSegmentMin UnsortedSegmentProd UnsortedSegmentSum Unstack ScalarCast
ScalarToArray ScalarToTensor TupleToArray Assign AssignAdd AssignSub ScatterAdd ScatterDiv
ScatterMax ScatterMin ScatterMul ScatterNdAdd ScatterNdSub ScatterNdUpdate ScatterNonAliasingAdd
ScatterSub ScatterUpdate GetNext AllGather AllReduce AlltoAll Broadcast NeighborExchange
NeighborExchangeV2 ReduceOp ReduceScatter HistogramSummary ImageSummary ScalarSummary
TensorSummary Print NPUAllocFloatStatus NPUClearFloatStatus NPUGetFloatStatus
SparseTensorDenseMatmul SparseToDense Depend GradOperation HookBackward HyperMap InsertGradientOf
Map MultitypeFuncGraph Partial AiCPURegOp CustomRegOp DataType TBERegOp get_vm_impl_fn Custom
""".split()

NN_LAYERS = """
Cell GraphCell LossBase Optimizer CellList SequentialCell Dense BiDense Dropout Dropout1d Dropout2d
Dropout3d Flatten Unflatten Identity Embedding EmbeddingLookup MultiFieldEmbeddingLookup RNN RNNCell
GRU GRUCell LSTM LSTMCell Transformer TransformerEncoder TransformerDecoder TransformerEncoderLayer
TransformerDecoderLayer MultiheadAttention Conv1d Conv1dTranspose Conv2d Conv2dTranspose Conv3d
Conv3dTranspose Unfold Fold AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d AdaptiveMaxPool1d
AdaptiveMaxPool2d AdaptiveMaxPool3d AvgPool1d AvgPool2d AvgPool3d FractionalMaxPool3d LPPool1d
LPPool2d MaxPool1d MaxPool2d MaxPool3d MaxUnpool1d MaxUnpool2d MaxUnpool3d ConstantPad1d
ConstantPad2d ConstantPad3d Pad ReflectionPad1d ReflectionPad2d ReflectionPad3d ReplicationPad1d
ReplicationPad2d ReplicationPad3d ZeroPad2d BatchNorm1d BatchNorm2d BatchNorm3d GroupNorm
InstanceNorm1d InstanceNorm2d InstanceNorm3d LayerNorm LocalResponseNorm SyncBatchNorm CELU ELU
FastGelu GELU GLU get_activation Hardtanh HShrink HSigmoid HSwish LeakyReLU LogSigmoid LogSoftmax
LRN Mish Softsign PReLU ReLU ReLU6 RReLU SeLU SiLU Sigmoid Softmin Softmax Softmax2d SoftShrink
Tanh Tanhshrink Threshold BCELoss BCEWithLogitsLoss CosineEmbeddingLoss CrossEntropyLoss CTCLoss
DiceLoss FocalLoss GaussianNLLLoss HingeEmbeddingLoss HuberLoss KLDivLoss L1Loss MarginRankingLoss
MSELoss MultiClassDiceLoss MultilabelMarginLoss MultiLabelSoftMarginLoss MultiMarginLoss NLLLoss
PoissonNLLLoss RMSELoss SampledSoftmaxLoss SmoothL1Loss SoftMarginLoss
SoftmaxCrossEntropyWithLogits TripletMarginLoss Adadelta Adagrad Adam AdaMax AdamOffload
AdamWeightDecay AdaSumByDeltaWeightWrapCell AdaSumByGradWrapCell ASGD FTRL Lamb LARS LazyAdam
Momentum ProximalAdagrad RMSProp Rprop SGD thor DistributedGradReducer DynamicLossScaleUpdateCell
FixedLossScaleUpdateCell ForwardValueAndGrad GetNextSingleOp GradAccumulationCell MicroBatchInterleaved
ParameterUpdate PipelineCell PipelineGradReducer TimeDistributed TrainOneStepCell
TrainOneStepWithLossScaleCell WithEvalCell WithLossCell CentralCrop ImageGradients MSSSIM PSNR SSIM
ChannelShuffle PixelShuffle PixelUnshuffle Upsample Roll Tril Triu
""".split()

MINT = """
abs add all any arange argmax argmin atan2 bernoulli bmm broadcast_to cat clamp cos cumsum div eq
erf erfinv exp flatten flip gather ge greater greater_equal gt index_select isclose isfinite le
less less_equal log logical_and logical_not logical_or lt masked_select matmul max maximum mean min
minimum mul ne neg negative nonzero normal ones ones_like permute pow prod reciprocal
repeat_interleave rsqrt scatter_add searchsorted sigmoid sin sort split sqrt square stack sub sum
tanh tile topk tril triu unique where zeros zeros_like
""".split()


def coverage(module, names):
    try:
        mod = importlib.import_module(module)
    except ImportError:
        return 0, names
    missing = [n for n in names if not hasattr(mod, n)]
    return len(names) - len(missing), missing


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--missing", action="store_true", help="print the missing names")
    args = ap.parse_args()
    import mycel
    rows = [("mindspore.ops functions (2.x)", "mycel.ops", OPS_FUNCTIONS),
            ("mindspore.ops primitives (1.9 list)", "mycel.ops", OPS_PRIMITIVES),
            ("mindspore.nn", "mycel.nn", NN_LAYERS),
            ("mindspore.mint", "mycel.mint", MINT)]
    print("| API | names | present | coverage |\n|---|---|---|---|")
    report = []
    for title, module, names in rows:
        names = list(dict.fromkeys(names))
        have, missing = coverage(module, names)
        print(f"| {title} | {len(names)} | {have} | {100 * have / len(names):.0f}% |")
        report.append((title, missing))
    tensor_missing = [n for n in TENSOR_METHODS if not hasattr(mycel.Tensor, n)]
    have = len(TENSOR_METHODS) - len(tensor_missing)
    print(f"| mindspore.Tensor methods | {len(TENSOR_METHODS)} | {have} | {100 * have / len(TENSOR_METHODS):.0f}% |")
    report.append(("Tensor methods", tensor_missing))
    if args.missing:
        for title, missing in report:
            print(f"\n{title} missing ({len(missing)}): {' '.join(missing)}")


TENSOR_METHODS = list(dict.fromkeys("""
abs absolute acos acosh add addbmm addcdiv addcmul addmm addmv addr all amax amin any arccos arccosh
arcsin arcsinh arctan arctan2 arctanh argmax argmax_with_value argmin argmin_with_value argsort
argwhere asin asinh asnumpy assign_value astype atan atan2 atanh baddbmm bernoulli bincount
bitwise_and bitwise_left_shift bitwise_or bitwise_right_shift bitwise_xor bmm bool broadcast_to
ceil cholesky cholesky_solve choose chunk clamp clip col2im conj copy copysign cos cosh count_nonzero
cov cross cummax cummin cumprod cumsum deg2rad det diag diagflat diagonal diagonal_scatter diff
digamma div divide dtype dot dsplit erf erfc erfinv exp expand expand_as expand_dims expm1 fill_
fill_diagonal flatten flip fliplr flipud float float_power floor floor_divide fmax fmod frac
from_numpy gather gather_elements gather_nd gcd ge ger greater greater_equal gt half hardshrink has_init
heaviside histc hsplit hypot i0 igamma igammac imag index_add index_fill index_put index_select
init_data inner int inv inverse invert is_complex is_contiguous is_floating_point is_signed isclose
isfinite isinf isnan isneginf isposinf isreal item itemset itemsize kron lcm ldexp le lerp less
less_equal log log10 log1p log2 logaddexp logaddexp2 logdet logical_and logical_not logical_or
logical_xor logit logsumexp long lt lu_solve masked_fill masked_scatter masked_select matmul
max maximum mean median min minimum moveaxis movedim msort mul multinomial multiply mvlgamma
nan_to_num nanmean nanmedian nansum narrow nbytes ndim ndimension ne neg negative nelement new_ones
new_zeros nextafter nonzero norm not_equal numel numpy outer permute positive pow prod ptp rad2deg
random_categorical ravel real reciprocal remainder renorm repeat repeat_interleave reshape
reshape_as resize reverse reverse_sequence roll rot90 round rsqrt scatter scatter_add scatter_div
scatter_max scatter_min scatter_mul scatter_sub select select_scatter set_const_arg sgn shape
short sigmoid sign signbit sin sinc sinh size slice_scatter slogdet softmax sort split sqrt square
squeeze std storage_offset strides sub subtract sum sum_to_size svd swapaxes swapdims t take tan
tanh tensor_split tile to to_coo to_csr tolist topk trace transpose tril triu true_divide trunc
type type_as unbind unfold unique_consecutive unique_with_pad unsorted_segment_max
unsorted_segment_min unsorted_segment_prod unsqueeze var view view_as vsplit where xdivy xlogy
""".split()))

if __name__ == "__main__":
    main()
