// The host tensor is part of the public API: include/streamrt/tensor.h.
#pragma once

#include "streamrt/tensor.h"
