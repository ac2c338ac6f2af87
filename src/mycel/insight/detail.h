// Internals of src/mycel/insight shared by its files: TFRecord framing and the encoders that
// turn one step's values into a serialized Event (run on the writer thread, never in a step).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "mycel/insight/insight.h"

namespace mycel::insight::detail {

/// Appends one TFRecord to out: uint64 length, masked CRC32C of those 8 bytes, the data, masked
/// CRC32C of the data (all little-endian). A reader stops cleanly at a torn last record.
void frame_record(const std::string& data, std::string& out);

/// The serialized first Event of every file (file_version "brain.Event:2").
std::string version_event(double wall_time);
/// The serialized Event holding one step's values.
std::string summary_event(int64_t step, double wall_time, const std::vector<SummaryValue>& values);

/// TensorBoard's DataType number of a dtype: bfloat16 as DT_BFLOAT16 when `exact` (a graph's
/// type attribute), else as DT_FLOAT, the type its data is written in.
int proto_dtype(DType t, bool exact = false);
/// The dtype of a DataType number; false for types Mycel has no tensor of (strings).
bool dtype_from_proto(int t, DType* out);

/// The elements of t as doubles, converted on the calling thread (no OpenMP team: the writer
/// thread must not start one beside the step's).
std::vector<double> to_doubles(const Tensor& t);

/// Equal-width buckets over [min, max] of the finite values, as numpy.histogram(x, bins=n):
/// bucket k holds edges[k] <= x < edges[k+1], the last one also x == max.
struct Histogram {
  double min = 0, max = 0, num = 0, sum = 0, sum_squares = 0;
  std::vector<double> edges;   // n + 1 edges, edges[0] == min, edges[n] == max
  std::vector<double> counts;  // n counts
};
Histogram histogram(const std::vector<double>& x, int bins);
inline constexpr int kHistogramBins = 30;

/// An NCHW batch laid out as one HWC uint8 image: a grid of ceil(sqrt(N)) columns, zero where no
/// image falls. Floats in [0, 1] scale by 255, other floats map [min, max] to [0, 255]; rounding
/// is to nearest even, as numpy.round.
struct Canvas {
  int height = 0, width = 0, channels = 0;
  std::vector<uint8_t> pixels;  // HWC
};
Canvas image_canvas(const Tensor& nchw);
/// PNG bytes of a canvas (libpng, no compression tuning: summaries favour speed).
std::string encode_png(const Canvas& c);

}  // namespace mycel::insight::detail
