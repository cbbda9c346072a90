// Parsing of the CLI's shape specifications.
#pragma once

#include <map>
#include <string>

#include "streamrt/builder.h"

namespace streamrt {

// "name:1x3x224x224,other:4x8" -> {name: [1,3,224,224], other: [4,8]}. The name is what
// precedes the last ':' (names may themselves contain ':').
Status parse_shape_specs(const std::string& spec, std::map<std::string, Dims>* out);

// "name:MINxA:OPTxB:MAXxC" -> profile of input `name` (the last three ':' fields are dims).
Status parse_profile_spec(const std::string& spec, std::map<std::string, ShapeProfile>* out);

}  // namespace streamrt
