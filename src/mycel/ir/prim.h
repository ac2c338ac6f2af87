// Graph primitives: the structural and control operations of the IR that are not tensor ops
// (those live in the op registry). Analysis, the optimizer, AD and the VM interpret them.
#pragma once

namespace mycel::ir {

enum class Prim {
  // Tuples and lists.
  kMakeTuple,     // make_tuple(a, b, ...) -> (a, b, ...)
  kMakeList,      // make_list(a, b, ...) -> [a, b, ...]
  kTupleGetItem,  // tuple_getitem(t, i) with i a constant int
  kTupleLen,      // tuple_len(t)
  kMakeDict,      // make_dict(keys_tuple, values_tuple)
  kDictGetItem,   // dict_getitem(d, key)
  kDictSetItem,   // dict_setitem(d, key, value) -> a new dict with key set (graph values are
                  // immutable)
  kDictKeys,      // dict_keys(d) -> tuple of the (constant) keys
  kDictValues,    // dict_values(d) -> tuple of the values
  kDictItems,     // dict_items(d) -> tuple of (key, value) pairs
  // Control.
  kSwitch,      // switch(cond, a, b) -> a if cond else b (cond: bool scalar or 0-d tensor)
  kPartial,     // partial(f, a, ...) -> a function: f with its first arguments bound
  kDepend,      // depend(value, effect) -> value, ordered after effect
  kUnpackCall,  // unpack_call(f, t1, t2, ...) -> f(*t1, *t2, ...) for tuples known at analysis
  // Python scalar arithmetic on compile-time or run-time ints/floats/bools.
  kScalarAdd,
  kScalarSub,
  kScalarMul,
  kScalarDiv,
  kScalarFloorDiv,
  kScalarMod,
  kScalarPow,
  kScalarNeg,
  kScalarEq,
  kScalarNe,
  kScalarLt,
  kScalarLe,
  kScalarGt,
  kScalarGe,
  kScalarNot,
  kScalarToTensor,  // scalar_to_tensor(s, dtype)
  kTensorToScalar,  // tensor_to_scalar(t): a 0-d tensor's value (bool for conditions)
  kIs,
  kIsNot,    // identity tests against None and constants
  kPrint,    // print(values...) as a graph op (side effect)
  kAssign,   // assign(weight, value) -> value: writes a Parameter (side effect, applied
             // after every read of it in the step: see backend schedule)
  kShape,    // shape(t) -> tuple of ints (constant unless dims are dynamic)
  kRank,     // rank(t)
  kDTypeOf,  // dtype(t)
  kRaise,    // raise(exception, effects...): raises a Python exception object or class
             // (at compile time when reached there, else when the Program runs); the
             // effects are ordered before it; never returns
};

/// Text name of a primitive as the printer writes it ("make_tuple", "switch", ...).
const char* prim_name(Prim p);
/// Number of inputs (-1: variadic).
int prim_arity(Prim p);

}  // namespace mycel::ir
