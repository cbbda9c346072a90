// Whether this build's CUDA kernels can run on the current GPU.
#pragma once

#include "streamrt/status.h"

namespace streamrt::cuda {

// The architectures the CUDA code was compiled for, as CMake listed them ("80-real,...,90-virtual").
const char* built_architectures();

// OK when the current device can run streamrt's kernels (SASS for its architecture, or PTX the
// driver can compile for it); kUnsupported naming the GPU and the built architectures otherwise.
Status check_kernel_image();

}  // namespace streamrt::cuda
