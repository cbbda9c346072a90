// Det (opset 11): the determinant of each square matrix of a [*, M, M] float tensor, output [*].
// LU factorization with partial pivoting (the largest magnitude in the column, the first such
// row on ties, as the CUDA kernel picks), in double so that float32 inputs keep their precision
// through the M eliminations. The determinant of a 0x0 matrix is 1.
#include "ops/det.h"

#include <cmath>
#include <utility>
#include <vector>

#include "ops/common.h"
#include "ops/data_movement.h"

namespace streamrt::ops {

Result<Dims> det_output_dims(const ir::Node& node, const Dims& x) {
  const size_t r = x.size();
  if (r < 2) return node.error(StatusCode::kInvalidArgument, "input must have rank >= 2, got shape " + dims_to_string(x));
  if (x[r - 1] >= 0 && x[r - 2] >= 0 && x[r - 1] != x[r - 2])
    return node.error(StatusCode::kInvalidArgument,
                      "the last two dims must be equal (square matrices), got shape " + dims_to_string(x));
  return Dims(x.begin(), x.end() - 2);
}

namespace {

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kFloats));
  const TensorInfo& x = ctx.input(0);
  if (!x.has_shape) {
    ctx.set_output_unranked(0, x.dtype);
    return ok_status();
  }
  auto dims = det_output_dims(ctx.node(), x.dims);
  if (!dims.ok()) return ctx.error(dims.status().message());
  ctx.set_output(0, x.dtype, *dims);
  return ok_status();
}

// Determinant of the m x m row-major matrix `a`, destroyed in the process.
double lu_det(double* a, int64_t m) {
  double det = 1.0;
  for (int64_t k = 0; k < m; ++k) {
    int64_t p = k;
    for (int64_t i = k + 1; i < m; ++i)
      if (std::fabs(a[i * m + k]) > std::fabs(a[p * m + k])) p = i;
    const double pivot = a[p * m + k];
    if (pivot == 0.0) return 0.0;  // singular: the column has no non-zero below the diagonal
    if (p != k) {
      for (int64_t j = k; j < m; ++j) std::swap(a[k * m + j], a[p * m + j]);
      det = -det;
    }
    det *= pivot;
    for (int64_t i = k + 1; i < m; ++i) {
      const double f = a[i * m + k] / pivot;
      for (int64_t j = k + 1; j < m; ++j) a[i * m + j] -= f * a[k * m + j];
    }
  }
  return det;
}

Status cpu(KernelContext& ctx) {
  SRT_RETURN_IF_ERROR(require_bound(ctx, 1));
  const TensorRef& x = ctx.input(0);
  SRT_ASSIGN_OR_RETURN(Dims out, det_output_dims(ctx.node(), x.dims));
  SRT_RETURN_IF_ERROR(check_output(ctx, 0, x.dtype, out));
  const int64_t m = x.dims.back();
  const int64_t batch = dims_numel(out);
  return dispatch<kFloats>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    std::vector<double> a(static_cast<size_t>(m * m));
    const T* px = x.as<T>();
    T* py = ctx.output(0).as<T>();
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t i = 0; i < m * m; ++i) a[static_cast<size_t>(i)] = load(px[b * m * m + i]);
      py[b] = store<T>(static_cast<float>(lu_det(a.data(), m)));
    }
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_OP(Det, {.op_type = "Det", .min_opset = 11, .infer = infer, .cpu = cpu,
                           .cpu_dtypes = dtypes(kFloats)});

}  // namespace streamrt::ops
