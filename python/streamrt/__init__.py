"""streamrt: ONNX models and PyTorch modules built into engines that run on the CPU or CUDA,
with weight streaming (run a model whose weights do not fit in device memory).

    import numpy as np, streamrt
    engine = streamrt.build("model.onnx", device="cpu", weight_streaming=True,
                            profiles={"input_ids": [(1, 1), (2, 64), (4, 128)]})
    engine.weight_streaming_budget = "50%"
    ctx = engine.create_execution_context()
    outs = ctx.run({"input_ids": np.ones((2, 16), np.int64)})

Programs (.pte files, see :func:`compile`) run through :class:`Module`.
"""

from ._errors import (DeviceError, Error, IncompatibleError, InternalError, InvalidArgumentError,
                      InvalidModelError, InvalidPlanError, InvalidProgramError, InvalidStateError, IoError,
                      NotFoundError, OutOfMemoryError, UnsupportedError)
from ._C import (Engine, ExecutionContext, Module, RunStats, TensorInfo, WeightInfo, __version__, cuda_available,
                 has_cuda_backend, load)
from ._build import build, compile

__all__ = [
    "build", "compile", "load", "Engine", "ExecutionContext", "Module", "RunStats", "TensorInfo", "WeightInfo",
    "cuda_available", "has_cuda_backend", "__version__",
    "Error", "InvalidArgumentError", "InvalidModelError", "InvalidPlanError", "InvalidProgramError",
    "IncompatibleError", "UnsupportedError", "NotFoundError", "InvalidStateError", "OutOfMemoryError",
    "DeviceError", "IoError", "InternalError",
]
