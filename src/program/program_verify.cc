// Semantic checks of a program (the list is at the top of program_format.h). They run on
// every program read from a file, after the FlatBuffers verifier: everything here is untrusted,
// every index is range-checked and every size product is checked for overflow.
#include <set>
#include <string_view>
#include <unordered_set>

#include "program/program_format.h"

namespace streamrt::program {
namespace {

std::string num(int64_t v) { return std::to_string(v); }

// Dims as written, e.g. "[2, -5]" (dims_to_string would show invalid values as '?').
std::string raw_dims(const Dims& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + num(d[i]);
  return s + "]";
}

class MethodChecker {
 public:
  MethodChecker(const ProgramData& p, const MethodData& m, size_t index)
      : p_(p), m_(m), where_("method " + num(static_cast<int64_t>(index)) + " '" + m.name + "'"),
        written_(m.values.size(), false) {}

  Status run() {
    if (m_.name.empty()) return fail("has an empty name");
    for (size_t v = 0; v < m_.values.size(); ++v) SRT_RETURN_IF_ERROR(check_value(v));
    SRT_RETURN_IF_ERROR(check_inputs());
    for (size_t d = 0; d < m_.delegates.size(); ++d) SRT_RETURN_IF_ERROR(check_delegate(d));
    for (size_t i = 0; i < m_.instructions.size(); ++i) SRT_RETURN_IF_ERROR(check_instruction(i));
    for (int32_t o : m_.outputs) {
      SRT_RETURN_IF_ERROR(index_ok(o, "output"));
      if (!written_[o]) return fail("output " + value_name(o) + " is never written");
    }
    return ok_status();
  }

 private:
  Status fail(const std::string& msg) const { return invalid_program(where_ + " " + msg); }
  std::string value_name(int32_t v) const { return num(v) + " '" + m_.values[v].name + "'"; }
  bool in_range(int32_t v) const { return v >= 0 && static_cast<size_t>(v) < m_.values.size(); }
  Status index_ok(int32_t v, const std::string& what) const {
    if (!in_range(v))
      return fail(what + " names value " + num(v) + " (the method has " + num(static_cast<int64_t>(m_.values.size())) +
                  " values)");
    return ok_status();
  }
  bool is_constant(int32_t v) const { return m_.values[v].constant_segment >= 0; }
  bool is_tensor(int32_t v) const { return m_.values[v].tag == EValue::Tag::kTensor; }

  Status check_value(size_t index) {
    const ValueData& v = m_.values[index];
    const std::string at = "value " + num(static_cast<int64_t>(index)) + " '" + v.name + "'";
    // Scalars and lists hold their contents: they are readable from the start.
    written_[index] = v.tag != EValue::Tag::kTensor && v.tag != EValue::Tag::kNone;
    if (v.tag != EValue::Tag::kTensor) {
      if (v.constant_segment >= 0) return fail(at + " is a " + evalue_tag_name(v.tag) + " but names a segment");
      if (v.tag == EValue::Tag::kTensorList)
        for (int32_t t : v.tensor_list) {
          SRT_RETURN_IF_ERROR(index_ok(t, at + " (a tensor list)"));
          if (!is_tensor(t) || !is_constant(t))
            return fail(at + " lists value " + value_name(t) + ", which is not a constant tensor");
        }
      return ok_status();
    }
    if (!is_valid_dtype(static_cast<int>(v.dtype)) || v.dtype == DataType::kUndefined)
      return fail(at + " has invalid dtype " + num(static_cast<int>(v.dtype)));
    const int64_t limit = INT64_MAX / static_cast<int64_t>(dtype_size(v.dtype));
    int64_t n = 1;
    for (int64_t d : v.dims) {
      if (d < kDynamicDim) return fail(at + " has invalid dims " + raw_dims(v.dims));
      if (d > 0 && n > limit / d) return fail(at + " dims " + raw_dims(v.dims) + " hold too many elements");
      if (d > 0) n *= d;
    }
    if (v.constant_segment < 0) return ok_status();
    if (v.constant_segment >= static_cast<int64_t>(p_.segments.size()))
      return fail(at + " names segment " + num(v.constant_segment) + " (the program has " +
                  num(static_cast<int64_t>(p_.segments.size())) + ")");
    if (!dims_static(v.dims)) return fail(at + " is a constant with dynamic dims " + raw_dims(v.dims));
    const uint64_t need = static_cast<uint64_t>(dims_numel(v.dims)) * dtype_size(v.dtype);
    const uint64_t have = p_.segments[v.constant_segment].size;
    if (need != have)
      return fail(at + " (" + dims_to_string(v.dims) + " " + dtype_name(v.dtype) + ") needs " +
                  std::to_string(need) + " bytes, its segment holds " + std::to_string(have));
    written_[index] = true;
    return ok_status();
  }

  Status check_inputs() {
    for (int32_t i : m_.inputs) {
      SRT_RETURN_IF_ERROR(index_ok(i, "input"));
      if (m_.values[i].tag == EValue::Tag::kNone) return fail("input " + value_name(i) + " has no kind");
      if (is_constant(i)) return fail("input " + value_name(i) + " is a constant");
      if (!inputs_.insert(i).second) return fail("lists input " + value_name(i) + " twice");
      written_[i] = true;
    }
    return ok_status();
  }

  Status check_delegate(size_t index) {
    const DelegateData& d = m_.delegates[index];
    const std::string at = "delegate " + num(static_cast<int64_t>(index));
    if (d.backend.empty()) return fail(at + " has an empty backend name");
    if (d.segment < 0 || d.segment >= static_cast<int64_t>(p_.segments.size()))
      return fail(at + " ('" + d.backend + "') names segment " + num(d.segment) + " (the program has " +
                  num(static_cast<int64_t>(p_.segments.size())) + ")");
    std::set<std::string_view> keys;
    for (const CompileSpec& s : d.compile_specs) {
      if (s.key.empty()) return fail(at + " ('" + d.backend + "') has a compile spec with an empty key");
      if (!keys.insert(s.key).second) return fail(at + " ('" + d.backend + "') has compile spec '" + s.key + "' twice");
    }
    return ok_status();
  }

  // Reads must come after writes; outputs are written once, never over inputs or constants.
  Status check_args(const std::string& at, const std::vector<int32_t>& inputs, const std::vector<int32_t>& outputs,
                    bool optional_allowed) {
    for (int32_t v : inputs) {
      if (optional_allowed && v == -1) continue;
      SRT_RETURN_IF_ERROR(index_ok(v, at + " input"));
      if (!written_[v]) return fail(at + " reads value " + value_name(v) + " before any instruction writes it");
    }
    for (int32_t v : outputs) {
      if (optional_allowed && v == -1) continue;
      SRT_RETURN_IF_ERROR(index_ok(v, at + " output"));
      if (!is_tensor(v)) return fail(at + " writes value " + value_name(v) + ", which is not a tensor");
      if (written_[v]) return fail(at + " writes value " + value_name(v) + ", which is already written (an input, a constant or an earlier output)");
      written_[v] = true;
    }
    return ok_status();
  }

  Status check_instruction(size_t index) {
    const Instruction& ins = m_.instructions[index];
    const std::string at = "instruction " + num(static_cast<int64_t>(index));
    if (ins.kind == Instruction::Kind::kDelegateCall) {
      const DelegateCallData& d = ins.delegate;
      if (d.delegate < 0 || d.delegate >= static_cast<int64_t>(m_.delegates.size()))
        return fail(at + " calls delegate " + num(d.delegate) + " (the method has " +
                    num(static_cast<int64_t>(m_.delegates.size())) + ")");
      return check_args(at, d.inputs, d.outputs, false);
    }
    const ir::Node& k = ins.kernel;
    if (k.op_type.empty()) return fail(at + " is a kernel call without an op type");
    for (int32_t v : k.inputs)
      if (v != -1 && in_range(v) && !is_tensor(v))
        return fail(at + " (" + k.op_type + ") reads value " + value_name(v) + ", which is not a tensor");
    return check_args(at + " (" + k.op_type + ")", k.inputs, k.outputs, true);
  }

  const ProgramData& p_;
  const MethodData& m_;
  const std::string where_;
  std::vector<bool> written_;
  std::unordered_set<int32_t> inputs_;
};

}  // namespace

Status verify_program(const ProgramData& p, uint64_t section_size) {
  for (size_t i = 0; i < p.segments.size(); ++i) {
    const SegmentData& s = p.segments[i];
    if (s.offset % kSegmentAlignment != 0)
      return invalid_program("segment " + num(static_cast<int64_t>(i)) + " offset " + std::to_string(s.offset) +
                             " is not " + std::to_string(kSegmentAlignment) + "-byte aligned");
    if (s.offset > section_size || s.size > section_size - s.offset)
      return invalid_program("segment " + num(static_cast<int64_t>(i)) + " extends past the segments section (offset " +
                             std::to_string(s.offset) + " + " + std::to_string(s.size) + " > " +
                             std::to_string(section_size) + ")");
  }
  if (p.methods.empty()) return invalid_program("the program has no methods");
  std::set<std::string_view> names;
  for (size_t i = 0; i < p.methods.size(); ++i) {
    if (!names.insert(p.methods[i].name).second)
      return invalid_program("method " + num(static_cast<int64_t>(i)) + " '" + p.methods[i].name + "' appears twice");
    SRT_RETURN_IF_ERROR(MethodChecker(p, p.methods[i], i).run());
  }
  return ok_status();
}

}  // namespace streamrt::program
