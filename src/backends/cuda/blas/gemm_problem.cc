#include "backends/cuda/blas/gemm_problem.h"

#include "ops/common.h"

namespace streamrt::cuda {

Result<MatMulShape> matmul_shape(const ir::Node& node, const Dims& a, const Dims& b) {
  auto error = [&](const std::string& msg) { return node.error(StatusCode::kInvalidArgument, msg); };
  if (a.empty() || b.empty())
    return error("MatMul inputs must have rank >= 1, got " + dims_to_string(a) + " and " + dims_to_string(b));
  MatMulShape s;
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  s.m = a_vec ? 1 : a[a.size() - 2];
  s.k = a.back();
  const int64_t kb = b_vec ? b[0] : b[b.size() - 2];
  s.n = b_vec ? 1 : b.back();
  if (s.k != kb) return error("inner dimensions differ: A " + dims_to_string(a) + ", B " + dims_to_string(b));
  if (!a_vec) s.batch_a.assign(a.begin(), a.end() - 2);
  if (!b_vec) s.batch_b.assign(b.begin(), b.end() - 2);
  auto batch = ops::broadcast_dims(s.batch_a, s.batch_b);
  if (!batch.ok()) return error("batch dims: " + batch.status().message());
  s.batch = *batch;
  s.out = s.batch;
  if (!a_vec) s.out.push_back(s.m);
  if (!b_vec) s.out.push_back(s.n);
  return s;
}

MatMulGemm matmul_gemm(const MatMulShape& s, DataType dtype) {
  const int64_t nb = dims_numel(s.batch), na = dims_numel(s.batch_a), nbb = dims_numel(s.batch_b);
  MatMulGemm r;
  LtGemm& g = r.g;
  g.dtype = dtype;
  g.m = s.m, g.n = s.n, g.k = s.k;
  g.lda = s.k, g.ldb = s.n, g.ldd = s.n;
  if (nbb == 1) {
    g.m = nb * s.m;  // A's batch rows stack into one tall GEMM
  } else if (nbb == nb && (na == 1 || na == nb)) {
    // A batch numel equal to the broadcast's means the same dims (every dim is 1 or full).
    g.batch = nb;
    g.stride_a = na == 1 ? 0 : s.m * s.k;  // stride 0: A shared by every batch
    g.stride_b = s.k * s.n;
    g.stride_d = s.m * s.n;
  } else {
    r.per_matrix = true;  // irregular broadcast, e.g. A [2, 1, m, k] with B [3, k, n]
  }
  return r;
}

Result<GemmShape> gemm_shape(const ir::Node& node, const ops::GemmAttrs& at, const Dims& a, const Dims& b,
                             const Dims* c) {
  auto error = [&](const std::string& msg) { return node.error(StatusCode::kInvalidArgument, msg); };
  if (a.size() != 2 || b.size() != 2)
    return error("A and B must be 2-D, got " + dims_to_string(a) + " and " + dims_to_string(b));
  GemmShape s;
  s.m = a[at.trans_a ? 1 : 0];
  s.k = a[at.trans_a ? 0 : 1];
  const int64_t kb = b[at.trans_b ? 1 : 0];
  s.n = b[at.trans_b ? 0 : 1];
  if (s.k != kb) return error("inner dimensions differ: A " + dims_to_string(a) + ", B " + dims_to_string(b));
  s.has_c = c != nullptr && at.beta != 0.f;
  if (s.has_c) {
    bool ok = c->size() <= 2;
    for (size_t i = 0; ok && i < c->size(); ++i) ok = (*c)[i] == 1 || (*c)[i] == (i + 2 == c->size() ? s.m : s.n);
    if (!ok)
      return error("C of shape " + dims_to_string(*c) + " does not broadcast to " + dims_to_string({s.m, s.n}));
    s.cs = ops::broadcast_strides(*c, {s.m, s.n});
  }
  return s;
}

LtGemm gemm_gemm(const ops::GemmAttrs& at, const Dims& a, const Dims& b, const GemmShape& s, DataType dtype) {
  LtGemm g;
  g.dtype = dtype;
  g.trans_a = at.trans_a;
  g.trans_b = at.trans_b;
  g.m = s.m, g.n = s.n, g.k = s.k;
  g.lda = a[1], g.ldb = b[1], g.ldd = s.n;
  g.alpha = at.alpha;
  return g;
}

bool gemm_bias_epilogue(const ops::GemmAttrs& at, const GemmShape& s) {
  const bool row_vector = (s.cs[0] == 0 || s.m == 1) && (s.cs[1] == 1 || s.n == 1);
  return s.has_c && row_vector && at.beta == 1.f;
}

}  // namespace streamrt::cuda
