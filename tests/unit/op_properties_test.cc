// What the central code asks about an op lives in the op's registration (OpSchema): the registry
// is coherent (every op has a shape rule, a CPU kernel and its types; every CUDA kernel names a
// registered op and lists types; input lists name inputs the op has), and the properties that
// moved out of central lists (streaming operands, tables, views, TF32, dims-only inputs,
// fusable opcodes, output dtype attributes, cost rules) answer as those lists did. The CUDA
// engine's load-time choice of a host fallback for a type its kernel lacks is checked here too,
// without a GPU (tests/gpu/dtype_fallback_gpu_test.cc runs it).
#include <gtest/gtest.h>

#include <onnx/defs/schema.h>

#include <set>

#include "ops/fused_elementwise.h"
#include "ops/op.h"
#include "plan/view_steps.h"
#if STREAMRT_WITH_CUDA
#include "backends/cuda/cuda_kernel_registry.h"
#endif

namespace streamrt {
namespace {

using ops::OpRegistry;
using ops::OpSchema;

// Inputs streamrt adds to an ONNX op (the builder's fusions): MatMul's fused bias (ops/matmul.h).
const std::map<std::string, int> kExtraInputs = {{"MatMul", 1}};

// How many inputs `s` may have: ONNX's count for its op (at the newest version the linked ONNX
// knows, 1.12: opset 17) plus streamrt's additions; 16 for streamrt's own ops. Newer opsets
// added inputs (Pad's and the reductions' axes at 18), so shape_inputs are not held to it.
int max_inputs(const OpSchema& s) {
  const std::string domain = s.domain.empty() ? "" : s.domain;
  const auto* o = ONNX_NAMESPACE::OpSchemaRegistry::Schema(s.op_type, domain);
  if (!o) return 16;
  auto it = kExtraInputs.find(s.op_type);
  return o->max_input() + (it == kExtraInputs.end() ? 0 : it->second);
}

ir::Node node(const std::string& op, size_t inputs, size_t outputs = 1, const std::string& domain = "") {
  ir::Node n;
  n.op_type = op;
  n.domain = domain;
  n.opset = 17;
  for (size_t i = 0; i < inputs; ++i) n.inputs.push_back(static_cast<ir::ValueId>(i));
  for (size_t i = 0; i < outputs; ++i) n.outputs.push_back(static_cast<ir::ValueId>(inputs + i));
  return n;
}

TEST(OpProperties, EveryOpHasARuleACpuKernelAndItsTypes) {
  const auto& reg = OpRegistry::global();
  EXPECT_TRUE(reg.errors().empty()) << reg.errors().front();
  ASSERT_GT(reg.schemas().size(), 100u);
  for (const OpSchema& s : reg.schemas()) {
    SCOPED_TRACE(s.op_type);
    EXPECT_NE(s.infer, nullptr);
    EXPECT_NE(s.cpu, nullptr);
    EXPECT_NE(s.cpu_dtypes, 0u) << "no CPU types";
    EXPECT_EQ(s.cpu_dtypes & ~ops::kAnyDType, 0u) << "a type bit past the data types";
    EXPECT_GE(s.min_opset, 1);
  }
}

TEST(OpProperties, InputListsNameInputsTheOpHas) {
  for (const OpSchema& s : OpRegistry::global().schemas()) {
    SCOPED_TRACE(s.op_type);
    const int n = max_inputs(s);
    EXPECT_GE(s.dtype_input, -1);
    EXPECT_LT(s.dtype_input, n);
    for (const auto* list : {&s.streamable_inputs, &s.table_inputs, &s.dims_only_inputs})
      for (int k : *list) {
        EXPECT_GE(k, 0);
        EXPECT_LT(k, n) << "input " << k << " of an op with at most " << n;
      }
    for (int k : s.shape_inputs) EXPECT_TRUE(k >= 0 && k < 16) << "shape input " << k;
    // A table is read in place only when it streams; a weight only read for its dims never does.
    for (int k : s.table_inputs) EXPECT_TRUE(ops::lists_input(s.streamable_inputs, k)) << "table input " << k;
    for (int k : s.dims_only_inputs) EXPECT_FALSE(ops::lists_input(s.streamable_inputs, k)) << "input " << k;
    if (s.output_dtype_attr) {
      EXPECT_STRNE(s.output_dtype_attr, "");
    }
  }
}

TEST(OpProperties, EachFusedOpcodeBelongsToOneOp) {
  std::map<int, std::string> owner;
  for (const OpSchema& s : OpRegistry::global().schemas()) {
    if (s.fused_opcode < 0) continue;
    EXPECT_LT(s.fused_opcode, ops::fused::kOpcodeCount) << s.op_type;
    EXPECT_TRUE(owner.emplace(s.fused_opcode, s.op_type).second)
        << s.op_type << " and " << owner[s.fused_opcode] << " share opcode " << s.fused_opcode;
    // The fused kernel computes in float: the op must take the float family.
    EXPECT_TRUE(ops::has_dtype(s.cpu_dtypes, DataType::kFloat16)) << s.op_type;
  }
  EXPECT_EQ(owner.size(), static_cast<size_t>(ops::fused::kOpcodeCount)) << "an opcode no op registers";
  EXPECT_EQ(ops::fused::opcode_of(node("Add", 2)), ops::fused::kAdd);
  EXPECT_EQ(ops::fused::opcode_of(node("Relu", 1)), ops::fused::kRelu);
  EXPECT_EQ(ops::fused::opcode_of(node("Floor", 1)), std::nullopt);
  EXPECT_EQ(ops::fused::opcode_of(node("Add", 2, 1, "com.example")), std::nullopt);
}

// The lists the properties replaced, as they were (builder/streamable.cc, residency planner,
// plan/view_steps.h, builder/tactics.cc, cuda_engine.cc, builder/precision.cc).
TEST(OpProperties, MovedPropertiesAnswerAsTheCentralListsDid) {
  auto schema = [](const char* op) {
    const OpSchema* s = OpRegistry::global().find(op);
    EXPECT_NE(s, nullptr) << op;
    return s ? *s : OpSchema{};
  };
  std::set<std::string> streaming, tables, views, tf32, dims_only, dtype_attrs;
  for (const OpSchema& s : OpRegistry::global().schemas()) {
    if (!s.streamable_inputs.empty()) streaming.insert(s.op_type);
    if (!s.table_inputs.empty()) tables.insert(s.op_type);
    if (s.view) views.insert(s.op_type);
    if (s.tf32) tf32.insert(s.op_type);
    if (!s.dims_only_inputs.empty()) dims_only.insert(s.op_type);
    if (s.output_dtype_attr) dtype_attrs.insert(s.op_type + "." + s.output_dtype_attr);
  }
  // The central list, and WeightOnlyMatMul (issue 19) and MatMulGroup (issue 16) that came after it.
  EXPECT_EQ(streaming, (std::set<std::string>{"MatMul", "Gemm", "Conv", "ConvTranspose", "Gather", "WeightOnlyMatMul",
                                              "MatMulGroup"}));
  EXPECT_EQ(schema("MatMul").streamable_inputs, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(schema("Gemm").streamable_inputs, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(schema("Conv").streamable_inputs, (std::vector<int>{1, 2}));
  EXPECT_EQ(schema("ConvTranspose").streamable_inputs, (std::vector<int>{1, 2}));
  EXPECT_EQ(schema("Gather").streamable_inputs, (std::vector<int>{0}));
  EXPECT_EQ(schema("WeightOnlyMatMul").streamable_inputs, (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(schema("MatMulGroup").streamable_inputs, (std::vector<int>{1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(tables, (std::set<std::string>{"Gather"}));
  EXPECT_EQ(views, (std::set<std::string>{"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"}));
  EXPECT_EQ(tf32, (std::set<std::string>{"MatMul", "Gemm", "Conv", "MatMulGroup"}));
  EXPECT_EQ(dims_only, (std::set<std::string>{"Shape", "Size", "RandomUniformLike", "RandomNormalLike"}));
  EXPECT_EQ(dtype_attrs, (std::set<std::string>{"Cast.to", "EyeLike.dtype", "HannWindow.output_datatype",
                                                "HammingWindow.output_datatype", "BlackmanWindow.output_datatype",
                                                "MelWeightMatrix.output_datatype", "Bernoulli.dtype",
                                                "RandomUniform.dtype", "RandomUniformLike.dtype", "RandomNormal.dtype",
                                                "RandomNormalLike.dtype",
                                                "SequenceEmpty.dtype"}));  // SequenceEmpty came after the list

  EXPECT_TRUE(plan::is_view_step(node("Reshape", 2)));
  EXPECT_TRUE(plan::is_view_step(node("Identity", 1)));
  EXPECT_FALSE(plan::is_view_step(node("Relu", 1)));
  EXPECT_FALSE(plan::is_view_step(node("Reshape", 2, 1, "com.example"))) << "another domain's Reshape";
  EXPECT_FALSE(plan::is_view_step(node("Identity", 1, 2))) << "a view has one output";
}

double flops_of(const char* op, std::vector<Dims> in, const Dims& out, const ir::Node* attrs = nullptr) {
  const OpSchema* s = OpRegistry::global().find(op);
  if (!s || !s->flops) return -1;
  std::vector<const Dims*> ptrs;
  for (const Dims& d : in) ptrs.push_back(&d);
  return s->flops(attrs ? *attrs : node(op, in.size()), ptrs, out);
}

TEST(OpProperties, CostRulesCountTheOpsArithmetic) {
  EXPECT_DOUBLE_EQ(flops_of("MatMul", {{4, 2, 3}, {3, 5}}, {4, 2, 5}), 2.0 * 40 * 3);
  ir::Node gemm = node("Gemm", 2);
  gemm.attrs["transA"] = ir::Attribute::make_int(1);
  EXPECT_DOUBLE_EQ(flops_of("Gemm", {{7, 2}, {7, 5}}, {2, 5}, &gemm), 2.0 * 10 * 7) << "K is A's first dim under transA";
  EXPECT_DOUBLE_EQ(flops_of("Gemm", {{2, 7}, {7, 5}}, {2, 5}), 2.0 * 10 * 7);
  EXPECT_DOUBLE_EQ(flops_of("Conv", {{1, 4, 9, 9}, {8, 2, 3, 3}}, {1, 8, 7, 7}), 2.0 * 392 * 18);
  ir::Node att = node("Attention", 3);
  EXPECT_DOUBLE_EQ(flops_of("Attention", {{2, 4, 16, 8}, {2, 4, 32, 8}, {2, 4, 32, 8}}, {2, 4, 16, 8}, &att),
                   8.0 * 1024 * 32);
  att.attrs["causal"] = ir::Attribute::make_int(1);
  att.attrs["k_transposed"] = ir::Attribute::make_int(1);
  EXPECT_DOUBLE_EQ(flops_of("Attention", {{2, 4, 16, 8}, {2, 4, 8, 32}, {2, 4, 32, 8}}, {2, 4, 16, 8}, &att),
                   4.0 * 1024 * 32);
  EXPECT_EQ(flops_of("MatMul", {{-1, 3}, {3, 5}}, {-1, 5}), 2.0 * 5 * 3) << "unknown dims count as 1";
  EXPECT_EQ(flops_of("Relu", {{4}}, {4}), -1) << "element-wise ops have no cost rule: bytes bound";
}

TEST(OpProperties, MainDtypeIsTheTensorTheTypesDescribe) {
  const std::vector<DataType> types = {DataType::kBool, DataType::kFloat64, DataType::kInt64, DataType::kFloat16};
  auto dtype_of = [&](ir::ValueId v) { return types[static_cast<size_t>(v)]; };
  auto main = [&](const char* op, size_t inputs) {
    return ops::main_dtype(*OpRegistry::global().find(op), node(op, inputs), dtype_of);
  };
  EXPECT_EQ(main("Relu", 1), DataType::kBool) << "input 0";
  EXPECT_EQ(main("Where", 3), DataType::kFloat64) << "Where's X, not its condition";
  EXPECT_EQ(main("HannWindow", 1), DataType::kFloat64) << "a window's output, not its size";
  EXPECT_EQ(main("Constant", 0), DataType::kBool) << "no inputs: output 0";
}

TEST(OpProperties, DtypeMasks) {
  EXPECT_EQ(ops::dtypes(ops::kFloats),
            ops::dtype_mask({DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}));
  EXPECT_EQ(ops::dtype_mask_names(ops::dtypes(ops::kSignedInts)), "int8, int16, int32, int64");
  EXPECT_TRUE(ops::has_dtype(ops::kAnyDType, DataType::kUInt64));
  EXPECT_FALSE(ops::has_dtype(ops::kAnyDType, DataType::kUndefined));
  const OpSchema* gemm = OpRegistry::global().find("Gemm");
  ASSERT_NE(gemm, nullptr);
  EXPECT_FALSE(ops::has_dtype(gemm->cpu_dtypes, DataType::kInt16)) << "MatMul / Gemm refuse int16";
  EXPECT_TRUE(ops::has_dtype(gemm->cpu_dtypes, DataType::kInt32));
}

#if STREAMRT_WITH_CUDA

TEST(CudaKernelProperties, EveryKernelNamesARegisteredOpAndListsTypes) {
  const auto& reg = cuda::CudaKernelRegistry::global();
  EXPECT_TRUE(reg.errors().empty()) << reg.errors().front();
  ASSERT_GT(reg.entries().size(), 50u);
  for (const cuda::CudaKernelEntry& k : reg.entries()) {
    SCOPED_TRACE(k.op_type);
    const OpSchema* s = OpRegistry::global().find(k.op_type);
    ASSERT_NE(s, nullptr) << "a CUDA kernel for an op with no registration";
    EXPECT_NE(k.fn, nullptr);
    EXPECT_NE(k.dtypes & s->cpu_dtypes, 0u) << "takes none of the op's types";
    EXPECT_EQ(k.dtypes & ~ops::kAnyDType, 0u);
  }
}

// cuda_dispatch's rule, type by type (cuda_types.cuh): the new types only with kCudaWideTypes.
TEST(CudaKernelProperties, CudaDtypesFollowCudaDispatch) {
  using ops::dtype_mask;
  EXPECT_EQ(cuda::cuda_dtypes(ops::kFloats | ops::kSignedInts),
            ops::dtypes(ops::kFloats) | dtype_mask({DataType::kInt64, DataType::kInt32, DataType::kInt8}));
  EXPECT_EQ(cuda::cuda_dtypes(ops::kUnsigned | ops::kBools), dtype_mask({DataType::kUInt8, DataType::kBool}));
  EXPECT_EQ(cuda::cuda_dtypes(ops::kFloat64), 0u) << "float64 needs the wide opt-in";
  EXPECT_EQ(cuda::cuda_dtypes(ops::kAll | cuda::kCudaWideTypes), ops::kAnyDType);
}

// The CUDA engine's load-time choice (place_steps): a step runs its CUDA kernel only for a type
// the kernel lists; otherwise, as without a kernel, it is a host step from the start.
TEST(CudaKernelProperties, StepsOfTypesTheKernelLacksFallBackAtLoad) {
  std::string why;
  EXPECT_NE(cuda::cuda_kernel_for(node("Relu", 1), DataType::kFloat32, &why), nullptr);
  EXPECT_NE(cuda::cuda_kernel_for(node("Relu", 1), DataType::kInt8, &why), nullptr);
  EXPECT_EQ(cuda::cuda_kernel_for(node("Relu", 1), DataType::kFloat64, &why), nullptr);
  EXPECT_EQ(why, "the CUDA kernel does not take float64");
  EXPECT_EQ(cuda::cuda_kernel_for(node("Neg", 1), DataType::kInt16, &why), nullptr);
  EXPECT_EQ(cuda::cuda_kernel_for(node("Range", 3), DataType::kFloat16, &why), nullptr);
  EXPECT_NE(cuda::cuda_kernel_for(node("Range", 3), DataType::kInt64, &why), nullptr);
  EXPECT_NE(cuda::cuda_kernel_for(node("Cast", 1), DataType::kUInt64, &why), nullptr) << "Cast opts in to all";
  EXPECT_NE(cuda::cuda_kernel_for(node("Reshape", 2), DataType::kUInt16, &why), nullptr) << "moves bytes";
  EXPECT_EQ(cuda::cuda_kernel_for(node("NoSuchOp", 1), DataType::kFloat32, &why), nullptr);
  EXPECT_EQ(why, "no CUDA kernel");
  EXPECT_EQ(cuda::cuda_kernel_for(node("Relu", 1, 1, "com.example"), DataType::kFloat32, &why), nullptr);
  // Every op's CPU types split into the kernel's and the fallback's, never an error mid-run.
  for (const cuda::CudaKernelEntry& k : cuda::CudaKernelRegistry::global().entries())
    for (unsigned t = 1; t <= static_cast<unsigned>(kLastDataType); ++t) {
      const auto dt = static_cast<DataType>(t);
      const bool device = cuda::cuda_kernel_for(node(k.op_type, 1), dt, nullptr) != nullptr;
      EXPECT_EQ(device, ops::has_dtype(k.dtypes, dt)) << k.op_type << " " << dtype_name(dt);
    }
}

#endif  // STREAMRT_WITH_CUDA

}  // namespace
}  // namespace streamrt
