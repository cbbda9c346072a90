// GPU tests skip, with a message saying why, when no CUDA device answers.
#pragma once

#include <gtest/gtest.h>

#include "streamrt/runtime.h"

#define SRT_REQUIRE_GPU()                                                             \
  do {                                                                                \
    auto rt_probe_ = ::streamrt::Runtime::create({::streamrt::DeviceType::kCuda});    \
    if (!rt_probe_.ok()) GTEST_SKIP() << "no GPU: " << rt_probe_.status().to_string(); \
  } while (0)
