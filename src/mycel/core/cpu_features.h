// What the CPU we run on can do, read once at run time. The build targets x86-64-v3 (AVX2, FMA,
// F16C) so one binary runs on any such machine; kernels with a faster AVX-512 form compile that
// form for AVX-512 alone (a GCC target region) and take it only where this says the CPU has it.
#pragma once

namespace mycel {

/// True when the CPU has AVX-512 F/BW/DQ/VL and MYCEL_MAX_CPU_ISA does not cap us below it
/// (MYCEL_MAX_CPU_ISA=avx2 forces the AVX2 paths, as ONEDNN_MAX_CPU_ISA does for oneDNN).
bool cpu_has_avx512();

/// True when cpu_has_avx512() and the CPU has AVX512-BF16 (vdpbf16ps, vcvtne2ps2bf16): the bf16
/// kernels' own forms (matmul_bf16_atb, matmul_heads_bf16, flash attention, softmax's rounding).
bool cpu_has_avx512_bf16();

/// True on AMD Zen 4 (family 0x19 with AVX-512): it runs each 512-bit FMA as two 256-bit
/// halves, so AVX2 code reaches the same FLOP rate as AVX-512 code there, and some of our AVX2
/// kernels, measured against oneDNN's AVX-512 ones on it, are taken there too.
bool cpu_is_zen4();

/// True where Mycel's AVX-512 direct convolution kernels for few channels and narrow rows
/// (conv_direct.h, conv_batch_lanes.h: LeNet-sized layers and their gradients) replace oneDNN's:
/// every AVX-512 CPU unless MYCEL_CONV_DIRECT=0 (oneDNN's, for A/B; read once). First measured
/// on Zen 4; on an Ice Lake Xeon, one thread, LeNet5's conv1 weight gradient 0.71 -> 0.27 ms,
/// conv2's 0.53 -> 0.44, conv2's data gradient 1.00 -> 0.32 (bench/bench_lenet5_kernels.py).
bool cpu_prefers_direct_conv();

}  // namespace mycel

// Whether this compiler can build AVX-512 target regions inside a baseline translation unit.
#if (defined(__x86_64__) || defined(_M_X64)) && defined(__GNUC__) && !defined(__clang__)
#define MYCEL_AVX512_KERNELS 1
#else
#define MYCEL_AVX512_KERNELS 0
#endif
