// A weight gradient c = a^T b with a long K (a stored (K, M): dy of dW = dy^T x) on two threads,
// each running a one-thread oneDNN bf16 primitive on its share, by two splits: along K (float32
// partials summed and rounded once: what kernels/cpu/dnnl_matmul.cc does) and by blocks of the
// product's rows or columns over the whole K. Operands stay hot here, so the rows split wins
// (512x2048x128 0.88 -> 0.72 ms on Zen 4); inside the transformer's O2 step it lost, each thread
// there reading the K rows it wrote itself. Prints wall and per-thread CPU minima/medians. The CT
// rows time the transposed problem c^T = b^T a (they store c^T: a timing, not a usable layout).
//   g++ -O2 -fopenmp bench/bench_matmul_split.cc -o /tmp/bms -ldnnl && /tmp/bms 512 128 2048
#include <dnnl.hpp>
#include <omp.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cstring>
#include <time.h>
double cpu() { timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
using namespace dnnl;
using dt = memory::data_type;
engine eng(engine::kind::cpu, 0);
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
struct V { const char* name; memory::desc a, b, c; size_t astep, bstep, cstep; bool ksum; bool swap; matmul m; std::vector<double> ts, cs; };
int main(int argc, char** argv) {
  int M = atoi(argv[1]), N = atoi(argv[2]), K = atoi(argv[3]);
  int T = 2, Kp = K / T;
  std::vector<uint16_t> A(size_t(K) * M, 0x3f80), B(size_t(K) * N, 0x3f80);
  std::vector<float> P(size_t(T) * M * N);
  std::vector<uint16_t> C(size_t(M) * N);
  std::vector<V> vs;
  // split K
  vs.push_back({"splitK a=ba", memory::desc({M, Kp}, dt::bf16, {1, M}), memory::desc({Kp, N}, dt::bf16, {N, 1}), memory::desc({M, N}, dt::f32, {N, 1}), size_t(Kp) * M, size_t(Kp) * N, size_t(M)*N, true, false});
  vs.push_back({"splitK CT", memory::desc({N, Kp}, dt::bf16, {1, N}), memory::desc({Kp, M}, dt::bf16, {M, 1}), memory::desc({N, M}, dt::f32, {M, 1}), size_t(Kp) * N, size_t(Kp) * M, size_t(M)*N, true, true});
  vs.push_back({"splitM", memory::desc({M/2, K}, dt::bf16, {1, M}), memory::desc({K, N}, dt::bf16, {N, 1}), memory::desc({M/2, N}, dt::bf16, {N, 1}), size_t(M/2), 0, size_t(M/2)*N, false, false});
  vs.push_back({"splitN", memory::desc({M, K}, dt::bf16, {1, M}), memory::desc({K, N/2}, dt::bf16, {N, 1}), memory::desc({M, N/2}, dt::bf16, {N, 1}), 0, size_t(N/2), size_t(N/2), false, false});
  vs.push_back({"splitM CT(=splitN of C^T)", memory::desc({N, K}, dt::bf16, {1, N}), memory::desc({K, M/2}, dt::bf16, {M, 1}), memory::desc({N, M/2}, dt::bf16, {M, 1}), 0, size_t(M/2), size_t(M/2), false, true});
  omp_set_num_threads(1);
  for (auto& v : vs) { auto pd = matmul::primitive_desc(matmul::desc(v.a, v.b, v.c), eng); v.m = matmul(pd); }
  omp_set_num_threads(2);
  for (int r = 0; r < 400; ++r) for (auto& v : vs) {
    double t0 = now();
    double cmax = 0;
#pragma omp parallel num_threads(2) reduction(max:cmax)
    {
      int id = omp_get_thread_num();
      double c0 = cpu();
      stream s(eng);
      const uint16_t* X = v.swap ? B.data() : A.data();
      const uint16_t* Y = v.swap ? A.data() : B.data();
      void* pc = v.ksum ? (void*)(P.data() + id * v.cstep) : (void*)(C.data() + id * v.cstep);
      memory ma(v.a, eng, (void*)(X + id * v.astep)), mb(v.b, eng, (void*)(Y + id * v.bstep)), mc(v.c, eng, pc);
      v.m.execute(s, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}});
      s.wait();
      if (v.ksum) {
#pragma omp barrier
      size_t n = size_t(M) * N, i0 = n * id / 2, i1 = n * (id + 1) / 2;
      for (size_t i = i0; i < i1; ++i) { float x = P[i] + P[n + i]; uint32_t u; memcpy(&u, &x, 4); C[i] = (u + 0x7fff + ((u >> 16) & 1)) >> 16; }
      }
      cmax = cpu() - c0;
    }
    v.cs.push_back(cmax);
    v.ts.push_back(now() - t0);
  }
  for (auto& v : vs) { std::sort(v.ts.begin(), v.ts.end()); std::sort(v.cs.begin(), v.cs.end()); printf("cpu(max thread) min %7.1f med %7.1f | ", v.cs[0]*1e6, v.cs[v.cs.size()/2]*1e6); printf("M%d N%d K%d %-28s min %7.1f p20 %7.1f med %7.1f us  %.0f GFLOP/s(min)\n", M, N, K, v.name, v.ts[0]*1e6, v.ts[v.ts.size()/5]*1e6, v.ts[v.ts.size()/2]*1e6, 2.0*M*N*K/v.ts[0]/1e9); }
}
