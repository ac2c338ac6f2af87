// mycel_lite_benchmark: loads a MINDIR model with libmycel_lite and prints the load time, the
// latency percentiles of repeated runs on random input, and the process's peak memory.
//   mycel_lite_benchmark model.mindir [--shape 1,3,32,32] [--warmup 20] [--iters 200]
//                        [--threads N] [--no-optimize] [--profile] [--bf16] [--no-small]
//                        [--serial-work N] [--bf16-min-work N]
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

#include "mycel/lite/session.h"

namespace {
double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}
double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024.0;  // kilobytes on Linux
}
// This process's CPU time: on a shared machine a single-threaded run's CPU time per run is its
// cost without the time other processes held the core (wall latency counts that too).
double cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
double pct(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p / 100.0 * (v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help")) {
    std::fprintf(stderr,
                 "usage: %s model.mindir [--shape 1,3,32,32] [--warmup N] [--iters N] [--threads "
                 "N] [--no-optimize] [--profile] [--bf16] [--no-small] [--serial-work N] "
                 "[--bf16-min-work N]\n",
                 argv[0]);
    return 2;
  }
  std::string path = argv[1], shape_arg;
  int warmup = 20, iters = 200;
  mycel::lite::SessionOptions opts;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--shape")
      shape_arg = next();
    else if (a == "--warmup")
      warmup = std::stoi(next());
    else if (a == "--iters")
      iters = std::max(1, std::stoi(next()));
    else if (a == "--threads")
      opts.num_threads = std::stoi(next());
    else if (a == "--no-optimize")
      opts.optimize = false;
    else if (a == "--profile")
      opts.profile = true;
    else if (a == "--no-small")
      opts.small_kernels = false;
    else if (a == "--serial-work")  // nodes below this work run on one thread (0: none)
      opts.serial_work = std::stoll(next());
    else if (a == "--bf16-min-work")  // a bf16 model below this work stays float32 (0: never)
      opts.bf16_min_work = std::stoll(next());
    else if (a == "--bf16")
      opts.precision = mycel::lite::Precision::kBFloat16;
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  try {
    const double t0 = now_ms();
    mycel::lite::Session s = mycel::lite::Session::from_file(path, opts);
    const double load_ms = now_ms() - t0;
    std::vector<mycel::Tensor> inputs;
    std::mt19937 rng(0);
    std::normal_distribution<float> dist;
    for (size_t k = 0; k < s.graph().inputs.size(); ++k) {
      const auto& v = s.graph().values[s.graph().inputs[k]];
      mycel::Shape shape = v.shape;
      if (k == 0 && !shape_arg.empty()) {
        shape.clear();
        size_t p = 0;
        while (p <= shape_arg.size()) {
          size_t q = shape_arg.find(',', p);
          if (q == std::string::npos) q = shape_arg.size();
          shape.push_back(std::stoll(shape_arg.substr(p, q - p)));
          p = q + 1;
        }
      }
      for (auto& d : shape)
        if (d < 0) d = 1;  // dynamic dims: 1 (batch 1)
      mycel::Tensor t = mycel::Tensor::empty(shape, v.dtype);
      if (v.dtype == mycel::DType::float32)
        for (int64_t j = 0; j < t.numel(); ++j) t.data<float>()[j] = dist(rng);
      else
        std::memset(t.data(), 0, t.nbytes());
      inputs.push_back(t);
    }
    const double t1 = now_ms();
    s.run(inputs);
    const double first_ms = now_ms() - t1;
    s.reset_profile();  // the first run built the primitives
    for (int i = 0; i < warmup; ++i) s.run(inputs);
    std::vector<double> lat;
    const double c0 = cpu_ms();
    for (int i = 0; i < iters; ++i) {
      const double a = now_ms();
      s.run(inputs);
      lat.push_back(now_ms() - a);
    }
    const double cpu_per_run = (cpu_ms() - c0) / iters;
    const auto st = s.stats();
    double mean = 0;
    for (double x : lat) mean += x / lat.size();
    std::printf("model: %s\n", path.c_str());
    std::printf("nodes: %d (batch_norms folded %d, activations fused %d, constants folded %d)\n",
                st.num_nodes, st.optimized.batch_norms_folded, st.optimized.activations_fused,
                st.optimized.constants_folded);
    std::printf("precision: %s%s%s\n", st.precision.c_str(), st.precision_note.empty() ? "" : ": ",
                st.precision_note.c_str());
    std::printf("threads: %d (%d nodes on one thread)\n", st.plan_threads, st.num_serial);
    // How the pool's threads wait between parallel regions: libgomp reads this once, at load, and
    // at two threads it decides the latency (docs/edge.md, "Two threads").
    const char* policy = std::getenv("OMP_WAIT_POLICY");
    const char* spins = std::getenv("GOMP_SPINCOUNT");
    std::printf("omp_wait: OMP_WAIT_POLICY=%s GOMP_SPINCOUNT=%s%s\n", policy ? policy : "(unset)",
                spins ? spins : "(unset)",
                policy || spins ? "" : " (libgomp's default: spin ~300000 rounds, then sleep)");
    std::printf("load_ms: %.3f\nfirst_run_ms: %.3f\n", load_ms, first_ms);
    std::printf("latency_ms: p50 %.4f p90 %.4f p99 %.4f mean %.4f (%d runs)\n", pct(lat, 50),
                pct(lat, 90), pct(lat, 99), mean, iters);
    std::printf("cpu_ms_per_run: %.4f (all threads; with --threads 1 the run's own cost)\n",
                cpu_per_run);
    std::printf("arena_bytes: %zu\nweight_bytes: %zu\npeak_rss_mb: %.1f\n", st.arena_bytes,
                st.weight_bytes, peak_rss_mb());
    if (opts.profile) {  // runs after the first (timing adds ~50 ns per node)
      std::printf("profile (median us per run, node: op):\n");
      for (size_t k = 0; k < st.node_us.size(); ++k) {
        const auto& n = s.graph().nodes[k];
        const char* act = n.post_act == mycel::lite::NodeInfo::Act::kRelu    ? "+relu"
                          : n.post_act == mycel::lite::NodeInfo::Act::kRelu6 ? "+relu6"
                                                                             : "";
        std::printf("  %8.3f  %zu: %s%s  work %lld%s", st.node_us[k], k, n.op->name.c_str(), act,
                    static_cast<long long>(st.node_work[k]),
                    st.node_serial[k] ? " (1 thread)" : "");
        if (k < st.node_thread_us.size()) {  // each thread's CPU us in the node
          std::printf("  cpu");
          for (double us : st.node_thread_us[k]) std::printf(" %.1f", us);
        }
        std::printf("\n");
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
