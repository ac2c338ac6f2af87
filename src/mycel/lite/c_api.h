/* C API of the Mycel lite runtime (libmycel_lite): load a MINDIR model, run it on float32
 * inputs, read the outputs. Every function that can fail returns NULL or non-zero and writes a
 * message into err (when err_size > 0). */
#ifndef MYCEL_LITE_C_API_H_
#define MYCEL_LITE_C_API_H_
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct MycelLiteSession MycelLiteSession;

/** Loads and verifies a model file; num_threads 0 = all cores. NULL on failure. */
MycelLiteSession* mycel_lite_session_create(const char* model_path, int num_threads, char* err,
                                            size_t err_size);
void mycel_lite_session_destroy(MycelLiteSession* s);
int mycel_lite_num_inputs(const MycelLiteSession* s);
int mycel_lite_num_outputs(const MycelLiteSession* s);
/** Runs on float32 inputs (shape and rank per input); 0 on success. */
int mycel_lite_run_f32(MycelLiteSession* s, int num_inputs, const float* const* data,
                       const int64_t* const* shapes, const int* ranks, char* err, size_t err_size);
/** Output i of the last run (float32): data, shape and rank, valid until the next run. 0 on
 * success. */
int mycel_lite_output_f32(const MycelLiteSession* s, int i, const float** data,
                          const int64_t** shape, int* rank);

#ifdef __cplusplus
}
#endif
#endif /* MYCEL_LITE_C_API_H_ */
