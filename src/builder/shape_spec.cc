#include "builder/shape_spec.h"

#include <sstream>

namespace streamrt {

namespace {
Result<Dims> parse_static_dims(const std::string& s, const std::string& spec) {
  auto d = parse_dims(s);
  if (!d.ok() || !dims_static(*d))
    return invalid_argument("bad dims '" + s + "' in '" + spec + "' (expected e.g. 1x3x224x224)");
  return d;
}
}  // namespace

Status parse_shape_specs(const std::string& spec, std::map<std::string, Dims>* out) {
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t colon = item.rfind(':');
    if (colon == std::string::npos || colon == 0)
      return invalid_argument("bad shape spec '" + item + "' (expected name:1x3x224x224)");
    SRT_ASSIGN_OR_RETURN(Dims d, parse_static_dims(item.substr(colon + 1), item));
    (*out)[item.substr(0, colon)] = d;
  }
  return ok_status();
}

Status parse_profile_spec(const std::string& spec, std::map<std::string, ShapeProfile>* out) {
  size_t c3 = spec.rfind(':');
  size_t c2 = c3 == std::string::npos || c3 == 0 ? std::string::npos : spec.rfind(':', c3 - 1);
  size_t c1 = c2 == std::string::npos || c2 == 0 ? std::string::npos : spec.rfind(':', c2 - 1);
  if (c1 == std::string::npos || c1 == 0)
    return invalid_argument("bad profile '" + spec + "' (expected name:MIN:OPT:MAX, e.g. ids:1x1:1x128:8x512)");
  ShapeProfile p;
  SRT_ASSIGN_OR_RETURN(p.min, parse_static_dims(spec.substr(c1 + 1, c2 - c1 - 1), spec));
  SRT_ASSIGN_OR_RETURN(p.opt, parse_static_dims(spec.substr(c2 + 1, c3 - c2 - 1), spec));
  SRT_ASSIGN_OR_RETURN(p.max, parse_static_dims(spec.substr(c3 + 1), spec));
  (*out)[spec.substr(0, c1)] = p;
  return ok_status();
}

}  // namespace streamrt
