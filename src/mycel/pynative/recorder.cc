// The PyNative recorder: eager ops -> one top-level graph plus a structural key (recorder.h).
#include "mycel/pynative/recorder.h"

#include <cstdio>

#include "mycel/analysis/analysis.h"
#include "mycel/core/error.h"

namespace mycel::pynative {

using namespace ir;

namespace {

thread_local Recorder* t_current = nullptr;

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// Attribute values in full precision (OpValue::repr rounds floats for printing).
std::string attr_key(const AttrValue& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, std::monostate>)
          return "N";
        else if constexpr (std::is_same_v<X, bool>)
          return x ? "T" : "F";
        else if constexpr (std::is_same_v<X, int64_t>)
          return std::to_string(x);
        else if constexpr (std::is_same_v<X, double>)
          return num(x);
        else if constexpr (std::is_same_v<X, std::string>)
          return "'" + x + "'";
        else if constexpr (std::is_same_v<X, DType>)
          return dtype_name(x);
        else {
          std::string s = "(";
          for (const auto& e : x) s += attr_key(AttrValue{e}) + ",";
          return s + ")";
        }
      },
      v);
}

std::string value_key(const Value& v) {
  switch (v.kind()) {
    case ValueKind::kFloat:
      return "f" + num(static_cast<const FloatValue&>(v).value());
    case ValueKind::kTuple:
    case ValueKind::kList: {
      std::string s = v.kind() == ValueKind::kTuple ? "(" : "[";
      for (const auto& i : static_cast<const SequenceValue&>(v).items()) s += value_key(*i) + ",";
      return s + ")";
    }
    default:
      return v.repr();  // ints, bools, None, strings, dtypes print exactly
  }
}

std::string tensor_key(const Tensor& t) {
  std::string s = dtype_name(t.dtype());
  s += "[";
  for (int64_t d : t.shape()) s += std::to_string(d) + ",";
  return s + "]";
}

}  // namespace

Recorder::Recorder(const std::string& name) {
  rec_.module = std::make_unique<Module>();
  rec_.graph = rec_.module->add_graph(name);
}

Recorder::~Recorder() { deactivate(); }

Recorder* Recorder::current() { return t_current; }

void Recorder::activate() {
  if (t_current && t_current != this)
    MYCEL_THROW(NotSupported,
                "[grad] a gradient taken inside a function being differentiated in PYNATIVE_MODE "
                "(nested recording) is not supported; differentiate the inner function in "
                "GRAPH_MODE instead");
  t_current = this;
  active_ = true;
}

void Recorder::deactivate() {
  if (active_ && t_current == this) t_current = nullptr;
  active_ = false;
}

Recorder::TensorKey Recorder::key_of(const Tensor& t) {
  return {t.storage().get(), t.offset(), t.shape(), static_cast<int>(t.dtype())};
}

void Recorder::bind(const Tensor& t, const NodePtr& n) {
  nodes_[key_of(t)] = {t, n};
  if (t.numel() > 0 && t.storage()) {  // the whole storage: views of any part of it alias t
    auto begin = reinterpret_cast<uintptr_t>(t.storage()->data());
    uintptr_t& end = recorded_memory_[begin];
    end = std::max(end, begin + t.storage()->nbytes());
  }
}

const std::string& Recorder::token(const NodePtr& n) {
  auto it = ids_.find(n.get());
  if (it == ids_.end())
    MYCEL_THROW(RuntimeError, "[grad] recorder: a node from another recording was used");
  return it->second;
}

void Recorder::add_argument(const Tensor& t, const std::string& name) {
  NodePtr p = rec_.graph->add_parameter(name);
  ids_[p.get()] = "a" + std::to_string(arguments_.size());
  arguments_.push_back(p);
  rec_.input_abstracts.push_back(std::make_shared<AbstractTensor>(t.shape(), t.dtype()));
  bind(t, p);
}

void Recorder::add_argument_value(AbstractPtr abs, const std::string& name) {
  NodePtr p = rec_.graph->add_parameter(name);
  ids_[p.get()] = "a" + std::to_string(arguments_.size());
  arguments_.push_back(p);
  rec_.input_abstracts.push_back(std::move(abs));
}

void Recorder::add_weight(const Tensor& t, const std::string& name) {
  NodePtr p = rec_.graph->add_parameter(name);
  as_parameter(p)->bind(t);
  ids_[p.get()] = "w" + std::to_string(weights_.size());
  weights_.push_back(p);
  // The compiled program captures the weight's storage, so the key holds its identity.
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p+%zu", t.storage().get(), t.offset());
  weight_keys_.push_back(std::string(buf) + tensor_key(t));
  bind(t, p);
}

NodePtr Recorder::capture_copy(const Tensor& t) {
  NodePtr p = rec_.graph->add_parameter("captured");
  ids_[p.get()] = "c" + std::to_string(captured_params_.size());
  captured_params_.push_back(p);
  rec_.captured.push_back(t);
  return p;
}

bool Recorder::aliases_recorded(const Tensor& t) const {
  auto begin = reinterpret_cast<uintptr_t>(t.data());
  uintptr_t end = begin + t.nbytes();
  auto it = recorded_memory_.upper_bound(begin);  // the first range starting after t's start
  if (it != recorded_memory_.end() && it->first < end) return true;
  return it != recorded_memory_.begin() && std::prev(it)->second > begin;
}

NodePtr Recorder::input(const RecordedArg& a) {
  if (a.value) return constant(a.value);
  if (!a.tensor.defined()) return constant(none());
  auto it = nodes_.find(key_of(a.tensor));
  if (it != nodes_.end()) return it->second.second;
  // Unknown, yet sharing memory with a recorded value: it was derived from that value outside
  // the recorded ops (a raw view), and capturing it as a constant would lose its gradient.
  if (a.tensor.numel() > 0 && aliases_recorded(a.tensor))
    MYCEL_THROW(
        RuntimeError, "[grad] a tensor of shape ", shape_str(a.tensor.shape()), " and dtype ",
        dtype_name(a.tensor.dtype()),
        " shares memory with a value computed in the function being "
        "differentiated but was not made by a recorded op, so its gradient would be lost; "
        "derive it with mycel ops (indexing, reshape, ops.*) rather than numpy or DLPack views");
  NodePtr p = capture_copy(a.tensor);
  nodes_[key_of(a.tensor)] = {a.tensor, p};
  return p;
}

NodePtr Recorder::constant(ValuePtr v) {
  NodePtr c = rec_.graph->constant(v);
  ids_[c.get()] = "k" + value_key(*v);
  return c;
}

NodePtr Recorder::add_apply(std::vector<NodePtr> inputs, const std::string& callee_key) {
  std::string k = callee_key + "(";
  for (size_t i = 1; i < inputs.size(); ++i) k += token(inputs[i]) + ",";
  NodePtr n = rec_.graph->apply(std::move(inputs));
  std::string id = "n" + std::to_string(ids_.size());
  body_key_ += id + "=" + k + ");";
  ids_[n.get()] = std::move(id);
  return n;
}

NodePtr Recorder::getitem(const NodePtr& n, int64_t i) {
  return add_apply({rec_.graph->constant(prim_value(Prim::kTupleGetItem)), n, constant(integer(i))},
                   "getitem");
}

NodePtr Recorder::make_tuple(std::vector<NodePtr> items) {
  items.insert(items.begin(), rec_.graph->constant(prim_value(Prim::kMakeTuple)));
  return add_apply(std::move(items), "tuple");
}

void Recorder::record_op(const OpDef& op, const Attrs& attrs,
                         const std::vector<RecordedArg>& inputs, std::vector<Tensor>& outputs) {
  const size_t n_in = op.inputs.size();
  const bool variadic = n_in > 0 && op.inputs.back().variadic;
  // Inputs an op updates in place (running statistics) are fed as copies: re-running the op in
  // the gradient program must not update them a second time.
  auto node_of = [&](size_t i) {
    for (int m : op.mutated_inputs)
      if (static_cast<size_t>(m) == i && inputs[i].tensor.defined())
        return capture_copy(inputs[i].tensor.clone());
    return input(inputs[i]);
  };
  std::vector<NodePtr> in{rec_.graph->constant(op_value(&op, attrs))};
  for (size_t i = 0; i < n_in && !variadic; ++i) in.push_back(node_of(i));
  if (variadic) {  // the parser's form: the variadic input is one make_tuple node
    for (size_t i = 0; i + 1 < n_in; ++i) in.push_back(node_of(i));
    std::vector<NodePtr> items;
    for (size_t i = n_in - 1; i < inputs.size(); ++i) items.push_back(node_of(i));
    in.push_back(make_tuple(std::move(items)));
  }
  std::string callee = op.name + "[";
  for (const AttrValue& v : attrs.values()) callee += attr_key(v) + ",";
  NodePtr n = add_apply(std::move(in), callee + "]");
  // Summaries already recorded their value eagerly; the gradient program must not again.
  if (op.effect && !op.record_only) effects_.push_back(n);
  for (Tensor& t : outputs)
    if (t.defined() && nodes_.count(key_of(t))) t = t.clone();
  if (outputs.size() == 1 && !op.tuple_output) {  // a tuple_output op's node is a tuple
    bind(outputs[0], n);
    return;
  }
  for (size_t k = 0; k < outputs.size(); ++k) bind(outputs[k], getitem(n, static_cast<int64_t>(k)));
}

NodePtr Recorder::record_call(FuncGraph* callee, std::vector<NodePtr> args,
                              std::shared_ptr<void> owner) {
  rec_.keep_alive.push_back(std::move(owner));
  char buf[32];
  std::snprintf(buf, sizeof buf, "@%p", static_cast<void*>(callee));
  args.insert(args.begin(), rec_.graph->constant(graph_value(callee)));
  return add_apply(std::move(args), buf);
}

Recording Recorder::finish(const NodePtr& output) {
  deactivate();
  NodePtr out = output;
  if (!effects_.empty())
    out = add_apply({rec_.graph->constant(prim_value(Prim::kDepend)), output, make_tuple(effects_)},
                    "depend");
  rec_.graph->set_output(out);
  // Parameter order: arguments, captured inputs, weights (non-weight parameters come first).
  std::vector<NodePtr> params = arguments_;
  params.insert(params.end(), captured_params_.begin(), captured_params_.end());
  rec_.num_arguments = arguments_.size();
  for (const NodePtr& c : captured_params_) {
    const Tensor& t = rec_.captured[rec_.input_abstracts.size() - rec_.num_arguments];
    rec_.input_abstracts.push_back(std::make_shared<AbstractTensor>(t.shape(), t.dtype()));
    (void)c;
  }
  for (const NodePtr& w : weights_) {
    rec_.weight_params.push_back(static_cast<int>(params.size()));
    params.push_back(w);
  }
  rec_.graph->set_parameters(std::move(params));
  std::string k = analysis::signature_key(rec_.input_abstracts) + "#";
  for (const std::string& w : weight_keys_) k += w + ";";
  rec_.key = k + "#" + body_key_ + "->" + token(output);
  nodes_.clear();
  recorded_memory_.clear();
  return std::move(rec_);
}

}  // namespace mycel::pynative
