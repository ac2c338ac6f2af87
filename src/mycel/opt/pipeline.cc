// The pass pipeline: passes listed by name, re-run until nothing changes (bounded), the IR
// verified after each pass when asked and dumped to MYCEL_DUMP_IR=<dir> after each change.
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "mycel/ir/checker.h"
#include "mycel/ir/printer.h"
#include "mycel/opt/opt.h"

namespace mycel::opt {

using namespace ir;

bool OptOptions::default_verify() {
  const char* v = std::getenv("MYCEL_VERIFY_IR");
  if (v) return v[0] == '1';
#ifdef NDEBUG
  return false;
#else
  return true;
#endif
}

namespace {
struct Pass {
  const char* name;
  bool (*run)(FuncGraph*, const OptOptions&);
};

// Writes <dir>/<seq>_<name>.ir.
void dump(const std::string& dir, int seq, const char* name, const FuncGraph& g) {
  char prefix[16];
  std::snprintf(prefix, sizeof prefix, "%03d_", seq);
  std::ofstream f(dir + "/" + prefix + name + ".ir");
  PrintOptions po;
  po.locations = true;
  f << print(g, po);
}
}  // namespace

void optimize(FuncGraph* g, const OptOptions& opts) {
  static const Pass kPasses[] = {
      {"inline_calls", inline_calls},
      {"eliminate_closures", eliminate_closures},
      {"eliminate_tuples", eliminate_tuples},
      {"simplify_algebra", simplify_algebra},
      {"fold_constants", fold_constants},
      {"eliminate_common_subexpressions", eliminate_common_subexpressions},
      {"eliminate_dead_code", eliminate_dead_code},
  };
  std::string dir = opts.dump_dir;
  if (dir.empty())
    if (const char* e = std::getenv("MYCEL_DUMP_IR")) dir = e;
  int seq = 0;
  if (!dir.empty()) dump(dir, seq++, "input", *g);
  if (opts.verify) verify(*g, "the input of optimize");
  for (int round = 0; round < opts.max_rounds; ++round) {
    bool changed = false;
    for (const Pass& p : kPasses) {
      if (!p.run(g, opts)) continue;
      changed = true;
      if (opts.verify) verify(*g, p.name);
      if (!dir.empty()) dump(dir, seq++, p.name, *g);
    }
    if (!changed) break;
  }
}

}  // namespace mycel::opt
