#include "test_environment.h"

namespace {
const bool applied = streamrt::testing::apply_test_environment();
}  // namespace
