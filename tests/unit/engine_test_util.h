// Builds a CPU engine from an in-memory ONNX model (written to a temporary folder, built, loaded),
// for tests that run a small graph end to end.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>

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

}  // namespace streamrt::testing
