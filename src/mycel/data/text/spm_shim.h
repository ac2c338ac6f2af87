// The C interface of libmycel_spm, the small shared library that alone links SentencePiece.
// Debian's libsentencepiece carries its own copy of protobuf-lite (an older version) and exports
// its symbols, which collide with the system libprotobuf that the core links (a crash at load
// time). The core therefore never links SentencePiece: it dlopens this shim with its own symbol
// scope (sentencepiece.cc) and calls these functions. Buffers returned here are freed with
// mycel_spm_free; error messages come back in *err (also freed with mycel_spm_free).
#pragma once
#include <cstddef>
#include <cstdint>

extern "C" {
/// Trains a model on n sentences (or, when n is 0, on the files named in the options' "input")
/// with nkv trainer options; returns 0 and the serialized model in *out, or -1 and *err.
int mycel_spm_train(const char* const* sentences, const size_t* lengths, size_t n,
                    const char* const* keys, const char* const* values, size_t nkv, char** out,
                    size_t* out_len, char** err);
/// A processor for a serialized model (is_path 0) or a model file (is_path 1); null and *err on
/// failure.
void* mycel_spm_load(const char* data, size_t len, int is_path, char** err);
/// Encodes text: with ids, *out holds count int32 ids; else the pieces as count
/// (uint32 length, bytes) records. Returns 0, or -1 and *err.
int mycel_spm_encode(const void* processor, const char* text, size_t len, int ids, char** out,
                     size_t* out_len, size_t* count, char** err);
void mycel_spm_unload(void* processor);
void mycel_spm_free(void* p);
}
