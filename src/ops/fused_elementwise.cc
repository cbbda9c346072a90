#include "ops/fused_elementwise.h"

#include "ops/common.h"

namespace streamrt::ops {
namespace fused {

std::optional<Opcode> opcode_of(const ir::Node& node) {
  const OpSchema* s = schema_of(node);
  if (!s || s->fused_opcode < 0 || s->fused_opcode >= kOpcodeCount) return std::nullopt;
  return static_cast<Opcode>(s->fused_opcode);
}

bool decode(const ir::Node& node, size_t num_inputs, Program* out, std::string* why) {
  auto prog = node.attr_ints("program");
  if (!prog.ok()) return *why = prog.status().message(), false;
  if (prog->empty() || prog->size() % 3 || prog->size() / 3 > static_cast<size_t>(kMaxInstructions) ||
      num_inputs == 0 || num_inputs > static_cast<size_t>(kMaxInputs))
    return *why = "program of " + std::to_string(prog->size()) + " ints for " + std::to_string(num_inputs) +
                  " inputs is malformed", false;
  *out = Program{};
  out->num_inputs = static_cast<int32_t>(num_inputs);
  out->size = static_cast<int32_t>(prog->size() / 3);
  for (int i = 0; i < out->size; ++i) {
    const int64_t op = (*prog)[3 * i], a = (*prog)[3 * i + 1], b = (*prog)[3 * i + 2];
    const int64_t regs = static_cast<int64_t>(num_inputs) + i;  // registers written so far
    if (op < 0 || op >= kOpcodeCount || a < 0 || a >= regs || (is_binary(static_cast<int32_t>(op)) && (b < 0 || b >= regs)))
      return *why = "instruction " + std::to_string(i) + " is invalid", false;
    out->op[i] = static_cast<int32_t>(op);
    out->a[i] = static_cast<int32_t>(a);
    out->b[i] = is_binary(static_cast<int32_t>(op)) ? static_cast<int32_t>(b) : 0;
  }
  return true;
}

}  // namespace fused

namespace {

Status infer(InferContext& ctx) {
  fused::Program p;
  std::string why;
  if (!fused::decode(ctx.node(), ctx.num_inputs(), &p, &why)) return ctx.error(why);
  std::vector<Dims> shapes;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    SRT_RETURN_IF_ERROR(require_input(ctx, i, kFloats));
    if (ctx.input_dtype(i) != ctx.input_dtype(0)) return ctx.error("inputs must share one float type");
    if (!ctx.input(i).has_shape) {
      ctx.set_output_unranked(0, ctx.input_dtype(0));
      return ok_status();
    }
    shapes.push_back(ctx.input_dims(i));
  }
  auto dims = broadcast_all(shapes);
  if (!dims.ok()) return ctx.error(dims.status().message());
  ctx.set_output(0, ctx.input_dtype(0), *dims);
  return ok_status();
}

template <typename T>
void run(const fused::Program& p, const KernelContext& ctx) {
  const TensorRef& y = ctx.output(0);
  const size_t n_in = ctx.num_inputs(), rank = y.dims.size();
  std::vector<std::vector<int64_t>> strides(n_in);
  for (size_t k = 0; k < n_in; ++k) strides[k] = broadcast_strides(ctx.input(k).dims, y.dims);
  std::vector<int64_t> idx(rank, 0), off(n_in, 0);
  float vals[fused::kMaxInputs];
  T* out = y.as<T>();
  for (int64_t i = 0, total = y.numel(); i < total; ++i) {
    for (size_t k = 0; k < n_in; ++k) vals[k] = static_cast<float>(load(ctx.input(k).as<const T>()[off[k]]));
    out[i] = store<T>(fused::evaluate(p, vals));
    for (size_t d = rank; d-- > 0;) {
      ++idx[d];
      for (size_t k = 0; k < n_in; ++k) off[k] += strides[k][d];
      if (idx[d] < y.dims[d]) break;
      for (size_t k = 0; k < n_in; ++k) off[k] -= strides[k][d] * y.dims[d];
      idx[d] = 0;
    }
  }
}

Status cpu(KernelContext& ctx) {
  fused::Program p;
  std::string why;
  if (!fused::decode(ctx.node(), ctx.num_inputs(), &p, &why)) return ctx.error(why);
  return dispatch<kFloats>(ctx.output(0).dtype, ctx.node().describe(), [&]<typename T>() {
    run<T>(p, ctx);
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_OP(FusedElementwise, {.op_type = "FusedElementwise", .infer = infer, .cpu = cpu,
                                        .cpu_dtypes = dtypes(kFloats)});

}  // namespace streamrt::ops
