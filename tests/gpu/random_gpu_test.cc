// GPU tests of the random ops (ctest label `gpu`; every test skips, saying why, without a CUDA
// device): RandomUniform(Like), RandomNormal(Like), Bernoulli and Multinomial as one-node plans.
// Seeded: the CUDA output is the CPU's bit for bit (the determinism contract, ops/random_util.h),
// run after run, CUDA graph replays included. Unseeded: ranges, moments and frequencies of large
// samples drawn on the GPU, and every run (a replayed CUDA graph's too) draws new values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "../unit/conv_test_util.h"
#include "backends/cuda/cuda_kernel_registry.h"
#include "gpu_test_util.h"

namespace streamrt {
namespace {

using ir::Attribute;

class GpuRandom : public ::testing::Test {
 protected:
  void SetUp() override { SRT_REQUIRE_GPU(); }
};

// A one-node graph: `op` over input "x" (when `x` is set) writing "y".
struct OneNode {
  ir::Graph g;
  ir::Node node;
  std::map<std::string, Tensor> feeds;
};
OneNode one_node(const std::string& op, int opset, std::optional<Tensor> x, std::map<std::string, Attribute> attrs) {
  OneNode o;
  o.g.name = op;
  std::vector<ir::ValueId> ins;
  if (x) {
    ins.push_back(o.g.add_value("x", x->dtype(), x->dims(), true));
    o.g.inputs.push_back(ins.back());
    o.feeds["x"] = *x;
  }
  const ir::ValueId y = o.g.add_value("y");
  o.g.outputs = {y};
  o.node = testing::graph_node(op, ins, {y});
  o.node.opset = opset;
  o.node.attrs = std::move(attrs);
  o.g.nodes.push_back(o.node);
  return o;
}

// An engine and context on one device, run again and again.
class Runner {
 public:
  static Result<Runner> create(const OneNode& o, DeviceType device) {
    Runner r;
    r.device_ = device;
    SRT_ASSIGN_OR_RETURN(std::vector<uint8_t> plan, testing::build_graph_plan(o.g, device, true));
    SRT_ASSIGN_OR_RETURN(auto rt, Runtime::create({device}));
    SRT_ASSIGN_OR_RETURN(r.engine_, rt->load_engine_bytes(std::move(plan)));
    SRT_ASSIGN_OR_RETURN(r.ctx_, r.engine_->create_execution_context());
    for (const TensorDesc& io : r.engine_->io_tensors()) {
      if (io.is_input) {
        const Tensor& t = o.feeds.at(io.name);
        SRT_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::allocate(device, std::max<size_t>(t.nbytes(), 1)));
        SRT_RETURN_IF_ERROR(b.copy_from_host(t.data(), t.nbytes()));
        SRT_RETURN_IF_ERROR(r.ctx_->set_input_shape(io.name, t.dims()));
        SRT_RETURN_IF_ERROR(r.ctx_->set_tensor_address(io.name, b.data(), b.size()));
        r.keep_.push_back(std::move(b));
      } else {
        SRT_ASSIGN_OR_RETURN(r.out_, Tensor::allocate(io.dtype, io.dims));
        SRT_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::allocate(device, std::max<size_t>(r.out_.nbytes(), 1)));
        SRT_RETURN_IF_ERROR(r.ctx_->set_tensor_address(io.name, b.data(), b.size()));
        r.out_index_ = r.keep_.size();
        r.keep_.push_back(std::move(b));
      }
    }
    return r;
  }
  Status use_cuda_graph() { return ctx_->set_cuda_graph(true); }
  Result<Tensor> run() {
    SRT_RETURN_IF_ERROR(ctx_->execute());
    SRT_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(out_.dtype(), out_.dims()));
    SRT_RETURN_IF_ERROR(keep_.at(out_index_).copy_to_host(t.mutable_data(), t.nbytes()));
    return t;
  }

 private:
  DeviceType device_ = DeviceType::kCpu;
  std::shared_ptr<Engine> engine_;
  std::unique_ptr<ExecutionContext> ctx_;
  std::vector<DeviceBuffer> keep_;
  Tensor out_;
  size_t out_index_ = 0;
};

size_t differing_elements(const Tensor& a, const Tensor& b) {
  const size_t es = dtype_size(a.dtype());
  size_t bad = 0;
  for (size_t i = 0; i < a.nbytes() / es; ++i)
    bad += std::memcmp(static_cast<const char*>(a.data()) + i * es, static_cast<const char*>(b.data()) + i * es, es) != 0;
  return bad;
}

// The node must have a CUDA kernel for its type (not quietly run on the host).
void expect_cuda_kernel(const OneNode& o) {
  ASSERT_TRUE(ir::infer_shapes(const_cast<ir::Graph&>(o.g)).ok());
  const DataType main = o.feeds.empty() ? o.g.value(o.g.outputs[0]).dtype : o.feeds.begin()->second.dtype();
  std::string why;
  const bool like = o.node.op_type.find("Like") != std::string::npos;
  EXPECT_NE(cuda::cuda_kernel_for(o.node, like ? o.g.value(o.g.outputs[0]).dtype : main, &why), nullptr)
      << o.node.op_type << ": " << why;
}

// Seeded: CUDA equals the CPU bit for bit, at every run, eager and replayed as a CUDA graph.
void check_seeded(const OneNode& o) {
  SCOPED_TRACE(o.node.op_type);
  expect_cuda_kernel(o);
  auto cpu = Runner::create(o, DeviceType::kCpu);
  auto gpu = Runner::create(o, DeviceType::kCuda);
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  ASSERT_TRUE(gpu.ok()) << gpu.status().to_string();
  auto want = cpu->run();
  ASSERT_TRUE(want.ok()) << want.status().to_string();
  for (int pass = 0; pass < 4; ++pass) {
    if (pass == 2) {
      ASSERT_TRUE(gpu->use_cuda_graph().ok());
    }
    auto got = gpu->run();
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    ASSERT_EQ(got->dtype(), want->dtype());
    ASSERT_EQ(got->dims(), want->dims());
    EXPECT_EQ(differing_elements(*got, *want), 0u) << "run " << pass;
  }
}

std::map<std::string, Attribute> attrs(std::initializer_list<std::pair<const std::string, Attribute>> a) { return a; }
Attribute f(float v) { return Attribute::make_float(v); }
Attribute i(int64_t v) { return Attribute::make_int(v); }
Attribute shape(int64_t n) { return Attribute::make_ints({n}); }

Tensor probabilities(DataType t, int64_t n) {
  std::vector<double> p(n);
  for (int64_t k = 0; k < n; ++k) p[k] = static_cast<double>(k % 11) / 10;
  if (t == DataType::kFloat64) return Tensor::from_vector(t, {n}, p);
  if (t == DataType::kFloat32) return Tensor::from_vector(t, {n}, std::vector<float>(p.begin(), p.end()));
  std::vector<uint16_t> bits(p.size());
  for (size_t k = 0; k < p.size(); ++k) bits[k] = Half::from_float(static_cast<float>(p[k]));
  return Tensor::from_vector(DataType::kFloat16, {n}, bits);
}

TEST_F(GpuRandom, SeededFillsMatchTheCpuBitForBit) {
  const int64_t n = 300000;  // several blocks per SM, grid-stride loops included
  for (int dtype : {1, 10, 16, 11}) {
    check_seeded(one_node("RandomUniform", 22, std::nullopt,
                          attrs({{"shape", shape(n)}, {"low", f(-3.f)}, {"high", f(5.5f)}, {"dtype", i(dtype)}, {"seed", f(4.f)}})));
    check_seeded(one_node("RandomNormal", 22, std::nullopt,
                          attrs({{"shape", shape(n)}, {"mean", f(1.f)}, {"scale", f(3.f)}, {"dtype", i(dtype)}, {"seed", f(9.f)}})));
  }
  const Tensor like = testing::random_tensor(DataType::kFloat16, {37, 1001}, 3);
  check_seeded(one_node("RandomUniformLike", 1, like, attrs({{"seed", f(0.f)}})));
  check_seeded(one_node("RandomNormalLike", 1, like, attrs({{"seed", f(0.f)}, {"dtype", i(1)}})));
}

TEST_F(GpuRandom, SeededBernoulliAndMultinomialMatchTheCpu) {
  check_seeded(one_node("Bernoulli", 15, probabilities(DataType::kFloat64, 100003), attrs({{"seed", f(1.f)}})));
  check_seeded(one_node("Bernoulli", 15, probabilities(DataType::kFloat32, 100003), attrs({{"seed", f(1.f)}, {"dtype", i(9)}})));
  check_seeded(one_node("Bernoulli", 22, probabilities(DataType::kFloat16, 4097), attrs({{"seed", f(2.f)}, {"dtype", i(7)}})));
  const Tensor logits = testing::random_tensor(DataType::kFloat32, {64, 1000}, 5, 4.f);
  check_seeded(one_node("Multinomial", 7, logits, attrs({{"seed", f(3.f)}, {"sample_size", i(50)}})));
  check_seeded(one_node("Multinomial", 7, Tensor::from_vector(DataType::kFloat64, {64, 1000}, logits.to_double_vector().value()),
                        attrs({{"seed", f(3.f)}, {"sample_size", i(7)}, {"dtype", i(7)}})));
}

// Unseeded on the GPU: the sample's range and moments, and new values at each run, eager or
// replayed as a CUDA graph (the per-block device counter).
TEST_F(GpuRandom, UnseededDrawsAreFreshAndWellDistributed) {
  const int64_t n = 1 << 20;
  for (const char* op : {"RandomUniform", "RandomNormal"}) {
    SCOPED_TRACE(op);
    const bool uniform = std::string(op) == "RandomUniform";
    auto o = one_node(op, 1, std::nullopt, attrs({{"shape", shape(n)}}));
    expect_cuda_kernel(o);
    auto gpu = Runner::create(o, DeviceType::kCuda);
    ASSERT_TRUE(gpu.ok()) << gpu.status().to_string();
    std::vector<Tensor> runs;
    for (int pass = 0; pass < 4; ++pass) {
      if (pass == 2) {
      ASSERT_TRUE(gpu->use_cuda_graph().ok());
    }
      auto t = gpu->run();
      ASSERT_TRUE(t.ok()) << t.status().to_string();
      runs.push_back(std::move(t).value());
    }
    for (size_t a = 0; a < runs.size(); ++a)
      for (size_t b = a + 1; b < runs.size(); ++b)
        EXPECT_GT(differing_elements(runs[a], runs[b]), static_cast<size_t>(n) * 99 / 100) << a << " vs " << b;
    for (const Tensor& t : runs) {
      const float* v = t.data_as<float>();
      double mean = 0, sq = 0;
      float lo = INFINITY, hi = -INFINITY;
      for (int64_t k = 0; k < n; ++k) {
        mean += v[k];
        sq += double(v[k]) * v[k];
        lo = std::min(lo, v[k]);
        hi = std::max(hi, v[k]);
      }
      mean /= n;
      const double var = sq / n - mean * mean;
      if (uniform) {
        EXPECT_GE(lo, 0.f);
        EXPECT_LT(hi, 1.f);
        EXPECT_NEAR(mean, 0.5, 0.002);  // standard error 0.00028
        EXPECT_NEAR(var, 1.0 / 12, 0.001);
      } else {
        EXPECT_NEAR(mean, 0.0, 0.006);  // standard error 0.001
        EXPECT_NEAR(var, 1.0, 0.01);    // standard error 0.0014
        EXPECT_GT(hi, 4.f);             // tails reached (P(z > 4) n = 33 expected)
        EXPECT_LT(lo, -4.f);
      }
    }
  }
}

TEST_F(GpuRandom, UnseededBernoulliAndMultinomialFrequencies) {
  const int64_t n = 1 << 20;
  auto b = one_node("Bernoulli", 15, probabilities(DataType::kFloat32, n), {});
  auto gb = Runner::create(b, DeviceType::kCuda);
  ASSERT_TRUE(gb.ok()) << gb.status().to_string();
  auto y = gb->run();
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  std::vector<double> ones(11, 0), count(11, 0);
  for (int64_t k = 0; k < n; ++k) {
    const float v = y->data_as<float>()[k];
    ASSERT_TRUE(v == 0.f || v == 1.f) << k;
    ones[k % 11] += v;
    ++count[k % 11];
  }
  EXPECT_EQ(ones[0], 0);
  EXPECT_EQ(ones[10], count[10]);
  for (int c = 1; c < 10; ++c) EXPECT_NEAR(ones[c] / count[c], c / 10.0, 0.01) << c;  // standard error <= 0.0016

  // Class 1 has probability 0; the others 0.2, 0.3, 0.5.
  const float ninf = -INFINITY;
  const Tensor logits = Tensor::from_vector(DataType::kFloat32, {2, 4},
                                            std::vector<float>{std::log(0.2f), ninf, std::log(0.3f), std::log(0.5f),
                                                               0.f, ninf, 0.f, 0.f});
  auto m = one_node("Multinomial", 7, logits, attrs({{"sample_size", i(200000)}, {"dtype", i(7)}}));
  auto gm = Runner::create(m, DeviceType::kCuda);
  ASSERT_TRUE(gm.ok()) << gm.status().to_string();
  auto s = gm->run();
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const double want[2][4] = {{0.2, 0, 0.3, 0.5}, {1.0 / 3, 0, 1.0 / 3, 1.0 / 3}};
  for (int r = 0; r < 2; ++r) {
    std::vector<double> c(4, 0);
    for (int64_t k = 0; k < 200000; ++k) {
      const int64_t cls = s->data_as<int64_t>()[r * 200000 + k];
      ASSERT_TRUE(cls >= 0 && cls < 4) << cls;
      ++c[cls];
    }
    EXPECT_EQ(c[1], 0) << r;
    for (int k = 0; k < 4; ++k) EXPECT_NEAR(c[k] / 200000, want[r][k], 0.007) << r << " " << k;
  }
}

}  // namespace
}  // namespace streamrt
