// The C API over lite::Session: exceptions become return codes and messages.
#include "mycel/lite/c_api.h"

#include <cstring>
#include <exception>

#include "mycel/lite/session.h"

struct MycelLiteSession {
  mycel::lite::Session session;
  std::vector<mycel::Tensor> outputs;
};

namespace {
void set_err(char* err, size_t n, const char* msg) {
  if (err && n > 0) {
    std::strncpy(err, msg, n - 1);
    err[n - 1] = '\0';
  }
}
}  // namespace

extern "C" {

MycelLiteSession* mycel_lite_session_create(const char* model_path, int num_threads, char* err,
                                            size_t err_size) {
  try {
    if (!model_path) throw std::invalid_argument("mycel_lite_session_create: model_path is NULL");
    mycel::lite::SessionOptions o;
    o.num_threads = num_threads;
    return new MycelLiteSession{mycel::lite::Session::from_file(model_path, o), {}};
  } catch (const std::exception& e) {
    set_err(err, err_size, e.what());
    return nullptr;
  }
}

void mycel_lite_session_destroy(MycelLiteSession* s) { delete s; }

int mycel_lite_num_inputs(const MycelLiteSession* s) {
  return s ? static_cast<int>(s->session.graph().inputs.size()) : -1;
}
int mycel_lite_num_outputs(const MycelLiteSession* s) {
  return s ? static_cast<int>(s->session.graph().outputs.size()) : -1;
}

int mycel_lite_run_f32(MycelLiteSession* s, int num_inputs, const float* const* data,
                       const int64_t* const* shapes, const int* ranks, char* err, size_t err_size) {
  try {
    if (!s || num_inputs < 0 || (num_inputs > 0 && (!data || !shapes || !ranks)))
      throw std::invalid_argument("mycel_lite_run_f32: NULL session or input arrays");
    std::vector<mycel::Tensor> ins;
    for (int i = 0; i < num_inputs; ++i) {
      if (ranks[i] < 0 || ranks[i] > 16 || !data[i] || (ranks[i] > 0 && !shapes[i]))
        throw std::invalid_argument("mycel_lite_run_f32: input " + std::to_string(i) +
                                    " has a bad rank or NULL data");
      mycel::Shape shape(shapes[i], shapes[i] + ranks[i]);
      for (int64_t d : shape)
        if (d < 0)
          throw std::invalid_argument("mycel_lite_run_f32: negative dim in input " +
                                      std::to_string(i));
      mycel::Tensor t = mycel::Tensor::empty(shape, mycel::DType::float32);
      std::memcpy(t.data(), data[i], t.nbytes());
      ins.push_back(std::move(t));
    }
    s->outputs = s->session.run(ins);
    return 0;
  } catch (const std::exception& e) {
    set_err(err, err_size, e.what());
    return 1;
  }
}

int mycel_lite_output_f32(const MycelLiteSession* s, int i, const float** data,
                          const int64_t** shape, int* rank) {
  if (!s || i < 0 || i >= static_cast<int>(s->outputs.size()) ||
      s->outputs[i].dtype() != mycel::DType::float32)
    return 1;
  const mycel::Tensor& t = s->outputs[i];
  if (data) *data = t.data<float>();
  if (shape) *shape = t.shape().data();
  if (rank) *rank = static_cast<int>(t.ndim());
  return 0;
}

}  // extern "C"
