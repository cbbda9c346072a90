// Builds an ONNX model into a plan and runs it on the CPU through the installed public API only;
// prints the output's rank and first value. Usage: consumer MODEL.onnx INPUT DIMS OUTPUT (DIMS: 2x784)
#include <cstdio>
#include <vector>

#include "streamrt/builder.h"
#include "streamrt/program.h"  // public headers include only public headers (streamrt/tensor.h)
#include "streamrt/runtime.h"

int main(int argc, char** argv) {
  if (argc != 5) return 2;
  const char *input = argv[2], *output = argv[4];
  auto dims = streamrt::parse_dims(argv[3]);
  if (!dims.ok()) return 2;
  streamrt::BuilderConfig config;
  config.device = streamrt::DeviceType::kCpu;
  config.shapes[input] = *dims;
  auto plan = streamrt::build_plan_from_onnx(argv[1], config);
  if (!plan.ok()) return std::fprintf(stderr, "%s\n", plan.status().to_string().c_str()), 1;
  streamrt::RuntimeOptions options;
  options.device = streamrt::DeviceType::kCpu;
  auto rt = streamrt::Runtime::create(options);
  if (!rt.ok()) return 1;
  auto engine = (*rt)->load_engine_bytes(std::move(*plan));
  if (!engine.ok()) return std::fprintf(stderr, "%s\n", engine.status().to_string().c_str()), 1;
  auto ctx = (*engine)->create_execution_context();
  if (!ctx.ok()) return 1;
  int64_t n = 1;
  for (int64_t d : *dims) n *= d;
  std::vector<float> x(static_cast<size_t>(n), 0.5f);
  if (!(*ctx)->set_input_shape(input, *dims).ok()) return 1;
  if (!(*ctx)->set_tensor_address(input, x.data(), x.size() * sizeof(float)).ok()) return 1;
  auto out_dims = (*ctx)->tensor_shape(output);
  if (!out_dims.ok()) return 1;
  int64_t m = 1;
  for (int64_t d : *out_dims) m *= d;
  std::vector<float> y(static_cast<size_t>(m));
  if (!(*ctx)->set_tensor_address(output, y.data(), y.size() * sizeof(float)).ok()) return 1;
  if (auto st = (*ctx)->execute(); !st.ok()) return std::fprintf(stderr, "%s\n", st.to_string().c_str()), 1;
  std::printf("output %s dims %zu first %g\n", output, out_dims->size(), static_cast<double>(y[0]));
  return 0;
}
