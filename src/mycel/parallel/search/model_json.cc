// Model descriptions in and simulation reports out, as JSON text (what the Python side and the
// simulation files use). Every name and number is checked with an error naming the op.
#include <map>
#include <nlohmann/json.hpp>

#include "mycel/core/error.h"
#include "mycel/parallel/search/op_model.h"

namespace mycel::parallel::search {
namespace {

using nlohmann::json;

void only_keys(const json& j, std::initializer_list<const char*> known, const std::string& where) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool ok = false;
    std::string list;
    for (const char* k : known)
      ok = ok || it.key() == k, list += (list.empty() ? "" : ", ") + std::string(k);
    MYCEL_CHECK(ok, ValueError, "[model] ", where, ": unknown key '", it.key(), "' (known: ", list,
                ")");
  }
}

OpTensor parse_tensor(const json& j, const OpSpec& op, const std::map<std::string, int>& dim_index,
                      const std::map<std::string, int>& op_index, const std::string& where) {
  MYCEL_CHECK(j.is_object() && j.contains("axes") && j["axes"].is_array(), ValueError, "[model] ",
              where, " must be an object with an 'axes' list, got ", j.dump());
  only_keys(j, {"axes", "from", "parameter"}, where);
  OpTensor t;
  for (const json& axis : j["axes"]) {
    std::vector<int> dims;
    for (const json& name : axis.is_array() ? axis : json::array({axis})) {
      MYCEL_CHECK(name.is_string() && dim_index.count(name.get<std::string>()), ValueError,
                  "[model] ", where, ": axis ", name.dump(), " is not a dim of op '", op.name, "'");
      dims.push_back(dim_index.at(name.get<std::string>()));
    }
    MYCEL_CHECK(!dims.empty(), ValueError, "[model] ", where, ": an axis names no dim");
    t.axes.push_back(std::move(dims));
  }
  if (j.contains("from") && !j["from"].is_null()) {
    MYCEL_CHECK(j["from"].is_string() && op_index.count(j["from"].get<std::string>()), ValueError,
                "[model] ", where, ": 'from' must name an earlier op, got ", j["from"].dump());
    t.producer = op_index.at(j["from"].get<std::string>());
  }
  if (j.contains("parameter")) {
    MYCEL_CHECK(j["parameter"].is_boolean(), ValueError, "[model] ", where,
                ": 'parameter' must be a bool");
    t.parameter = j["parameter"].get<bool>();
  }
  MYCEL_CHECK(!(t.parameter && t.producer >= 0), ValueError, "[model] ", where,
              ": a parameter cannot come from an op");
  return t;
}

}  // namespace

ModelSpec parse_model(const std::string& json_text) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::exception& e) {
    MYCEL_THROW(ValueError, "[model] not valid JSON: ", e.what());
  }
  MYCEL_CHECK(j.is_object() && j.contains("ops") && j["ops"].is_array(), ValueError,
              "[model] must be an object with an 'ops' list");
  only_keys(j, {"ops", "dtype_bytes", "optimizer_slots", "training", "name"}, "model");
  ModelSpec m;
  if (j.contains("dtype_bytes")) {
    MYCEL_CHECK(j["dtype_bytes"].is_number_integer() && j["dtype_bytes"].get<int>() >= 1,
                ValueError, "[model] dtype_bytes must be an integer >= 1, got ",
                j["dtype_bytes"].dump());
    m.dtype_bytes = j["dtype_bytes"].get<int>();
  }
  if (j.contains("optimizer_slots")) {
    MYCEL_CHECK(j["optimizer_slots"].is_number() && j["optimizer_slots"].get<double>() >= 0,
                ValueError, "[model] optimizer_slots must be a number >= 0, got ",
                j["optimizer_slots"].dump());
    m.optimizer_slots = j["optimizer_slots"].get<double>();
  }
  if (j.contains("training")) {
    MYCEL_CHECK(j["training"].is_boolean(), ValueError, "[model] training must be a bool");
    m.training = j["training"].get<bool>();
  }
  std::map<std::string, int> op_index;
  for (const json& jo : j["ops"]) {
    MYCEL_CHECK(jo.is_object() && jo.contains("name") && jo["name"].is_string(), ValueError,
                "[model] each op must be an object with a 'name', got ", jo.dump().substr(0, 200));
    OpSpec op;
    op.name = jo["name"].get<std::string>();
    const std::string where = "op '" + op.name + "'";
    only_keys(jo, {"name", "kind", "dims", "inputs", "output", "flops"}, where);
    MYCEL_CHECK(!op_index.count(op.name), ValueError, "[model] two ops are named '", op.name, "'");
    op.kind = jo.value("kind", std::string("op"));
    MYCEL_CHECK(jo.contains("dims") && jo["dims"].is_array() && jo.contains("output"), ValueError,
                "[model] ", where, " needs 'dims' (a list) and 'output'");
    std::map<std::string, int> dim_index;
    for (const json& jd : jo["dims"]) {
      MYCEL_CHECK(jd.is_object() && jd.contains("name") && jd["name"].is_string() &&
                      jd.contains("size") && jd["size"].is_number_integer() &&
                      jd["size"].get<int64_t>() >= 1,
                  ValueError, "[model] ", where,
                  ": a dim must be {\"name\": str, \"size\": int >= 1, "
                  "\"split\": bool, \"batch\": bool}, got ",
                  jd.dump());
      only_keys(jd, {"name", "size", "split", "batch"}, where + " dim");
      OpDim d{jd["name"].get<std::string>(), jd["size"].get<int64_t>(), jd.value("split", true),
              jd.value("batch", false)};
      MYCEL_CHECK(!dim_index.count(d.name), ValueError, "[model] ", where, ": dim '", d.name,
                  "' twice");
      dim_index[d.name] = static_cast<int>(op.dims.size());
      op.dims.push_back(d);
    }
    const json& ins = jo.value("inputs", json::array());
    for (size_t i = 0; i < ins.size(); ++i)
      op.inputs.push_back(
          parse_tensor(ins[i], op, dim_index, op_index, where + " input " + std::to_string(i)));
    op.output = parse_tensor(jo["output"].is_object() ? jo["output"] : json{{"axes", jo["output"]}},
                             op, dim_index, op_index, where + " output");
    if (jo.contains("flops")) {
      MYCEL_CHECK(jo["flops"].is_number() && jo["flops"].get<double>() >= 0, ValueError, "[model] ",
                  where, ": flops must be a number >= 0, got ", jo["flops"].dump());
      op.flops = jo["flops"].get<double>();
    }
    // The producer's output must be the tensor this input reads: same axis count and sizes.
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const OpTensor& in = op.inputs[i];
      if (in.producer < 0) continue;
      const OpSpec& p = m.ops[in.producer];
      std::vector<int64_t> a, b;
      for (const auto& ax : in.axes) {
        int64_t n = 1;
        for (int d : ax) n *= op.dims[d].size;
        a.push_back(n);
      }
      for (const auto& ax : p.output.axes) {
        int64_t n = 1;
        for (int d : ax) n *= p.dims[d].size;
        b.push_back(n);
      }
      MYCEL_CHECK(a == b, ShapeError, "[model] ", where, " input ", i, " reads op '", p.name,
                  "' whose output shape differs (", b.size(), " axes vs ", a.size(), ", or sizes)");
    }
    op_index[op.name] = static_cast<int>(m.ops.size());
    m.ops.push_back(std::move(op));
  }
  MYCEL_CHECK(!m.ops.empty(), ValueError, "[model] has no op");
  return m;
}

std::string report_to_json(const SimReport& r) {
  json ops = json::array();
  for (const OpReport& o : r.ops)
    ops.push_back({{"name", o.name},
                   {"kind", o.kind},
                   {"strategy", o.strategy},
                   {"compute_s", o.compute},
                   {"comm_s", o.comm},
                   {"redistribution_s", o.redistribution},
                   {"comm_bytes", o.comm_bytes},
                   {"memory_bytes", o.memory}});
  json elim = json::object();
  for (int i = 0; i < 6; ++i) elim[kEliminationNames[i]] = r.solution.eliminations[i];
  json j = {{"mode", r.mode},
            {"device_num", r.device_num},
            {"ops", ops},
            {"step_time_s", r.step_time},
            {"comm_bytes", r.comm_bytes},
            {"memory_bytes", r.memory},
            {"memory_limit_bytes", r.memory_limit},
            {"fits", r.fits},
            {"search_seconds", r.search_seconds},
            {"exact", r.solution.exact},
            {"memory_price", r.solution.lambda},
            {"eliminations", elim}};
  return j.dump();
}

}  // namespace mycel::parallel::search
