"""streamrt.build and streamrt.compile: models (ONNX files, ONNX protos, torch modules) into
engines and program files."""

from __future__ import annotations

import contextlib
import inspect
import os
import tempfile
from typing import Any, Iterator, Mapping, Optional, Sequence, Tuple, Union

from . import _C

Shape = Sequence[int]
Profile = Union[Sequence[Shape], Mapping[str, Shape]]
Size = Union[int, str]

_ONNX_LIMIT = 1_800_000_000  # protobuf's 2 GiB limit, with room: larger models keep external data


def _is_torch_module(model: Any) -> bool:
    torch = __import__("sys").modules.get("torch")
    return torch is not None and isinstance(model, torch.nn.Module)


def _normalize_profiles(profiles: Optional[Mapping[str, Profile]]) -> dict:
    out: dict = {}
    for name, p in (profiles or {}).items():
        if not isinstance(name, str):
            raise ValueError(f"profiles: input names must be strings, got {name!r}")
        if isinstance(p, Mapping):
            missing = {"min", "opt", "max"} - set(p)
            if missing:
                raise ValueError(f"profiles[{name!r}]: missing {sorted(missing)} (keys: min, opt, max)")
            p = (p["min"], p["opt"], p["max"])
        if isinstance(p, (str, bytes)) or not isinstance(p, Sequence) or len(p) != 3:
            raise ValueError(f"profiles[{name!r}]: expected [min_shape, opt_shape, max_shape], got {p!r}")
        out[name] = tuple(tuple(s) if isinstance(s, Sequence) and not isinstance(s, str) else s for s in p)
    return out


def _normalize_shapes(shapes: Optional[Mapping[str, Shape]]) -> dict:
    out: dict = {}
    for name, s in (shapes or {}).items():
        if not isinstance(name, str):
            raise ValueError(f"shapes: input names must be strings, got {name!r}")
        out[name] = s
    return out


def _precision(fp16: bool, bf16: bool) -> str:
    if fp16 and bf16:
        raise ValueError("fp16 and bf16 exclude each other")
    return "float16" if fp16 else "bfloat16" if bf16 else "float32"


def _arg_names(module: Any, n: int, input_names: Optional[Sequence[str]]) -> list:
    if input_names:
        return list(input_names)
    params = [p.name for p in inspect.signature(module.forward).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return params[:n]


def _dynamic_shapes(module: Any, args: tuple, profiles: dict, input_names: Optional[Sequence[str]]) -> Optional[tuple]:
    """torch.export dynamic_shapes for the dims a profile lets vary (min != max): Dim.AUTO, so that
    torch relates dims shared by several inputs itself."""
    if not profiles:
        return None
    import torch

    names = _arg_names(module, len(args), input_names)
    unknown = set(profiles) - set(names)
    if unknown:
        raise ValueError(f"profiles name {sorted(unknown)}, which are not inputs of the module ({names})")
    spec = []
    for name, arg in zip(names, args):
        p = profiles.get(name)
        if p is None or not isinstance(arg, torch.Tensor):
            spec.append(None)
            continue
        spec.append({i: torch.export.Dim.AUTO for i, (lo, hi) in enumerate(zip(p[0], p[2])) if lo != hi} or None)
    return tuple(spec)


def _export_torch(module: Any, example_inputs: Any, profiles: dict, directory: str, *,
                  input_names: Optional[Sequence[str]], output_names: Optional[Sequence[str]],
                  dynamic_shapes: Any, opset_version: Optional[int]) -> str:
    import torch

    if example_inputs is None:
        raise ValueError("building a torch module needs example_inputs=(tensor, ...) to export it")
    args = example_inputs if isinstance(example_inputs, tuple) else (
        tuple(example_inputs) if isinstance(example_inputs, list) else (example_inputs,))
    if dynamic_shapes is None:
        dynamic_shapes = _dynamic_shapes(module, args, profiles, input_names)
    path = os.path.join(directory, "model.onnx")
    with torch.no_grad():
        torch.onnx.export(module, args, path, dynamo=True, input_names=input_names, output_names=output_names,
                          dynamic_shapes=dynamic_shapes, opset_version=opset_version)
    return path


@contextlib.contextmanager
def _model_path(model: Any, example_inputs: Any, profiles: dict, **export: Any) -> Iterator[str]:
    """The ONNX file of `model` (a path as is; a proto, bytes or torch module written to a
    temporary folder that is removed afterwards)."""
    if isinstance(model, (str, os.PathLike)):
        yield os.fspath(model)
        return
    with tempfile.TemporaryDirectory(prefix="streamrt-") as d:
        if isinstance(model, (bytes, bytearray)):
            path = os.path.join(d, "model.onnx")
            with open(path, "wb") as f:
                f.write(model)
        elif type(model).__name__ == "ModelProto" and hasattr(model, "SerializeToString"):
            import onnx

            path = os.path.join(d, "model.onnx")
            onnx.save_model(model, path, save_as_external_data=model.ByteSize() > _ONNX_LIMIT)
        elif _is_torch_module(model):
            path = _export_torch(model, example_inputs, profiles, d, **export)
        else:
            raise TypeError(f"model: expected an ONNX file path, ONNX bytes, an onnx.ModelProto or a torch.nn.Module, "
                            f"got {type(model).__name__}")
        yield path


def build(model: Any, example_inputs: Any = None, *, device: Optional[str] = None, fp16: bool = False,
          bf16: bool = False, weight_streaming: bool = False,
          profiles: Optional[Mapping[str, Profile]] = None, shapes: Optional[Mapping[str, Shape]] = None,
          min_streamable_bytes: Optional[Size] = None, stream_chunk_bytes: Optional[Size] = None,
          kv_cache_in_place: bool = False, weight_quant: str = "none",
          calibration: Optional[Sequence[Mapping[str, Any]]] = None,
          tactics: bool = True, allow_tf32: bool = False, strip_weights: bool = False, name: str = "",
          cache_dir: Union[None, bool, str, os.PathLike] = None, cache_max_size: Optional[Size] = None,
          input_names: Optional[Sequence[str]] = None, output_names: Optional[Sequence[str]] = None,
          dynamic_shapes: Any = None, opset_version: Optional[int] = None) -> "_C.Engine":
    """Builds `model` into an Engine.

    model: an ONNX file path, ONNX bytes, an ``onnx.ModelProto``, or a ``torch.nn.Module``, exported
    with ``torch.onnx.export(..., dynamo=True)`` on ``example_inputs`` (a tuple of the forward's
    arguments; put the module in eval mode first). A profile's varying dims become dynamic in the
    export (``torch.export.Dim.AUTO``) unless ``dynamic_shapes`` is given; ``input_names``,
    ``output_names`` and ``opset_version`` go to the exporter.

    device: "cpu", "cuda", or None / "auto" (CUDA when a GPU answers). fp16 / bf16 run float32
    layers in half precision. weight_streaming marks large weights streamable (see
    Engine.weight_streaming_budget); min_streamable_bytes (default 64 KiB) and
    stream_chunk_bytes (default 64 MiB; 0 keeps weights whole) take ints or "64MiB".
    kv_cache_in_place: a KV-cache decoder's past / present pairs are stored with room for the
    profile's longest present (TensorInfo.seq_capacity) and appended to in place: for decode loops
    that bind device buffers through the C++ API (examples/greedy_decode); ExecutionContext.run()
    takes dense arrays and refuses such an engine.
    weight_quant: "none", "int8" (per output channel), "fp8" (float8 e4m3, a scale per output
    channel) or "int4[:GROUP]" (GROUP 32, 64 or 128 along the reduction): MatMul / Gemm weights
    stored, streamed and read compressed. calibration: a list
    of {input name: array} dicts (one run each, shapes within the profiles); the builder runs the
    model on the CPU over them and quantizes by GPTQ instead of rounding (needs weight_quant).
    profiles: {input: [min_shape, opt_shape, max_shape]} (or {"min":, "opt":, "max":}) for dynamic
    inputs; shapes: {input: shape} fixes dynamic dims. tactics: time GEMM algorithms (CUDA);
    allow_tf32: TF32 tensor cores for float32 (CUDA). strip_weights: a plan without weights, to
    refit before running. cache_dir: an engine cache folder (True: the default one,
    $XDG_CACHE_HOME/streamrt/engines) that skips rebuilding an unchanged architecture;
    cache_max_size bounds it (default "10GiB").

    Raises ValueError for bad arguments, streamrt.Error subclasses for what the builder reports
    (InvalidModelError, IoError, UnsupportedError, ...).
    """
    profiles_n = _normalize_profiles(profiles)
    precision = _precision(fp16, bf16)
    cache = None if cache_dir is None or cache_dir is False else ("" if cache_dir is True else os.fspath(cache_dir))
    with _model_path(model, example_inputs, profiles_n, input_names=input_names, output_names=output_names,
                     dynamic_shapes=dynamic_shapes, opset_version=opset_version) as path:
        return _C._build_onnx(path, device, precision, weight_streaming, _normalize_shapes(shapes), profiles_n,
                              tactics, allow_tf32, strip_weights, name, cache, cache_max_size,
                              min_streamable_bytes=min_streamable_bytes, stream_chunk_bytes=stream_chunk_bytes,
                              kv_cache_in_place=kv_cache_in_place, weight_quant=weight_quant,
                              calibration=calibration)


def compile(model: Any, output: Union[str, os.PathLike], example_inputs: Any = None, *,
            device: Optional[str] = None, weight_streaming: bool = False,
            shapes: Optional[Mapping[str, Shape]] = None, fallback_ops: Sequence[str] = (),
            weight_streaming_budget: Optional[Size] = None,
            weight_streaming_budget_per_engine: Optional[Size] = None,
            min_streamable_bytes: Optional[Size] = None, stream_chunk_bytes: Optional[Size] = None,
            input_names: Optional[Sequence[str]] = None, output_names: Optional[Sequence[str]] = None,
            opset_version: Optional[int] = None) -> dict:
    """Compiles `model` (as for build; inputs must end up static: give ``shapes``) into a program
    file at `output` (.pte) for :class:`Module`: supported subgraphs become StreamRT engines, the
    rest portable CPU kernel calls (``fallback_ops`` forces op types there). A weight-streaming
    budget may be baked in (a total split across engines, or one per engine). Returns a report:
    {"engines": [{"name", "nodes", "steps", "streamable_size"}], "kernel_calls": [op types]}."""
    with _model_path(model, example_inputs, {}, input_names=input_names, output_names=output_names,
                     dynamic_shapes=None, opset_version=opset_version) as path:
        return _C._compile_onnx(path, os.fspath(output), device, weight_streaming, _normalize_shapes(shapes),
                                list(fallback_ops), weight_streaming_budget, weight_streaming_budget_per_engine,
                                min_streamable_bytes=min_streamable_bytes, stream_chunk_bytes=stream_chunk_bytes)
