// conv_weight_reorder's loops against the oneDNN reorders they replace (kernels/cpu/dnnl_conv.cc),
// alternated A B A B on the same buffers, on 1 and 2 threads: the bf16 weights into the forward
// (AcdB32a2b/AcdB64a2b) and backward-data (ABcd8a16b2a) layouts, and the split weight gradient's
// tail (2 float32 partials in ABcd16b16a: added into the first then reordered, against one pass).
// Prints per-launch wall minima and the CPU time (all threads) at the minimum's median, in us.
//   g++ -O2 -fopenmp -std=c++20 -Isrc bench/bench_conv_weight_reorder.cc \
//     src/mycel/kernels/cpu/conv_weight_reorder.cc src/mycel/core/cpu_features.cc -ldnnl \
//     -o /tmp/bcwr && /tmp/bcwr [reps]
#include <omp.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "mycel/kernels/cpu/conv_weight_reorder.h"

using namespace dnnl;
using tag = memory::format_tag;
using mycel::cpu::WeightBlocking;

static double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
static double cpu_all() {  // the process's CPU time: every thread's
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

struct Stat {
  std::vector<double> wall, cpu;
  void add(double w, double c) { wall.push_back(w), cpu.push_back(c); }
  double min_wall() const { return *std::min_element(wall.begin(), wall.end()) * 1e6; }
  double med(std::vector<double> v) const {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2] * 1e6;
  }
};

static void ab(const char* name, int reps, const std::function<void()>& a,
               const std::function<void()>& b) {
  Stat sa, sb;
  for (int r = 0; r < reps; ++r)
    for (int k = 0; k < 2; ++k) {
      const double w0 = now(), c0 = cpu_all();
      (k == 0 ? a : b)();
      (k == 0 ? sa : sb).add(now() - w0, cpu_all() - c0);
    }
  std::printf("%-44s oneDNN min %7.0f med %7.0f cpu %7.0f | ours min %7.0f med %7.0f cpu %7.0f\n",
              name, sa.min_wall(), sa.med(sa.wall), sa.med(sa.cpu), sb.min_wall(),
              sb.med(sb.wall), sb.med(sb.cpu));
}

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 30;
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  struct Case {
    memory::dims dims;
    tag to;
    const char* name;
  };
  const Case fwd[] = {{{512, 512, 3, 3}, tag::AcdB32a2b, "512x512x3x3 -> AcdB32a2b"},
                      {{256, 256, 3, 3}, tag::AcdB32a2b, "256x256x3x3 -> AcdB32a2b"},
                      {{128, 128, 3, 3}, tag::AcdB64a2b, "128x128x3x3 -> AcdB64a2b"},
                      {{64, 64, 3, 3}, tag::AcdB64a2b, "64x64x3x3 -> AcdB64a2b"},
                      {{512, 256, 1, 1}, tag::AcdB48a2b, "512x256x1x1 -> AcdB48a2b (padded)"},
                      {{64, 3, 3, 3}, tag::AcdB64a2b, "64x3x3x3 -> AcdB64a2b (padded)"},
                      {{512, 512, 3, 3}, tag::ABcd8a16b2a, "512x512x3x3 -> ABcd8a16b2a"},
                      {{256, 256, 3, 3}, tag::ABcd8a16b2a, "256x256x3x3 -> ABcd8a16b2a"}};
  for (int threads = 1; threads <= 2; ++threads) {
    omp_set_num_threads(threads);
    std::printf("threads %d\n", threads);
    for (const Case& c : fwd) {
      memory::desc plain(c.dims, memory::data_type::bf16, tag::oihw);
      memory::desc blk(c.dims, memory::data_type::bf16, c.to);
      std::vector<uint16_t> src(plain.get_size() / 2, 0x3f80), dst(blk.get_size() / 2);
      memory ms(plain, eng, src.data()), md(blk, eng, dst.data());
      reorder r(ms, md);  // built for the current thread count, as the conv's cached reorder
      auto w = WeightBlocking::make(blk);
      ab(c.name, reps, [&] { r.execute(s, ms, md), s.wait(); },
         [&] { mycel::cpu::weights_to_blocked(*w, src.data(), dst.data(), threads); });
    }
    const Case tails[] = {{{512, 512, 3, 3}, tag::ABcd16b16a, "tail 2x 512x512x3x3 ABcd16b16a"},
                          {{256, 256, 3, 3}, tag::ABcd16b16a, "tail 2x 256x256x3x3 ABcd16b16a"},
                          {{64, 64, 3, 3}, tag::ABcd16b16a, "tail 2x 64x64x3x3 ABcd16b16a"},
                          {{64, 3, 3, 3}, tag::Acdb16a, "tail 2x 64x3x3x3 Acdb16a"}};
    if (!mycel::cpu::sum_blocked_to_bf16_available()) continue;
    for (const Case& c : tails) {
      memory::desc blk(c.dims, memory::data_type::f32, c.to);
      memory::desc plain(c.dims, memory::data_type::bf16, tag::oihw);
      const int64_t n = blk.get_size() / 4;
      std::vector<float> p0(n, 1.f), p1(n, 2.f);
      std::vector<uint16_t> dst(plain.get_size() / 2);
      memory ms(blk, eng, p0.data()), md(plain, eng, dst.data());
      reorder r(ms, md);
      const float* parts[2] = {p0.data(), p1.data()};
      auto w = WeightBlocking::make(blk);
      const int T = 2;
      ab(c.name, reps,
         [&] {  // dnnl_conv.cc's old tail: the adds into the first partial, then the reorder
           float* q[2] = {p0.data(), p1.data()};
#pragma omp parallel for num_threads(threads) schedule(static)
           for (int64_t k = 0; k < n; ++k)
             for (int j = 1; j < T; ++j) q[0][k] += q[j][k];
           r.execute(s, ms, md), s.wait();
         },
         [&] { mycel::cpu::sum_blocked_to_bf16(*w, parts, T, dst.data(), threads); });
    }
  }
}
