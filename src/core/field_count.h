// The number of fields of an aggregate (a struct without constructors or bases), counted at
// compile time by brace-initializing it from ever more values convertible to anything. For
// checks that a struct's fields are all handled somewhere (the engine-cache key hashes every
// BuilderConfig field: src/cache/key.cc). A nested aggregate counts as one field.
#pragma once

#include <cstddef>

namespace streamrt {

namespace field_count_detail {
struct AnyField {
  template <typename T>
  operator T() const;  // never defined: only used in unevaluated requires-expressions
};
}  // namespace field_count_detail

template <typename T, typename... Fields>
constexpr size_t field_count() {
  using field_count_detail::AnyField;
  if constexpr (requires { T{Fields{}..., AnyField{}}; }) return field_count<T, Fields..., AnyField>();
  else return sizeof...(Fields);
}

}  // namespace streamrt
