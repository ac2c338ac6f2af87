"""MindSpore's argument validator (`from mindspore import _checkparam as validator`), which user
primitives' `__init__`/`infer_*` methods and MindSpore's own tests call: each check returns the
value it accepted and raises TypeError (wrong type) or ValueError (wrong value) with a message
that names the primitive and the argument, in MindSpore's wording ("For 'Prim', the 'x' ...")."""
import numbers

import numpy as np

from mycel.common import dtype as mstype

# Relations: a value against one bound, or against a range.
EQ, NE, LT, LE, GT, GE = 1, 2, 3, 4, 5, 6
INC_NEITHER, INC_LEFT, INC_RIGHT, INC_BOTH = 7, 8, 9, 10
IN, NOT_IN = 11, 12

_BINARY = {EQ: ("==", lambda a, b: a == b), NE: ("!=", lambda a, b: a != b),
           LT: ("<", lambda a, b: a < b), LE: ("<=", lambda a, b: a <= b),
           GT: (">", lambda a, b: a > b), GE: (">=", lambda a, b: a >= b),
           IN: ("in", lambda a, b: a in b), NOT_IN: ("not in", lambda a, b: a not in b)}
_RANGE = {INC_NEITHER: ("({}, {})", lambda v, lo, hi: lo < v < hi),
          INC_LEFT: ("[{}, {})", lambda v, lo, hi: lo <= v < hi),
          INC_RIGHT: ("({}, {}]", lambda v, lo, hi: lo < v <= hi),
          INC_BOTH: ("[{}, {}]", lambda v, lo, hi: lo <= v <= hi)}


def _who(arg_name, prim_name):
    prefix = f"For '{prim_name}', the" if prim_name else "The"
    return f"{prefix} '{arg_name}'" if arg_name else f"{prefix} input value"


def _is_int(v):
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _is_float(v):
    return isinstance(v, (float, np.floating))


def _relation(rel):
    if rel not in _BINARY:
        raise ValueError(f"_checkparam: unknown relation {rel!r} (EQ, NE, LT, LE, GT, GE, IN, NOT_IN)")
    return _BINARY[rel]


def _range(rel):
    if rel not in _RANGE:
        raise ValueError(f"_checkparam: unknown range relation {rel!r} (INC_NEITHER, INC_LEFT, INC_RIGHT, INC_BOTH)")
    return _RANGE[rel]


def check(arg_name, arg_value, value_name, value, rel=EQ, prim_name=None, excp_cls=ValueError):
    """arg_value `rel` value, else excp_cls naming both."""
    sym, ok = _relation(rel)
    if not ok(arg_value, value):
        raise excp_cls(f"{_who(arg_name, prim_name)} must be {sym} {value_name}: {value}, but got {arg_value}.")
    return arg_value


def _check_number(arg_value, value, rel, kind, arg_name, prim_name):
    is_kind = _is_int if kind is int else (lambda v: _is_int(v) or _is_float(v))
    if not is_kind(arg_value):
        raise TypeError(f"{_who(arg_name, prim_name)} must be {kind.__name__}, but got "
                        f"'{type(arg_value).__name__}'.")
    if isinstance(arg_value, float) and np.isnan(arg_value):
        raise ValueError(f"{_who(arg_name, prim_name)} must be a legal value, but got 'NaN'.")
    sym, ok = _relation(rel)
    if not ok(arg_value, value):
        raise ValueError(f"{_who(arg_name, prim_name)} must be {kind.__name__} and {sym} {value}, "
                         f"but got {arg_value}.")
    return arg_value


def check_int(arg_value, value, rel, arg_name=None, prim_name=None):
    return _check_number(arg_value, value, rel, int, arg_name, prim_name)


def check_float(arg_value, value, rel, arg_name=None, prim_name=None):
    return _check_number(arg_value, value, rel, float, arg_name, prim_name)


def check_number(arg_name, arg_value, value, rel, prim_name):
    return _check_number(arg_value, value, rel, float, arg_name, prim_name)


def check_is_int(arg_value, arg_name=None, prim_name=None):
    if not _is_int(arg_value):
        raise TypeError(f"{_who(arg_name, prim_name)} must be int, but got '{type(arg_value).__name__}'.")
    return arg_value


def check_is_float(arg_value, arg_name=None, prim_name=None):
    if not _is_float(arg_value):
        raise TypeError(f"{_who(arg_name, prim_name)} must be float, but got '{type(arg_value).__name__}'.")
    return arg_value


def check_equal_int(arg_value, value, arg_name=None, prim_name=None):
    return check_int(arg_value, value, EQ, arg_name, prim_name)


def check_positive_int(arg_value, arg_name=None, prim_name=None):
    return check_int(arg_value, 0, GT, arg_name, prim_name)


def check_negative_int(arg_value, arg_name=None, prim_name=None):
    return check_int(arg_value, 0, LT, arg_name, prim_name)


def check_non_positive_int(arg_value, arg_name=None, prim_name=None):
    return check_int(arg_value, 0, LE, arg_name, prim_name)


def check_non_negative_int(arg_value, arg_name=None, prim_name=None):
    return check_int(arg_value, 0, GE, arg_name, prim_name)


def check_positive_float(arg_value, arg_name=None, prim_name=None):
    return check_float(arg_value, 0, GT, arg_name, prim_name)


def check_negative_float(arg_value, arg_name=None, prim_name=None):
    return check_float(arg_value, 0, LT, arg_name, prim_name)


def check_non_positive_float(arg_value, arg_name=None, prim_name=None):
    return check_float(arg_value, 0, LE, arg_name, prim_name)


def check_non_negative_float(arg_value, arg_name=None, prim_name=None):
    return check_float(arg_value, 0, GE, arg_name, prim_name)


def _check_sequence(sequence, check_one, arg_name, prim_name):
    if not isinstance(sequence, (tuple, list)):
        raise TypeError(f"{_who(arg_name, prim_name)} must be a tuple or list, but got "
                        f"'{type(sequence).__name__}'.")
    for i, v in enumerate(sequence):
        check_one(v, f"{arg_name or 'input'}[{i}]", prim_name)
    return sequence


def check_positive_int_sequence(sequence, arg_name=None, prim_name=None):
    return _check_sequence(sequence, check_positive_int, arg_name, prim_name)


def check_non_negative_int_sequence(sequence, arg_name=None, prim_name=None):
    return _check_sequence(sequence, check_non_negative_int, arg_name, prim_name)


def check_positive_float_sequence(sequence, arg_name=None, prim_name=None):
    return _check_sequence(sequence, check_positive_float, arg_name, prim_name)


def _check_in_range(arg_value, lower, upper, rel, kind, arg_name, prim_name):
    form, ok = _range(rel)
    if not ok(arg_value, lower, upper):
        raise ValueError(f"{_who(arg_name, prim_name)} must be in range of {form.format(lower, upper)}, "
                         f"but got {arg_value}.")
    return arg_value


def check_int_range(arg_value, lower_limit, upper_limit, rel, arg_name=None, prim_name=None):
    check_is_int(arg_value, arg_name, prim_name)
    return _check_in_range(arg_value, lower_limit, upper_limit, rel, int, arg_name, prim_name)


def check_float_range(arg_value, lower_limit, upper_limit, rel, arg_name=None, prim_name=None):
    if not (_is_float(arg_value) or _is_int(arg_value)):
        raise TypeError(f"{_who(arg_name, prim_name)} must be float, but got '{type(arg_value).__name__}'.")
    return _check_in_range(arg_value, lower_limit, upper_limit, rel, float, arg_name, prim_name)


def check_number_range(arg_value, lower_limit, upper_limit, rel, value_type, arg_name=None, prim_name=None):
    if isinstance(arg_value, bool) or not isinstance(arg_value, value_type):
        raise TypeError(f"{_who(arg_name, prim_name)} must be {getattr(value_type, '__name__', value_type)}, "
                        f"but got '{type(arg_value).__name__}'.")
    return _check_in_range(arg_value, lower_limit, upper_limit, rel, value_type, arg_name, prim_name)


def check_is_number(arg_value, arg_type, arg_name=None, prim_name=None):
    if isinstance(arg_value, bool) or not isinstance(arg_value, arg_type):
        raise TypeError(f"{_who(arg_name, prim_name)} must be {getattr(arg_type, '__name__', arg_type)}, "
                        f"but got '{type(arg_value).__name__}'.")
    return arg_value


def check_bool(arg_value, arg_name=None, prim_name=None):
    if not isinstance(arg_value, (bool, np.bool_)):
        raise TypeError(f"{_who(arg_name, prim_name)} must be bool, but got '{type(arg_value).__name__}'.")
    return bool(arg_value)


def check_string(arg_value, valid_values, arg_name=None, prim_name=None):
    if not isinstance(arg_value, str):
        raise TypeError(f"{_who(arg_name, prim_name)} must be str, but got '{type(arg_value).__name__}'.")
    if valid_values and arg_value not in valid_values:
        raise ValueError(f"{_who(arg_name, prim_name)} must be one of {list(valid_values)}, but got '{arg_value}'.")
    return arg_value


def check_isinstance(arg_name, arg_value, classes):
    if not isinstance(arg_value, classes):
        raise TypeError(f"The '{arg_name}' must be an instance of {classes}, but got '{type(arg_value).__name__}'.")
    return arg_value


def _type_names(types):
    types = types if isinstance(types, (tuple, list)) else (types,)
    return ", ".join(getattr(t, "__name__", str(t)) for t in types)


def check_value_type(arg_name, arg_value, valid_types, prim_name=None):
    """isinstance(arg_value, valid_types), with bool refused where int is asked (as MindSpore)."""
    valid = tuple(valid_types) if isinstance(valid_types, (tuple, list)) else (valid_types,)
    ok = isinstance(arg_value, valid)
    if ok and isinstance(arg_value, bool) and bool not in valid:
        ok = False
    if not ok:
        raise TypeError(f"{_who(arg_name, prim_name)} must be a type of [{_type_names(valid)}], but got "
                        f"'{type(arg_value).__name__}' ({arg_value!r}).")
    return arg_value


def _element_type(t):
    """The element dtype of a tensor type (MindSpore passes TensorType(float32) to infer_dtype)."""
    inner = getattr(t, "element_type", None)
    return inner() if callable(inner) else t


def check_type_name(arg_name, arg_type, valid_types, prim_name):
    valid = tuple(valid_types) if isinstance(valid_types, (tuple, list)) else (valid_types,)
    if _element_type(arg_type) not in valid:
        raise TypeError(f"{_who(arg_name, prim_name)} must be in [{_type_names(valid)}], but got {arg_type}.")
    return arg_type


def check_tensor_dtype_valid(arg_name, arg_type, valid_dtypes, prim_name):
    """A tensor's dtype among valid_dtypes."""
    return check_type_name(arg_name, arg_type, valid_dtypes, prim_name)


def check_subclass(arg_name, type_, template_types, prim_name, addition_error_info=None):
    """A dtype that is (a tensor of) one of template_types; mstype.tensor_type accepts any tensor."""
    templates = template_types if isinstance(template_types, (tuple, list)) else (template_types,)
    elem = _element_type(type_)
    if elem in templates or type_ in templates or any(t in (getattr(mstype, "tensor_type", None),
                                                           getattr(mstype, "tensor", None))
                                                      for t in templates if t is not None):
        return type_
    extra = f" {addition_error_info}" if addition_error_info else ""
    raise TypeError(f"{_who(arg_name, prim_name)} must be in [{_type_names(templates)}], but got {type_}.{extra}")


def check_types_same_and_valid(args, valid_values, prim_name):
    """Every dtype of the dict `args` (name -> dtype) among valid_values and all the same."""
    names = list(args)
    for name in names:
        check_type_name(name, args[name], valid_values, prim_name)
    first = _element_type(args[names[0]]) if names else None
    for name in names[1:]:
        if _element_type(args[name]) != first:
            raise TypeError(f"For '{prim_name}', the types of {names[0]} and {name} must be the same, but got "
                            f"{args[names[0]]} and {args[name]}.")


def check_tensors_dtypes_same_and_valid(args, valid_dtypes, prim_name):
    check_types_same_and_valid(args, valid_dtypes, prim_name)


def check_scalar_or_tensor_types_same(args, valid_values, prim_name, allow_mix=False):
    """The dtypes of `args` (name -> a dtype, tensor or scalar type) among valid_values and, unless
    allow_mix, the same."""
    seen = None
    for name, t in args.items():
        elem = _element_type(t)
        check_type_name(name, elem, valid_values, prim_name)
        if seen is not None and not allow_mix and elem != seen[1]:
            raise TypeError(f"For '{prim_name}', the types of {seen[0]} and {name} must be the same, but got "
                            f"{seen[1]} and {elem}.")
        seen = seen or (name, elem)
    return seen[1] if seen else None


def check_valid_input(arg_name, arg_value, prim_name):
    if arg_value is None:
        raise ValueError(f"{_who(arg_name, prim_name)} must not be None.")
    return arg_value


def check_axis_in_range(axis, ndim):
    """axis in [-ndim, ndim), returned as non-negative."""
    if not _is_int(axis):
        raise TypeError(f"The axes must be integers, but got {type(axis).__name__}.")
    if not -ndim <= axis < ndim:
        raise ValueError(f"The 'axis' must be in range of [{-ndim}, {ndim}), but got {axis}.")
    return axis % ndim if ndim else axis


def check_axis_valid(axes, ndim):
    """axes (None, an int or a sequence) as a sorted tuple of distinct non-negative axes."""
    if axes is None:
        return tuple(range(ndim))
    axes = (axes,) if _is_int(axes) else tuple(axes)
    out = tuple(check_axis_in_range(a, ndim) for a in axes)
    if len(set(out)) != len(out):
        raise ValueError(f"The axes {axes} contain duplicates.")
    return out


def is_number(value):
    return isinstance(value, numbers.Number) and not isinstance(value, bool)
