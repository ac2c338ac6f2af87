// Checkpoint files: our ".ckpt" format (checksummed, 64-byte aligned) and safetensors.
// Writers are atomic (temporary file, fsync, rename); readers validate every field and raise
// ValueError naming the file and the problem, never trusting a length before checking it.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "mycel/core/tensor.h"
#include "mycel/io/cipher.h"

namespace mycel::io {

/// One entry of a checkpoint: a tensor and the name it is stored under.
struct NamedTensor {
  std::string name;
  Tensor tensor;
};

/// Writes tensors to `path` in the ".ckpt" format (see docs/checkpoints.md), atomically.
void save_ckpt(const std::string& path, const std::vector<NamedTensor>& tensors);
/// Reads a ".ckpt" file, in file order; throws ValueError for a corrupt or hostile file.
std::vector<NamedTensor> load_ckpt(const std::string& path);
/// The same, encrypted with `key` (MindSpore's enc_key/enc_mode; the envelope is in cipher.h).
void save_ckpt(const std::string& path, const std::vector<NamedTensor>& tensors,
               std::string_view key, CipherMode mode);
std::vector<NamedTensor> load_ckpt(const std::string& path, std::string_view key, CipherMode mode);

/// Tensors and the free-form string metadata of a safetensors file.
struct SafetensorsFile {
  std::vector<NamedTensor> tensors;
  std::map<std::string, std::string> metadata;
};

/// Writes tensors (and optional "__metadata__") in the safetensors format, atomically.
void save_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});
/// Reads a safetensors file, in data-offset order; throws ValueError when it is malformed.
SafetensorsFile load_safetensors(const std::string& path);

}  // namespace mycel::io
