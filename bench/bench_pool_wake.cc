// How long an OpenMP worker takes to join a parallel region after the calling thread was busy
// alone for a gap (Python between two training steps), with and without a SCHED_IDLE keeper
// thread spinning meanwhile (what src/mycel/core/cpu_keeper.cc does around graph runs). The
// worker sleeps once GOMP_SPINCOUNT runs out; without a keeper its CPU goes idle (a VM's vCPU
// halts) and must be woken first.
//
//   g++ -O2 -fopenmp bench/bench_pool_wake.cc -o /tmp/bench_pool_wake
//   for g in 60 300 2000; do for k in 0 1; do
//     GOMP_SPINCOUNT=1000 taskset -c 2,3 /tmp/bench_pool_wake $k $g; done; done
#include <immintrin.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

double now_us() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::atomic<bool> g_stop{false};

void keeper() {
  sched_param p{};
  pthread_setschedparam(pthread_self(), SCHED_IDLE, &p);
  while (!g_stop.load(std::memory_order_relaxed)) _mm_pause();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s KEEPER(0|1) GAP_US\n", argv[0]);
    return 2;
  }
  const bool keep = std::atoi(argv[1]) != 0;
  const double gap = std::atof(argv[2]);
  std::thread k;
  if (keep) k = std::thread(keeper);
  std::vector<double> waits;
  for (int it = 0; it < 400; ++it) {
    for (const double g0 = now_us(); now_us() - g0 < gap;) _mm_pause();  // the caller alone
    const double t0 = now_us();
    double arrived[2] = {t0, t0};
#pragma omp parallel num_threads(2)
    arrived[omp_get_thread_num()] = now_us();
    waits.push_back(arrived[1] - t0);
  }
  g_stop = true;
  if (keep) k.join();
  std::sort(waits.begin(), waits.end());
  std::printf("keeper=%d gap=%.0f us: the worker joins after min %.1f, p50 %.1f, p90 %.1f us\n",
              keep, gap, waits.front(), waits[waits.size() / 2], waits[waits.size() * 9 / 10]);
}
