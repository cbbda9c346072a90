// libFuzzer target that RUNS what the program loader accepts: every method of a program that
// passes read_program's checks (program_format.h) is loaded (its streamrt delegates load their
// plans, which the plan verifier checks) and executed on the CPU with zero-filled inputs and
// then small deterministic ones, and must neither crash nor trip a sanitizer. Each input is
// tried as given and resealed (container_fuzz_util.h). Work is capped: methods whose inputs,
// constants or any value of static dims hold more than kMaxBytes are not run.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "container_fuzz_util.h"
#include "program/program_format.h"
#include "streamrt/program.h"

namespace {

using namespace streamrt;

constexpr uint64_t kMaxBytes = 64ull << 20;

// A tensor for value `v` (dynamic dims as 1): zeros, or (pattern 1) bytes 0, 1, 2, ... mod 3 at
// the start of each element. Scalars and lists get their declared values.
Result<EValue> input_for(const program::ValueData& v, int pattern) {
  switch (v.tag) {
    case EValue::Tag::kTensor: {
      Dims dims = v.dims;
      for (int64_t& d : dims)
        if (d < 0) d = 1;
      const size_t esize = std::max<size_t>(1, dtype_size(v.dtype));
      SRT_ASSIGN_OR_RETURN(int64_t n, checked_numel(dims, static_cast<int64_t>(kMaxBytes / esize)));
      SRT_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(v.dtype, dims));
      auto* b = static_cast<uint8_t*>(t.mutable_data());
      std::memset(b, 0, t.nbytes());
      if (pattern == 1)
        for (int64_t i = 0; i < n; ++i) b[static_cast<size_t>(i) * esize] = static_cast<uint8_t>(i % 3);
      return EValue(std::move(t));
    }
    case EValue::Tag::kInt: return EValue(v.int_value);
    case EValue::Tag::kDouble: return EValue(v.double_value);
    case EValue::Tag::kBool: return EValue(v.bool_value);
    case EValue::Tag::kIntList: return EValue(v.int_list);
    case EValue::Tag::kDoubleList: return EValue(v.double_list);
    case EValue::Tag::kBoolList: return EValue(v.bool_list);
    default: return EValue();
  }
}

// Whether every tensor value of static dims fits kMaxBytes: execute allocates those it produces (a
// delegate call's outputs) at their declared dims, which a program may declare at any size (the
// allocation then fails cleanly, but under ASan a huge one aborts the fuzzer).
bool values_fit(const program::MethodData& m) {
  for (const auto& v : m.values) {
    if (v.tag != EValue::Tag::kTensor || !dims_static(v.dims)) continue;
    const size_t esize = std::max<size_t>(1, dtype_size(v.dtype));
    if (!checked_numel(v.dims, static_cast<int64_t>(kMaxBytes / esize)).ok()) return false;
  }
  return true;
}

void run_method(const Program& program, const program::MethodData& m) {
  uint64_t constants = 0;
  for (const auto& s : program.loaded().data.segments) constants += s.size;
  if (constants > kMaxBytes || !values_fit(m)) return;
  auto method = program.load_method(m.name);
  if (!method.ok()) {
    if (method.status().message().empty()) std::abort();
    return;
  }
  for (int pattern = 0; pattern < 2; ++pattern) {
    std::vector<EValue> inputs;
    for (int32_t i : m.inputs) {
      auto v = input_for(m.values[static_cast<size_t>(i)], pattern);  // indices verified by the reader
      if (!v.ok()) return;
      inputs.push_back(std::move(*v));
    }
    auto out = (*method)->execute(std::move(inputs));
    if (!out.ok() && out.status().message().empty()) std::abort();  // every failure says why
  }
}

void check(const uint8_t* data, size_t size) {
  auto program = Program::load_bytes({data, size});
  if (!program.ok()) {
    if (program.status().message().empty()) std::abort();
    return;
  }
  for (const auto& m : (*program)->loaded().data.methods) run_method(**program, m);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  streamrt::fuzzing::check_as_given_and_resealed(data, size, check);
  return 0;
}
