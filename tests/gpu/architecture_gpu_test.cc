// Which GPUs a build serves: the kernels of this build run on the GPU at hand (its architecture is
// in the build's list, or PTX of an older one is), and a plan built for another compute capability
// is refused at load with a message naming both.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <sstream>

#include "backends/cuda/kernel_image.h"
#include "gpu_test_util.h"
#include "onnx_model_util.h"
#include "plan/plan.h"
#include "streamrt/builder.h"

namespace streamrt {
namespace {

TEST(Architecture, BuiltListServesThisGpu) {
  SRT_REQUIRE_GPU();
  EXPECT_TRUE(cuda::check_kernel_image().ok());
  int major = 0, minor = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0), cudaSuccess);
  const int here = major * 10 + minor;
  // CMake's forms: "90", "90-real", "90-virtual"; SASS runs on its own major with a minor at least
  // as high, PTX on anything newer.
  bool served = false;
  std::stringstream list(cuda::built_architectures());
  for (std::string a; std::getline(list, a, ',');) {
    const int arch = std::stoi(a);
    const bool ptx = a.find("-real") == std::string::npos;
    const bool sass = a.find("-virtual") == std::string::npos;
    served |= (sass && arch / 10 == major && arch <= here) || (ptx && arch <= here);
  }
  EXPECT_TRUE(served) << "sm_" << here << " is not served by " << cuda::built_architectures();
}

TEST(Architecture, PlanOfAnotherComputeCapabilityIsRefused) {
  SRT_REQUIRE_GPU();
  testing::TempDir dir;
  testing::write_file(dir.file("m.onnx"), testing::serialize(testing::add_relu_model()));
  BuilderConfig config;
  config.device = DeviceType::kCuda;
  config.shapes = {{"x", {2, 3}}};
  auto bytes = build_plan_from_onnx(dir.file("m.onnx"), config);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  auto loaded = plan::read_plan_bytes(bytes->data(), bytes->size(), nullptr);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  plan::PlanData other = loaded->data;
  other.device.cc_major = 7, other.device.cc_minor = 5, other.device.name = "Tesla T4";
  auto other_bytes = plan::serialize_plan(other);
  ASSERT_TRUE(other_bytes.ok()) << other_bytes.status().to_string();

  auto rt = Runtime::create({DeviceType::kCuda});
  ASSERT_TRUE(rt.ok());
  auto engine = (*rt)->load_engine_bytes(*other_bytes);
  ASSERT_FALSE(engine.ok());
  EXPECT_EQ(engine.status().code(), StatusCode::kIncompatible);
  EXPECT_NE(engine.status().message().find("plan built for sm_75 (Tesla T4); this GPU is sm_"), std::string::npos)
      << engine.status().to_string();
  EXPECT_TRUE((*rt)->load_engine_bytes(*bytes).ok());  // the original still loads
}

}  // namespace
}  // namespace streamrt
