"""Type stubs of the extension streamrt._C (re-exported by the package streamrt)."""

import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

__version__: str

Size = Union[int, str]
ArrayLike = Any  # numpy array, torch tensor, DLPack producer, or anything np.asarray takes

def parse_weight_quant(spec: str) -> str:
    """The canonical name of a weight_quant spec ("int4" -> "int4:128"); ValueError for a bad one."""

def cuda_available() -> bool:
    """True when this build of streamrt has the CUDA backend and a GPU answers."""

def has_cuda_backend() -> bool:
    """True when this build of streamrt includes the CUDA backend."""

def load(
    plan: Union[str, os.PathLike, bytes, bytearray],
    device: Optional[str] = None,
    *,
    profile: bool = False,
    attention_kernel: str = "auto",
    group_gemm_kernel: str = "auto",
    few_row_kernel: bool = True,
    programmatic_launch: bool = True,
    step_times: str = "",
    stream_trace: str = "",
) -> Engine:
    """Loads a plan (a path or its bytes) on "cpu", "cuda" or None / "auto". The keyword arguments are
    CUDA diagnostics, as `streamrt run`'s flags (the CPU ignores them): profile, attention_kernel ("auto",
    "simple", "mma", "wgmma"), group_gemm_kernel ("auto", "cublaslt", "group"), few_row_kernel,
    programmatic_launch, step_times and stream_trace (JSON-lines files). An unknown kernel name is
    InvalidArgumentError."""

class TensorInfo:
    """An input or output of an engine."""

    @property
    def name(self) -> str: ...
    @property
    def dtype(self) -> str:
        """"float32", "int64", "float16", "bfloat16", ..."""
    @property
    def shape(self) -> Tuple[int, ...]:
        """Dims; -1 marks a dynamic dimension."""
    @property
    def is_input(self) -> bool: ...
    @property
    def kind(self) -> str:
        """"tensor", or "sequence", "optional tensor", "optional sequence" (run() takes and returns those as a
        list of arrays, an array or None)."""
    @property
    def element_dtype(self) -> str:
        """A sequence's or optional's element type ("undefined" for a tensor)."""
    @property
    def min_shape(self) -> Tuple[int, ...]: ...
    @property
    def opt_shape(self) -> Tuple[int, ...]: ...
    @property
    def max_shape(self) -> Tuple[int, ...]: ...
    @property
    def seq_capacity(self) -> int:
        """A KV cache stored in place (build(kv_cache_in_place=True)): its room along seq_axis, 0 for a dense
        tensor."""
    @property
    def seq_axis(self) -> int:
        """The axis seq_capacity applies to (0 for a dense tensor)."""

class WeightInfo:
    """A weight of an engine, as refit() sees it."""

    name: str
    present: bool
    shape_input: bool
    @property
    def dtype(self) -> str: ...
    @property
    def shape(self) -> Tuple[int, ...]: ...

class RunStats:
    """What the last run did with streamed weights."""

    bytes_streamed: int
    weights_streamed: int
    copy_ms: float
    stall_ms: float
    run_ms: float
    @property
    def overlap(self) -> float: ...

class ExecutionContext:
    """One inference stream's state; one run at a time (use one context per thread)."""

    def run(self, inputs: Mapping[str, ArrayLike]) -> Dict[str, Any]:
        """Runs on {input name: array}; returns {output name: numpy array or torch tensor}. A sequence
        input or output (TensorInfo.kind) is a list of arrays, an optional one an array / list or None."""
    @property
    def last_run_stats(self) -> RunStats: ...
    streaming_profiling: bool
    cuda_graph: bool
    @property
    def engine(self) -> Engine: ...
    @property
    def closed(self) -> bool: ...
    def close(self) -> None: ...
    def __enter__(self) -> ExecutionContext: ...
    def __exit__(self, *args: Any) -> None: ...

class Engine:
    """A built engine (a loaded plan) on one device."""

    @property
    def name(self) -> str: ...
    @property
    def device(self) -> str: ...
    @property
    def inputs(self) -> List[TensorInfo]: ...
    @property
    def outputs(self) -> List[TensorInfo]: ...
    @property
    def num_steps(self) -> int: ...
    @property
    def device_memory_size(self) -> int: ...
    @property
    def weights_size(self) -> int: ...
    @property
    def weights_stripped(self) -> bool: ...
    @property
    def streamable_weights_size(self) -> int: ...
    @property
    def weight_streaming_budget(self) -> int:
        """Bytes in force; set an int, "8GiB", "50%" or "auto"."""
    @weight_streaming_budget.setter
    def weight_streaming_budget(self, value: Size) -> None: ...
    @property
    def weight_streaming_automatic_budget(self) -> int: ...
    @property
    def weight_streaming_scratch_size(self) -> int: ...
    @property
    def minimum_device_memory(self) -> int: ...
    @property
    def num_execution_contexts(self) -> int: ...
    @property
    def closed(self) -> bool: ...
    @property
    def build_report(self) -> Dict[str, Any]: ...
    @property
    def weights(self) -> List[WeightInfo]: ...
    def create_execution_context(self) -> ExecutionContext: ...
    def save(self, path: Union[str, os.PathLike]) -> None: ...
    def refit(self, weights: Union[Mapping[str, ArrayLike], str, os.PathLike]) -> None: ...
    def close(self) -> None: ...
    def __enter__(self) -> Engine: ...
    def __exit__(self, *args: Any) -> None: ...

class Module:
    """A program file (.pte) over streamrt's program runtime."""

    def __init__(self, path: Union[str, os.PathLike],
                 backend_options: Optional[Mapping[str, Mapping[str, Union[bool, int, str]]]] = None) -> None: ...
    def forward(self, inputs: Sequence[Any]) -> List[Any]: ...
    def execute(self, method: str, inputs: Sequence[Any]) -> List[Any]: ...
    @property
    def method_names(self) -> List[str]: ...
    def set_backend_option(self, backend: str, options: Mapping[str, Union[bool, int, str]]) -> None: ...
    def get_backend_option(self, backend: str, keys: Sequence[str]) -> Dict[str, Union[bool, int, str]]: ...
    def close(self) -> None: ...
    def __enter__(self) -> Module: ...
    def __exit__(self, *args: Any) -> None: ...

def _build_onnx(path: str, device: Optional[str], precision: str, weight_streaming: bool,
                shapes: Dict[str, Sequence[int]], profiles: Dict[str, Tuple[Sequence[int], ...]], tactics: bool,
                allow_tf32: bool, strip_weights: bool, name: str, cache_dir: Optional[str],
                cache_max_size: Optional[Size], **sizes: Optional[Size]) -> Engine: ...
def _compile_onnx(model: str, output: str, device: Optional[str], weight_streaming: bool,
                  shapes: Dict[str, Sequence[int]], fallback_ops: List[str], budget: Optional[Size],
                  budget_per_engine: Optional[Size], **sizes: Optional[Size]) -> Dict[str, Any]: ...
