"""Messages of the checks a layer runs on its inputs before calling an op, so that an error names
what the user gave (the input) and what came from the layer (its weight) and says how to fix it.
The checks themselves are `if ...: raise` in construct, so graph mode folds them at compile time
and raises before it reaches the op; these helpers (in mycel.common, so graph mode runs them at
compile time on constants instead of parsing them) only write the words."""


def input_dtype_error(layer, x_dtype, weight_dtype, arg="x"):
    """The TypeError message for an input x whose dtype is not the layer's weight's."""
    name = getattr(weight_dtype, "name", str(weight_dtype))
    name = "bool_" if name == "bool" else name
    return (f"{layer}: the input {arg} you gave is {x_dtype}, but the layer's weight is {weight_dtype} "
            f"(from the layer's dtype argument); cast the input with x.astype(mycel.{name}), "
            f"or call .to_float(mycel.{name}) on the layer to have it cast its inputs")


def ids_dtype_error(layer, ids_dtype):
    """The TypeError message for lookup ids that are not integers (a float tensor of token ids)."""
    return (f"{layer}: the ids you gave are {ids_dtype}, but a lookup needs integer ids (int32 or "
            f"int64); cast them with ids.astype(mycel.int32)")
