"""Operators, generated from the C++ op registry.

Two forms, as in MindSpore: functional (`ops.matmul(x, w, transpose_b=True)`) and primitive
classes configured once and called later (`ops.MatMul(transpose_b=True)(x, w)`).
"""
from mycel import _mycel
from mycel.ops import operations
from mycel.ops.operations import Primitive
from mycel.ops.signature import op_function as _op_function

_handles = _mycel.op_handles

# Functional form: the C++ entry point behind a C-level partial that carries the signature and help
# text generated from the registry (no Python frame between the user and the registry).
for _name in _handles:
    globals()[_name] = _op_function(getattr(_mycel.ops, _name), _handles[_name])

# Primitive classes.
for _cls_name in operations.__all__:
    globals()[_cls_name] = getattr(operations, _cls_name)


# MindSpore's other spellings of registry ops.
_ALIASES = {"where": "select", "clamp": "clip_by_value", "reduce_sum": "sum", "reduce_mean": "mean",
            "reduce_max": "max", "reduce_min": "min", "topk": "top_k", "floor_mod": "mod",
            "truediv": "div", "ne": "not_equal", "gt": "greater", "ge": "greater_equal",
            "lt": "less", "le": "less_equal", "amax": "max", "amin": "min",
            "unsqueeze": "expand_dims", "permute": "transpose", "bmm": "matmul"}
for _alias, _target in _ALIASES.items():
    if _target in _handles and _alias not in globals():
        globals()[_alias] = _op_function(getattr(_mycel.ops, _target), _handles[_target], _alias)


def op_names():
    """Names of every registered op."""
    return sorted(_handles)


# Autodiff (composite operations, as in mindspore.ops): GradOperation, grad, value_and_grad.
from mycel.common.autodiff import GradOperation, grad, value_and_grad  # noqa: E402
from mycel.common.functional_ad import vjp, jvp, jacrev, jacfwd  # noqa: E402
from mycel.common.vmap import vmap  # noqa: E402
from mycel.common.autodiff import get_grad  # noqa: E402
from mycel.common import functional_ad as _functional_ad  # noqa: E402
_functional_ad._mark_graph_forms()  # vjp / jvp called in compiled code take their parsable forms

# Side effects: assign a Parameter, order a value after an effect.
from mycel.ops.effects import assign, depend  # noqa: E402

# Composites of registry ops: masked_fill, chunk, linspace.
from mycel.ops.composite import masked_fill, chunk, linspace  # noqa: E402

# full / full_like (MindSpore 2.x, numpy) over fill.
from mycel.ops.full import full, full_like  # noqa: E402

# What a tensor is (shape, rank, size, dtype), functional and primitive forms.
from mycel.ops.array_info import shape, rank, size, dtype, print_  # noqa: E402
from mycel.ops.array_info import Shape, Rank, Size, DType, Assign, Depend, Print  # noqa: E402

# Gradient clipping by global norm.
from mycel.ops.clip import clip_by_global_norm  # noqa: E402

# Reduction kinds of the collectives (ops.AllReduce(op=ReduceOp.SUM), ...).
from mycel.ops.collective import ReduceOp  # noqa: E402

# MindSpore's module layout: ops.composite (C), ops.functional (F), ops.primitive, and the names
# they define that MindSpore also offers on ops itself.
from mycel.ops import composite, functional, primitive  # noqa: E402,F401
from mycel.ops.multitype import MultitypeFuncGraph, HyperMap, Map  # noqa: E402,F401
from mycel.ops.primitive import (Primitive, PrimitiveWithInfer, PrimitiveWithCheck,  # noqa: E402,F401
                                 prim_attr_register, constexpr)
from mycel.ops.functional import partial  # noqa: E402,F401
from mycel.ops import tensor_composites  # noqa: E402,F401  (Tensor.acos, .hsplit, ...)
from mycel.ops.extra import (dot, gather_elements, gather_d, take_along_dim, tensor_scatter_update,  # noqa: E402,F401
                             scatter_nd_update, unique, unique_consecutive, masked_select, masked_scatter,
                             argwhere, nonzero)
from mycel.ops.loss_functional import cross_entropy  # noqa: E402,F401
from mycel.ops.nn_more import (softmin, glu, pixel_shuffle, pixel_unshuffle,  # noqa: E402,F401
                              dropout1d, dropout2d, dropout3d, interpolate)
from mycel.ops.custom import Custom  # noqa: E402,F401  (issue 18: te / pyfunc operators)
from mycel.ops.hybrid import kernel, ms_kernel  # noqa: E402,F401  (MindSpore's Hybrid DSL for Custom)
from mycel.ops.op_info_register import (DataType, CustomRegOp, AiCPURegOp, TBERegOp,  # noqa: E402,F401
                                     op_info_register, custom_info_register, get_vm_impl_fn)
# MindSpore 2.x functional names written over the registry ops; a name defined above stays.
from mycel.ops import function_more as _function_more  # noqa: E402
globals().update({_n: _f for _n, _f in _function_more.FUNCTIONS.items() if _n not in globals()})


from mycel.ops import tensor_composites as _tc  # noqa: E402

_div_op = div  # noqa: F821 (the registry's, generated above)


def div(input, other, *, rounding_mode=None):  # noqa: A002 (MindSpore's argument names)
    """input / other (true division; integers give floats); rounding_mode 'floor' rounds the
    quotient down, 'trunc' toward zero (MindSpore's ops.div)."""
    if rounding_mode is None:
        return _div_op(input, other)
    return _tc.div(input, other, rounding_mode)


# the registry's help text (its signature line, table row and example), then rounding_mode
div.__doc__ = (_div_op.__doc__ or "") + ("\n\nrounding_mode (keyword): 'floor' rounds the quotient down, "
                                          "'trunc' toward zero (MindSpore's ops.div).")

inv = reciprocal  # noqa: F821 (MindSpore's ops.inv, generated above)

# ops.relue: "did you mean 'relu'?" (common/suggest.py)
from mycel.common.suggest import module_getattr as _module_getattr  # noqa: E402
__getattr__ = _module_getattr("mycel.ops", globals())
# Linear algebra and FFT composites over the registry's ops: qr(input, mode), pinv, hfft, ...
from mycel.ops.linalg import (qr, matrix_determinant, log_matrix_determinant, pinv,  # noqa: E402,F401
                              matrix_power, cholesky_inverse)
from mycel.ops.fft_hermitian import hfft, ihfft, hfft2, hfftn, ihfft2, ihfftn  # noqa: E402,F401
from mycel.ops.fft_real import dct, idct, dst, idst, dctn, idctn, dstn, idstn  # noqa: E402,F401
from mycel.ops.scans import cumsum, cumprod  # noqa: E402,F401  (MindSpore's dtype argument)
from mycel.ops.stats import var_mean, std_mean  # noqa: E402,F401
from mycel.ops.norms import norm, matrix_norm, vector_norm  # noqa: E402,F401
from mycel.ops.random_more import (standard_laplace, random_gamma, gamma, random_poisson,  # noqa: E402,F401
                                   poisson, random_categorical, multinomial, binomial, random_beta,
                                   beta, log_normal, exponential, multinomial_with_replacement)
from mycel.ops.operations.sparse_ops import sparse_segment_mean, csr_softmax  # noqa: E402,F401
from mycel.ops.random_primitives import (uniform_candidate_sampler,  # noqa: E402,F401
                                         log_uniform_candidate_sampler)
# Sparse tensors (CSRTensor / COOTensor) in MindSpore's functional forms, over the sparse registry ops.
from mycel.ops.sparse import coo_concat  # noqa: E402,F401
from mycel.ops.sparse import (csr_mm, csr_mv, csr_add, coo_add, csr_to_coo, coo_to_csr,  # noqa: E402,F401
                              csr_to_dense, coo_to_dense, dense_to_sparse_coo, dense_to_sparse_csr,
                              sparse_to_dense, csr_mul, csr_div, csr_reduce_sum, SparseToDense,
                              SparseTensorDenseMatmul)
from mycel.ops import sparse as _sparse  # noqa: E402
for _n in dir(_sparse):
    if _n.startswith(("csr_", "coo_", "row_tensor_", "make_")) and _n not in globals():
        globals()[_n] = getattr(_sparse, _n)

# one_hot with Tensor on/off values (their dtype, graph mode too): one_hot.py.
from mycel.ops.one_hot import one_hot, OneHot  # noqa: E402,F401,F811

# MindSpore's F.string_eq / F.string_concat (on Python strings; compile-time in graph mode).
from mycel.common.string_tensor import string_eq, string_concat  # noqa: E402,F401

# MindSpore's fused attention (issue 19) over the registry's flash_attention.
from mycel.ops.attention import flash_attention_score  # noqa: E402,F401
