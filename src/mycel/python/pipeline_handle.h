// The running dataset pipeline behind a Python mycel._mycel.data.engine.Pipeline object, for
// graph mode's sink loop (bind_graph.cc: CompiledGraph.run_sink); defined in
// bind_dataset_engine.cc.
#pragma once
#include <nanobind/nanobind.h>

#include "mycel/data/engine/engine.h"

namespace mycel::py {

/// The pipeline of `obj`; TypeError when obj is not a Pipeline, ValueError when it was stopped.
data::engine::Pipeline& pipeline_of(nanobind::handle obj);

}  // namespace mycel::py
