#include "ops/partial_ints.h"

#include <limits>

namespace streamrt::ops {
namespace {

bool is_int_shape_type(DataType t) { return t == DataType::kInt64 || t == DataType::kInt32; }

bool fits(int64_t v, DataType dtype) {
  if (dtype == DataType::kInt64) return true;
  return dtype == DataType::kInt32 && v >= std::numeric_limits<int32_t>::min() &&
         v <= std::numeric_limits<int32_t>::max();
}

}  // namespace

std::optional<PartialInts> InferContext::input_partial(size_t i) const {
  if (!has_input(i) || !is_int_shape_type(inputs_[i].dtype)) return std::nullopt;
  if (const Tensor* v = inputs_[i].value) {
    if (v->numel() > static_cast<int64_t>(kMaxPartialInts)) return std::nullopt;
    auto vals = v->to_int64_vector();
    if (!vals.ok()) return std::nullopt;
    return PartialInts(vals->begin(), vals->end());
  }
  if (inputs_[i].partial) return *inputs_[i].partial;
  // Nothing known but the number of elements (a shape piece fed at run time): all unknown.
  const TensorInfo& t = inputs_[i];
  if (!t.has_shape || !dims_static(t.dims) || dims_numel(t.dims) > static_cast<int64_t>(kMaxPartialInts))
    return std::nullopt;
  return PartialInts(static_cast<size_t>(dims_numel(t.dims)));
}

PartialInts partial_of_dims(const Dims& dims) {
  PartialInts p;
  for (int64_t d : dims) p.push_back(d >= 0 ? std::optional<int64_t>(d) : std::nullopt);
  return p;
}

std::string partial_to_string(const PartialInts& p) {
  std::string s = "[";
  for (size_t k = 0; k < p.size(); ++k) s += (k ? "," : "") + (p[k] ? std::to_string(*p[k]) : std::string("?"));
  return s + "]";
}

bool fully_known(const PartialInts& p) {
  for (const auto& e : p)
    if (!e) return false;
  return true;
}

std::optional<Tensor> partial_to_tensor(const PartialInts& p, DataType dtype, const Dims& dims) {
  if (!is_int_shape_type(dtype) || !dims_static(dims) || dims_numel(dims) != static_cast<int64_t>(p.size()))
    return std::nullopt;
  auto t = Tensor::allocate(dtype, dims);
  if (!t.ok()) return std::nullopt;
  for (size_t k = 0; k < p.size(); ++k) {
    if (!p[k] || !fits(*p[k], dtype)) return std::nullopt;
    if (dtype == DataType::kInt64) t->mutable_data_as<int64_t>()[k] = *p[k];
    else t->mutable_data_as<int32_t>()[k] = static_cast<int32_t>(*p[k]);
  }
  return std::move(t).value();
}

void forward_partial(InferContext& ctx, DataType dtype, size_t in, size_t out) {
  if (ctx.input_value(in)) return;  // the whole value propagates: nothing partial to add
  auto p = ctx.input_partial(in);
  if (!p || !is_int_shape_type(dtype)) return;
  for (auto& e : *p)
    if (e && !fits(*e, dtype)) e.reset();
  ctx.set_output_partial(out, std::move(*p));
}

}  // namespace streamrt::ops
