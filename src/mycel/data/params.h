// Named, typed parameters for dataset sources and transforms (built from Python keyword arguments).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "mycel/core/dtype.h"
#include "mycel/core/error.h"

namespace mycel::data {

using ParamValue =
    std::variant<std::monostate, bool, int64_t, double, std::string, std::vector<int64_t>,
                 std::vector<double>, std::vector<std::string>, DType>;

/// Parameters of one source or transform; getters throw ValueError/TypeError naming `owner`.
class Params {
 public:
  Params() = default;
  Params(std::string owner, std::map<std::string, ParamValue> values)
      : owner_(std::move(owner)), values_(std::move(values)) {}

  const std::string& owner() const { return owner_; }
  bool has(const std::string& k) const;  // present and not None
  bool get_bool(const std::string& k, std::optional<bool> dflt = std::nullopt) const;
  int64_t get_int(const std::string& k, std::optional<int64_t> dflt = std::nullopt) const;
  double get_float(const std::string& k, std::optional<double> dflt = std::nullopt) const;
  std::string get_str(const std::string& k, std::optional<std::string> dflt = std::nullopt) const;
  std::vector<int64_t> get_ints(const std::string& k,
                                std::optional<std::vector<int64_t>> dflt = std::nullopt) const;
  std::vector<double> get_floats(const std::string& k,
                                 std::optional<std::vector<double>> dflt = std::nullopt) const;
  std::vector<std::string> get_strs(
      const std::string& k, std::optional<std::vector<std::string>> dflt = std::nullopt) const;
  DType get_dtype(const std::string& k, std::optional<DType> dflt = std::nullopt) const;
  const std::map<std::string, ParamValue>& values() const { return values_; }

 private:
  const ParamValue* find(const std::string& k) const;
  std::string owner_;
  std::map<std::string, ParamValue> values_;
};

}  // namespace mycel::data
