// Builds a CPU engine from an in-memory ONNX model (written to a temporary folder, built, loaded),
// for tests that run a small graph end to end.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <memory>

#include "core/tensor.h"
#include "onnx_model_util.h"
#include "streamrt/builder.h"
#include "streamrt/runtime.h"

namespace streamrt::testing {

// nullptr (with a test failure naming the build error) when the model does not build or load.
inline std::shared_ptr<Engine> cpu_engine_from_model(const onnx::ModelProto& m, const BuilderConfig& config = {}) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("srt_engine_" + std::to_string(::getpid()) + "_" + std::to_string(reinterpret_cast<uintptr_t>(&m)));
  std::filesystem::create_directories(dir);
  write_file(dir / "model.onnx", serialize(m));
  auto plan = build_plan_from_onnx((dir / "model.onnx").string(), config);
  std::filesystem::remove_all(dir);
  EXPECT_TRUE(plan.ok()) << plan.status().to_string();
  if (!plan.ok()) return nullptr;
  auto engine = Runtime::create({DeviceType::kCpu}).value()->load_engine_bytes(std::move(plan).value());
  EXPECT_TRUE(engine.ok()) << engine.status().to_string();
  return engine.ok() ? std::move(engine).value() : nullptr;
}

// Runs a loaded engine on `inputs` (by name; tensor inputs only); outputs in the plan's order, each
// sized after the run (data-dependent dims included; 4096 bytes at most).
inline Result<std::vector<Tensor>> run_engine(const std::shared_ptr<Engine>& engine,
                                              const std::map<std::string, Tensor>& inputs) {
  SRT_ASSIGN_OR_RETURN(auto ctx, engine->create_execution_context());
  std::vector<std::pair<std::string, std::vector<uint8_t>>> outs;
  for (const TensorDesc& io : engine->io_tensors()) {
    if (io.is_input) {
      const Tensor& t = inputs.at(io.name);
      SRT_RETURN_IF_ERROR(ctx->set_input_shape(io.name, t.dims()));
      SRT_RETURN_IF_ERROR(ctx->set_tensor_address(io.name, const_cast<void*>(t.data()), t.nbytes()));
    } else {
      outs.emplace_back(io.name, std::vector<uint8_t>(4096));
      SRT_RETURN_IF_ERROR(ctx->set_tensor_address(io.name, outs.back().second.data(), 4096));
    }
  }
  SRT_RETURN_IF_ERROR(ctx->execute());
  std::vector<Tensor> result;
  for (const TensorDesc& io : engine->io_tensors()) {
    if (io.is_input) continue;
    SRT_ASSIGN_OR_RETURN(Dims d, ctx->tensor_shape(io.name));
    const auto& buf = outs[result.size()].second;
    SRT_ASSIGN_OR_RETURN(Tensor t, Tensor::from_bytes(io.dtype, d, buf.data(), dims_numel(d) * dtype_size(io.dtype)));
    result.push_back(std::move(t));
  }
  return result;
}

// Loads plan bytes on the CPU (read back through the verifier) and runs them (run_engine).
inline Result<std::vector<Tensor>> run_cpu_plan(const std::vector<uint8_t>& bytes,
                                                const std::map<std::string, Tensor>& inputs) {
  SRT_ASSIGN_OR_RETURN(auto rt, Runtime::create({DeviceType::kCpu}));
  SRT_ASSIGN_OR_RETURN(std::shared_ptr<Engine> engine, rt->load_engine_bytes(bytes));
  return run_engine(engine, inputs);
}

}  // namespace streamrt::testing
