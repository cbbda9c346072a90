#include <gtest/gtest.h>
#include "streamrt_executorch.h"
TEST(ExecuTorchBackend, Registered) { EXPECT_EQ(streamrt::et::registered_backend().loaded_engines(), 0u); }
