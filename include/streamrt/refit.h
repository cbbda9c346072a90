// Refit: new weight values for an engine without rebuilding it (TensorRT's IRefitter).
//
// A Refitter works on a loaded Engine (streaming or not) or on a plan file. Weights are set by
// name; each is checked when set (the name must be a weight of the plan, dtype and dims must
// match exactly) and refit() applies every staged weight at once: on any error nothing changes.
//
//   auto r = streamrt::Refitter::create(engine).value();       // no execution context alive
//   r->set_weights("fc1.weight", DataType::kFloat32, {256, 784}, data, bytes);
//   r->refit();
//
// Weight-stripped plans (BuilderConfig::strip_weights) hold no weight values: an engine loaded
// from one refuses to create execution contexts (kInvalidState) until every weight was supplied,
// by one refit() or several. Engine::weights_stripped() stays true until then and becomes false
// with the refit() that supplies the last missing weight.
//
// Weights that steps read as shapes (Reshape's shape, Slice's starts, ...) are part of the
// engine's structure: their values may be supplied to a stripped plan but not changed.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "streamrt/runtime.h"
#include "streamrt/status.h"
#include "streamrt/types.h"

namespace streamrt {

struct WeightDesc {
  std::string name;
  DataType dtype = DataType::kUndefined;
  Dims dims;
  bool present = false;  // has a value now (false for a stripped plan's weights until refitted)
  bool shape_input = false;  // read as a shape by some step: its value cannot change
};

class Refitter {
 public:
  ~Refitter();
  // A refitter for a loaded engine. refit() needs that no execution context of the engine exists
  // (kInvalidState otherwise, like a weight-streaming budget change).
  static Result<std::unique_ptr<Refitter>> create(std::shared_ptr<Engine> engine);
  // A refitter for a plan file (stripped or not); write_plan() saves the result.
  static Result<std::unique_ptr<Refitter>> open_plan(const std::string& plan_path);

  // Every weight of the plan, in plan order.
  std::vector<WeightDesc> weights() const;
  // Names of weights with no value that are not staged either (empty when refit() can complete
  // a stripped plan).
  std::vector<std::string> missing_weights() const;

  // Stages `bytes` (copied now) as the new value of weight `name`. A model weight that the plan
  // stores quantized (BuilderConfig::weight_quant) is no plan weight (weights() lists its packed
  // codes, scales and zero points instead), but it is accepted by its own name, dtype and dims and
  // quantized as the build did into every plan weight made from it. kNotFound for a name that is
  // neither; kInvalidArgument when dtype, dims or the byte count differ, or when a
  // shape weight's value would change. A failed call leaves what was staged before.
  Status set_weights(const std::string& name, DataType dtype, const Dims& dims, const void* data, size_t bytes);
  // Stages every weight from an ONNX model of the same architecture: the model is imported and
  // optimized as the plan was built (input shapes and profiles, precision and device taken from
  // the plan), its structure checked against the plan's (kInvalidArgument naming the first
  // difference, e.g. a weight the model lacks), and its weights taken by name.
  Status set_weights_from_onnx(const std::string& onnx_path);
  size_t num_staged() const;

  // Applies every staged weight at once and clears the staging. kInvalidState while execution
  // contexts exist (engines); on any failure the engine or plan is unchanged.
  Status refit();
  // Plan refitters: writes the plan with its weights to `path` (atomically). kInvalidState while
  // weights are missing or staged weights were not applied with refit().
  Status write_plan(const std::string& path);

  struct Impl;

 private:
  explicit Refitter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace streamrt
