#include "mycel/analysis/abstract_util.h"

#include <sstream>

#include "mycel/core/error.h"

namespace mycel::analysis::detail {

using namespace ir;

FuncGraph* FnAbs::graph() const {
  return callee()->kind() == ValueKind::kGraph ? static_cast<const GraphValue&>(*callee()).graph()
                                               : nullptr;
}

std::string FnUnion::repr() const {
  std::string s = "fn:{";
  for (size_t i = 0; i < fns_.size(); ++i) s += (i ? " | " : "") + fns_[i]->callee()->repr();
  return s + "}";
}

bool FnUnion::equals(const Abstract& o) const {
  auto* u = dynamic_cast<const FnUnion*>(&o);
  if (!u || u->fns_.size() != fns_.size()) return false;
  for (size_t i = 0; i < fns_.size(); ++i)
    if (key_of(fns_[i]) != key_of(u->fns_[i])) return false;
  return true;
}

std::string DictAbs::repr() const {
  std::string s = "{";
  for (size_t i = 0; i < keys_.size(); ++i)
    s += (i ? ", " : "") + keys_[i]->repr() + ": " + items()[i]->repr();
  return s + "}";
}

std::string RecordAbs::class_name() const {
  std::string r = cls_->repr();  // "py:<module>.<qualname>"
  size_t dot = r.rfind('.');
  return dot == std::string::npos ? (r.rfind("py:", 0) == 0 ? r.substr(3) : r) : r.substr(dot + 1);
}

int RecordAbs::field(const std::string& name) const {
  for (size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == name) return static_cast<int>(i);
  return -1;
}

size_t RecordAbs::item_of(size_t k) const {
  size_t pos = 0;
  for (size_t i = 0; i < k; ++i) pos += statics_[i] == nullptr;
  return pos;
}

bool RecordAbs::same_layout(const RecordAbs& o) const {
  if (!cls_->equals(*o.cls_) || names_ != o.names_) return false;
  for (size_t i = 0; i < statics_.size(); ++i) {
    if (!statics_[i] != !o.statics_[i]) return false;
    if (statics_[i] && !statics_[i]->equals(*o.statics_[i])) return false;
  }
  return true;
}

std::string RecordAbs::repr() const {
  std::string s = class_name() + "{";
  for (size_t i = 0; i < names_.size(); ++i)
    s += (i ? ", " : "") + names_[i] + ": " +
         (statics_[i] ? statics_[i]->repr() : items()[item_of(i)]->repr());
  return s + "}";
}

bool RecordAbs::equals(const Abstract& o) const {
  auto* r = dynamic_cast<const RecordAbs*>(&o);
  if (!r || !same_layout(*r) || r->items().size() != items().size()) return false;
  for (size_t i = 0; i < items().size(); ++i)
    if (!items()[i]->equals(*r->items()[i])) return false;
  return true;
}

bool OpaqueAbs::equals(const Abstract& o) const {
  auto* p = dynamic_cast<const OpaqueAbs*>(&o);
  return p && p->v_->equals(*v_);
}

AbstractPtr pending() {
  static AbstractPtr p = std::make_shared<PendingAbs>();
  return p;
}
bool is_pending(const AbstractPtr& a) { return a && dynamic_cast<const PendingAbs*>(a.get()); }
AbstractPtr raises() {
  static AbstractPtr r = std::make_shared<RaisesAbs>();
  return r;
}
bool is_raises(const AbstractPtr& a) { return a && dynamic_cast<const RaisesAbs*>(a.get()); }
bool has_pending(const AbstractPtr& a) {
  if (is_pending(a)) return true;
  if (auto* t = as_tuple(a))
    for (const auto& i : t->items())
      if (has_pending(i)) return true;
  return false;
}

AbstractPtr scalar_abs(ValueKind type, ValuePtr value) {
  return std::make_shared<AbstractScalar>(type, std::move(value));
}
const AbstractScalar* as_scalar(const AbstractPtr& a) {
  return a && a->kind() == AbstractKind::kScalar ? static_cast<const AbstractScalar*>(a.get())
                                                 : nullptr;
}
const AbstractTensor* as_tensor(const AbstractPtr& a) {
  return a && a->kind() == AbstractKind::kTensor ? static_cast<const AbstractTensor*>(a.get())
                                                 : nullptr;
}
const AbstractTuple* as_tuple(const AbstractPtr& a) {
  return a && a->kind() == AbstractKind::kTuple ? static_cast<const AbstractTuple*>(a.get())
                                                : nullptr;
}

bool GradFnAbs::equals(const Abstract& o) const {
  auto* g = dynamic_cast<const GradFnAbs*>(&o);
  return g && g->op_->equals(*op_) && g->fn_->equals(*fn_) && g->weights_->equals(*weights_);
}

AbstractPtr abstract_of_value(const ValuePtr& v) {
  switch (v->kind()) {
    case ValueKind::kNone:
      return std::make_shared<AbstractNone>();
    case ValueKind::kBool:
    case ValueKind::kInt:
    case ValueKind::kFloat:
    case ValueKind::kStr:
    case ValueKind::kDType:
      return scalar_abs(v->kind(), v);
    case ValueKind::kTensor: {
      const Tensor& t = static_cast<const TensorValue&>(*v).tensor();
      return std::make_shared<AbstractTensor>(t.shape(), t.dtype());
    }
    case ValueKind::kTuple:
    case ValueKind::kList: {
      std::vector<AbstractPtr> items;
      for (const auto& i : static_cast<const SequenceValue&>(*v).items())
        items.push_back(abstract_of_value(i));
      return std::make_shared<AbstractTuple>(std::move(items), v->kind() == ValueKind::kList);
    }
    case ValueKind::kDict: {
      std::vector<ValuePtr> keys;
      std::vector<AbstractPtr> vals;
      for (const auto& [k, x] : static_cast<const DictValue&>(*v).items()) {
        keys.push_back(k);
        vals.push_back(abstract_of_value(x));
      }
      return std::make_shared<DictAbs>(std::move(keys), std::move(vals));
    }
    case ValueKind::kOp:
    case ValueKind::kPrim:
    case ValueKind::kGradOp:
    case ValueKind::kVmapOp:
      return std::make_shared<FnAbs>(v, nullptr, nullptr);
    default:
      return std::make_shared<OpaqueAbs>(
          v);  // graphs are handled by the engine (they need a context)
  }
}

ValuePtr constant_of(const AbstractPtr& a) {
  if (!a) return nullptr;
  if (a->kind() == AbstractKind::kNone && !is_pending(a)) return none();
  if (auto* s = as_scalar(a)) return s->value();
  if (auto* t = as_tuple(a)) {
    if (dynamic_cast<const DictAbs*>(a.get()) || as_record(a)) return nullptr;
    std::vector<ValuePtr> items;
    for (const auto& i : t->items()) {
      ValuePtr v = constant_of(i);
      if (!v) return nullptr;
      items.push_back(std::move(v));
    }
    return t->is_list() ? list(std::move(items)) : tuple(std::move(items));
  }
  return nullptr;
}

namespace {
AbstractPtr merge(const AbstractPtr& a, const AbstractPtr& b, const SourceLoc& loc, bool widening) {
  if (is_pending(a)) return b;
  if (is_pending(b)) return a;
  if (a->kind() != b->kind()) return nullptr;
  if (auto* sa = as_scalar(a)) {
    auto* sb = as_scalar(b);
    if (sa->type() != sb->type()) return nullptr;
    if (!widening && a->equals(*b)) return a;
    if (sa->type() == ValueKind::kStr || sa->type() == ValueKind::kDType)
      return a->equals(*b) ? a : nullptr;  // strings and dtypes have no run-time form
    return scalar_abs(sa->type());
  }
  if (a->equals(*b)) return a;
  if (auto* ta = as_tensor(a)) {
    auto* tb = as_tensor(b);
    if (ta->dtype() != tb->dtype() || ta->shape().size() != tb->shape().size()) return nullptr;
    Shape s = ta->shape();
    for (size_t i = 0; i < s.size(); ++i)
      if (s[i] != tb->shape()[i]) s[i] = kDynamic;
    return std::make_shared<AbstractTensor>(s, ta->dtype());
  }
  if (auto* ua = as_tuple(a)) {
    auto* ub = as_tuple(b);
    if (ua->items().size() != ub->items().size() || ua->is_list() != ub->is_list()) return nullptr;
    auto* ra = as_record(a);
    auto* rb = as_record(b);
    if (!ra != !rb || (ra && !ra->same_layout(*rb))) return nullptr;  // one class, one layout
    std::vector<AbstractPtr> items;
    for (size_t i = 0; i < ua->items().size(); ++i) {
      AbstractPtr j = merge(ua->items()[i], ub->items()[i], loc, widening);
      if (!j) return nullptr;
      items.push_back(j);
    }
    if (auto* da = dynamic_cast<const DictAbs*>(a.get()))
      return std::make_shared<DictAbs>(da->keys(), items);
    if (ra) return ra->with_items(std::move(items));
    return std::make_shared<AbstractTuple>(std::move(items), ua->is_list());
  }
  if (a->kind() == AbstractKind::kFunction) {
    if (key_of(a) == key_of(b)) return a;
    std::vector<std::shared_ptr<const FnAbs>> fns;
    auto add = [&](const AbstractPtr& f) {
      if (auto* u = dynamic_cast<const FnUnion*>(f.get())) {
        for (const auto& x : u->fns()) fns.push_back(x);
        return true;
      }
      auto fa = std::dynamic_pointer_cast<const FnAbs>(f);
      if (!fa) return false;
      fns.push_back(fa);
      return true;
    };
    if (!add(a) || !add(b)) return nullptr;
    return std::make_shared<FnUnion>(std::move(fns), loc);
  }
  return nullptr;
}
}  // namespace

AbstractPtr join(const AbstractPtr& a, const AbstractPtr& b, const SourceLoc& loc) {
  return merge(a, b, loc, false);
}

AbstractPtr widen(const AbstractPtr& a, const AbstractPtr& b) {
  AbstractPtr w = merge(a, b, {}, true);
  return w ? w : b;  // unrelated signatures: nothing to widen, the call is not a loop
}

std::string key_of(const AbstractPtr& a) {
  if (!a) return "null";
  if (auto* f = dynamic_cast<const FnAbs*>(a.get())) {
    std::ostringstream os;
    os << "fn<" << f->callee()->repr() << "@" << static_cast<const void*>(f->graph()) << "/"
       << static_cast<const void*>(f->env());
    for (const auto& b : f->bound_args()) os << "," << key_of(b);
    os << ">";
    return os.str();
  }
  if (auto* g = dynamic_cast<const GradFnAbs*>(a.get()))
    return "gradfn<" + g->op().repr() + "," + key_of(g->fn()) + "," + key_of(g->weights()) + ">";
  if (auto* v = dynamic_cast<const VmapFnAbs*>(a.get()))
    return "vmapfn<" + v->op().repr() + "," + key_of(v->fn()) + ">";
  if (auto* u = dynamic_cast<const FnUnion*>(a.get())) {
    std::string s = "union<";
    for (const auto& f : u->fns()) s += key_of(f) + ";";
    return s + ">";
  }
  if (auto* r = as_record(a)) {  // the class and compile-time fields, then the run-time items
    std::string s = "record<" + r->cls()->repr();
    for (size_t i = 0; i < r->names().size(); ++i)
      s += "," + r->names()[i] + "=" + (r->statics()[i] ? r->statics()[i]->repr() : "");
    s += ">(";
    for (const auto& i : r->items()) s += key_of(i) + ",";
    return s + ")";
  }
  if (auto* t = as_tuple(a)) {
    std::string s = dynamic_cast<const DictAbs*>(a.get()) ? a->repr() + "{"
                    : t->is_list()                        ? "["
                                                          : "(";
    for (const auto& i : t->items()) s += key_of(i) + ",";
    return s + ")";
  }
  if (auto* s = as_scalar(a))
    return s->value() ? s->repr() + ":" + std::to_string(static_cast<int>(s->type())) : s->repr();
  return a->repr();
}

std::string where(const SourceLoc& loc) {
  if (!loc.known()) return "";
  std::string text = loc.text ? *loc.text : "";
  size_t b = text.find_first_not_of(" \t");
  text = b == std::string::npos ? "" : text.substr(b);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
    text.pop_back();
  return "\n" + (loc.file ? *loc.file : std::string("<string>")) + ":" + std::to_string(loc.line) +
         ": " + text;
}

std::string called_from(const SourceLoc& loc) {
  std::string w = where(loc);
  if (w.empty() || ir::is_control_flow_line(loc)) return "";
  return "\n  called from " + w.substr(1);
}

void rethrow_with(const std::string& suffix_in, const std::string& placeholder) {
  auto fix = [&](const char* what) {
    std::string m = what;
    if (!placeholder.empty())
      for (size_t p = m.find(placeholder); p != std::string::npos; p = m.find(placeholder, p + 1))
        m.replace(p, placeholder.size(), "?");
    return m;
  };
  const std::string suffix = suffix_in;
  try {
    throw;
  } catch (const ShapeError& e) {
    throw ShapeError(fix(e.what()) + suffix);
  } catch (const ValueError& e) {
    throw ValueError(fix(e.what()) + suffix);
  } catch (const TypeError& e) {
    throw TypeError(fix(e.what()) + suffix);
  } catch (const IndexError& e) {
    throw IndexError(fix(e.what()) + suffix);
  } catch (const NotSupported& e) {
    throw NotSupported(fix(e.what()) + suffix);
  } catch (const OutOfMemory& e) {
    throw OutOfMemory(fix(e.what()) + suffix);
  } catch (const std::exception& e) {
    throw RuntimeError(fix(e.what()) + suffix);
  }
}

}  // namespace mycel::analysis::detail

namespace mycel::analysis::detail {

namespace {
std::shared_ptr<Site> root_of(std::shared_ptr<Site> s) {
  while (s && s->merged_into) s = s->merged_into;
  return s;
}
}  // namespace

void merge_sites(const AbstractPtr& from, const AbstractPtr& into) {
  if (!from || !into || from == into) return;
  auto* f = dynamic_cast<const FnAbs*>(from.get());
  auto* t = dynamic_cast<const FnAbs*>(into.get());
  if (f && t) {
    std::shared_ptr<Site> a = root_of(f->site()), b = root_of(t->site());
    if (a && b && a != b && a->graph == b->graph) {
      for (ir::FuncGraph* g : a->specs) b->add(g);
      a->specs.clear();
      a->merged_into = b;
    }
    const auto& fb = f->bound_args();
    const auto& tb = t->bound_args();
    for (size_t i = 0; i < fb.size() && i < tb.size(); ++i) merge_sites(fb[i], tb[i]);
    return;
  }
  auto* fu = dynamic_cast<const FnUnion*>(from.get());
  auto* tu = dynamic_cast<const FnUnion*>(into.get());
  if (fu && tu) {
    for (size_t i = 0; i < fu->fns().size() && i < tu->fns().size(); ++i)
      merge_sites(fu->fns()[i], tu->fns()[i]);
    return;
  }
  auto* ft = as_tuple(from);
  auto* tt = as_tuple(into);
  if (ft && tt)
    for (size_t i = 0; i < ft->items().size() && i < tt->items().size(); ++i)
      merge_sites(ft->items()[i], tt->items()[i]);
}

}  // namespace mycel::analysis::detail
