// _mycel.OpFunction: the public functional form of a registry op (mycel.ops.matmul). It wraps the
// op's C++ entry point and forwards calls through vectorcall (a few ns, no Python frame), and has
// a __dict__ for the signature and help text python/mycel/ops/signature.py builds from the
// registry; __get__ makes it a routine for inspect/pydoc and keeps it unbound on a class.
// structmember.h (T_OBJECT_EX, ...) needs Python.h before it, whatever order a formatter picks.
#include <Python.h>
#include <structmember.h>

#include "mycel/frontend/py_convert.h"

namespace mycel::py {
namespace {

struct OpFunctionObject {
  PyObject_HEAD PyObject* func;  // the nanobind entry point
  PyObject* dict;
  vectorcallfunc vectorcall;
};

PyObject* op_function_call(PyObject* self, PyObject* const* args, size_t nargsf,
                           PyObject* kwnames) {
  return PyObject_Vectorcall(reinterpret_cast<OpFunctionObject*>(self)->func, args, nargsf,
                             kwnames);
}

PyObject* op_function_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject* func = nullptr;
  if (kwargs && PyDict_Size(kwargs) > 0) {
    PyErr_SetString(PyExc_TypeError, "OpFunction(func) takes no keyword arguments");
    return nullptr;
  }
  if (!PyArg_UnpackTuple(args, "OpFunction", 1, 1, &func)) return nullptr;
  if (!PyCallable_Check(func)) {
    PyErr_SetString(PyExc_TypeError, "OpFunction(func): func must be callable");
    return nullptr;
  }
  auto* self = reinterpret_cast<OpFunctionObject*>(type->tp_alloc(type, 0));
  if (!self) return nullptr;
  Py_INCREF(func);
  self->func = func;
  self->dict = nullptr;
  self->vectorcall = op_function_call;
  return reinterpret_cast<PyObject*>(self);
}

int op_function_traverse(PyObject* self, visitproc visit, void* arg) {
  auto* o = reinterpret_cast<OpFunctionObject*>(self);
  Py_VISIT(o->func);
  Py_VISIT(o->dict);
  Py_VISIT(Py_TYPE(self));
  return 0;
}

int op_function_clear(PyObject* self) {
  auto* o = reinterpret_cast<OpFunctionObject*>(self);
  Py_CLEAR(o->func);
  Py_CLEAR(o->dict);
  return 0;
}

void op_function_dealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  PyObject_GC_UnTrack(self);
  op_function_clear(self);
  type->tp_free(self);
  Py_DECREF(type);
}

// Like a builtin function: not turned into a method when stored on a class.
PyObject* op_function_get(PyObject* self, PyObject*, PyObject*) { return Py_NewRef(self); }

PyObject* op_function_repr(PyObject* self) {
  PyObject* name = PyObject_GetAttrString(self, "__name__");
  if (!name) {
    PyErr_Clear();
    return PyUnicode_FromString("<mycel.ops function>");
  }
  PyObject* r = PyUnicode_FromFormat("<mycel.ops.%U>", name);
  Py_DECREF(name);
  return r;
}

PyMemberDef op_function_members[] = {
    {"func", T_OBJECT_EX, offsetof(OpFunctionObject, func), READONLY, "the C++ entry point"},
    {"__dictoffset__", T_PYSSIZET, offsetof(OpFunctionObject, dict), READONLY, nullptr},
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(OpFunctionObject, vectorcall), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr}};

PyGetSetDef op_function_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyType_Slot op_function_slots[] = {
    {Py_tp_new, reinterpret_cast<void*>(op_function_new)},
    {Py_tp_dealloc, reinterpret_cast<void*>(op_function_dealloc)},
    {Py_tp_traverse, reinterpret_cast<void*>(op_function_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(op_function_clear)},
    {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
    {Py_tp_descr_get, reinterpret_cast<void*>(op_function_get)},
    {Py_tp_repr, reinterpret_cast<void*>(op_function_repr)},
    {Py_tp_members, op_function_members},
    {Py_tp_getset, op_function_getset},
    {Py_tp_doc, const_cast<char*>("A registry op in functional form (see mycel.ops).")},
    {0, nullptr}};

PyType_Spec op_function_spec = {
    "mycel._mycel.OpFunction", sizeof(OpFunctionObject), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL, op_function_slots};

}  // namespace

void init_op_function(nb::module_& m) {
  PyObject* type = PyType_FromSpec(&op_function_spec);
  if (!type) throw nb::python_error();
  m.attr("OpFunction") = nb::steal(type);
}

}  // namespace mycel::py
