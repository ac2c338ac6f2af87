#include "mycel/data/params.h"

#include <optional>

namespace mycel::data {

const ParamValue* Params::find(const std::string& k) const {
  auto it = values_.find(k);
  if (it == values_.end() || std::holds_alternative<std::monostate>(it->second)) return nullptr;
  return &it->second;
}

bool Params::has(const std::string& k) const { return find(k) != nullptr; }

namespace {
template <class T>
T get_typed(const Params& p, const ParamValue* v, const std::string& k,
            const std::optional<T>& dflt, const char* kind) {
  if (!v) {
    if (dflt) return *dflt;
    MYCEL_THROW(ValueError, "[", p.owner(), "] missing required argument '", k, "'");
  }
  if (auto* x = std::get_if<T>(v)) return *x;
  MYCEL_THROW(TypeError, "[", p.owner(), "] argument '", k, "' must be ", kind);
}
}  // namespace

bool Params::get_bool(const std::string& k, std::optional<bool> d) const {
  return get_typed<bool>(*this, find(k), k, d, "a bool");
}
int64_t Params::get_int(const std::string& k, std::optional<int64_t> d) const {
  const ParamValue* v = find(k);
  if (v && std::holds_alternative<bool>(*v))
    MYCEL_THROW(TypeError, "[", owner_, "] argument '", k, "' must be an int, got a bool");
  return get_typed<int64_t>(*this, v, k, d, "an int");
}
double Params::get_float(const std::string& k, std::optional<double> d) const {
  const ParamValue* v = find(k);
  if (v && std::holds_alternative<int64_t>(*v)) return static_cast<double>(std::get<int64_t>(*v));
  return get_typed<double>(*this, v, k, d, "a float");
}
std::string Params::get_str(const std::string& k, std::optional<std::string> d) const {
  return get_typed<std::string>(*this, find(k), k, d, "a str");
}
std::vector<int64_t> Params::get_ints(const std::string& k,
                                      std::optional<std::vector<int64_t>> d) const {
  const ParamValue* v = find(k);
  if (v && std::holds_alternative<int64_t>(*v)) return {std::get<int64_t>(*v)};
  return get_typed<std::vector<int64_t>>(*this, v, k, d, "a sequence of int");
}
std::vector<double> Params::get_floats(const std::string& k,
                                       std::optional<std::vector<double>> d) const {
  const ParamValue* v = find(k);
  if (v && std::holds_alternative<double>(*v)) return {std::get<double>(*v)};
  if (v && std::holds_alternative<int64_t>(*v)) return {double(std::get<int64_t>(*v))};
  if (v && std::holds_alternative<std::vector<int64_t>>(*v)) {
    auto& iv = std::get<std::vector<int64_t>>(*v);
    return std::vector<double>(iv.begin(), iv.end());
  }
  return get_typed<std::vector<double>>(*this, v, k, d, "a sequence of float");
}
std::vector<std::string> Params::get_strs(const std::string& k,
                                          std::optional<std::vector<std::string>> d) const {
  const ParamValue* v = find(k);
  if (v && std::holds_alternative<std::string>(*v)) return {std::get<std::string>(*v)};
  return get_typed<std::vector<std::string>>(*this, v, k, d, "a sequence of str");
}
DType Params::get_dtype(const std::string& k, std::optional<DType> d) const {
  return get_typed<DType>(*this, find(k), k, d, "a dtype");
}

}  // namespace mycel::data
