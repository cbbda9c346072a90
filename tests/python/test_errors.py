"""Errors: each raises the streamrt.Error subclass of its status code with the library's message, and
nothing takes the interpreter down."""

import numpy as np
import pytest

import streamrt
from conftest import IN, PROFILE, batch


def test_hierarchy():
    assert issubclass(streamrt.InvalidArgumentError, ValueError)
    assert issubclass(streamrt.IoError, OSError)
    assert issubclass(streamrt.OutOfMemoryError, MemoryError)
    for cls in (streamrt.InvalidArgumentError, streamrt.InvalidModelError, streamrt.InvalidPlanError,
                streamrt.InvalidProgramError, streamrt.IncompatibleError, streamrt.UnsupportedError,
                streamrt.NotFoundError, streamrt.InvalidStateError, streamrt.OutOfMemoryError, streamrt.DeviceError,
                streamrt.IoError, streamrt.InternalError):
        assert issubclass(cls, streamrt.Error) and cls.__doc__


def test_missing_files(tmp_path):
    missing = str(tmp_path / "nope.onnx")
    with pytest.raises(streamrt.IoError) as info:
        streamrt.build(missing, device="cpu")
    assert "nope.onnx" in str(info.value) and info.value.code == "IoError"
    with pytest.raises(streamrt.IoError, match="nope.plan"):
        streamrt.load(str(tmp_path / "nope.plan"), device="cpu")


def test_corrupt_plan(engine, tmp_path):
    junk = tmp_path / "junk.plan"
    junk.write_bytes(b"\x00not a plan" * 100)
    with pytest.raises(streamrt.InvalidPlanError) as info:
        streamrt.load(str(junk), device="cpu")
    assert info.value.message
    good = tmp_path / "good.plan"
    engine.save(str(good))
    data = good.read_bytes()
    truncated = tmp_path / "truncated.plan"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(streamrt.InvalidPlanError):
        streamrt.load(str(truncated), device="cpu")
    flipped = bytearray(data)
    flipped[len(data) // 3] ^= 0xFF
    with pytest.raises(streamrt.Error):  # a checksum or a verifier check, never a crash
        streamrt.load(bytes(flipped), device="cpu")


def test_corrupt_model(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"this is not protobuf" * 10)
    with pytest.raises(streamrt.InvalidModelError):
        streamrt.build(str(bad), device="cpu")


def test_bad_build_arguments(mlp_path):
    with pytest.raises(ValueError, match="device 'tpu'"):
        streamrt.build(mlp_path, device="tpu")
    with pytest.raises(ValueError, match="exclude"):
        streamrt.build(mlp_path, device="cpu", fp16=True, bf16=True)
    with pytest.raises(ValueError, match="min_shape, opt_shape, max_shape"):
        streamrt.build(mlp_path, device="cpu", profiles={"x": [(1, IN), (8, IN)]})
    with pytest.raises(ValueError, match="missing"):
        streamrt.build(mlp_path, device="cpu", profiles={"x": {"min": (1, IN)}})
    with pytest.raises(ValueError, match="sequence of ints"):
        streamrt.build(mlp_path, device="cpu", shapes={"x": "2x64"})
    with pytest.raises(streamrt.InvalidArgumentError):  # the builder's check: streaming needs float32
        streamrt.build(mlp_path, device="cpu", fp16=True, weight_streaming=True)
    with pytest.raises(ValueError, match="stream_chunk_bytes"):
        streamrt.build(mlp_path, device="cpu", stream_chunk_bytes="64MB")
    with pytest.raises(TypeError):
        streamrt.build(12345)
    if not streamrt.has_cuda_backend():
        with pytest.raises(streamrt.UnsupportedError, match="cuda"):
            streamrt.build(mlp_path, device="cuda")


def test_run_errors(engine):
    ctx = engine.create_execution_context()
    x = batch(2)
    with pytest.raises(streamrt.NotFoundError, match="'nope'"):
        ctx.run({"nope": x})
    with pytest.raises(streamrt.InvalidArgumentError, match="output"):
        ctx.run({"y": x})
    with pytest.raises(streamrt.InvalidArgumentError, match="float64.*float32"):
        ctx.run({"x": x.astype(np.float64)})
    with pytest.raises(streamrt.InvalidArgumentError, match="outside the optimization profile"):
        ctx.run({"x": batch(9)})
    with pytest.raises(streamrt.InvalidArgumentError, match="outside the optimization profile"):
        ctx.run({"x": np.zeros((2, IN, 1), np.float32)})
    with pytest.raises(streamrt.InvalidArgumentError, match="missing inputs 'x'"):
        ctx.run({})
    with pytest.raises(TypeError):
        ctx.run([x])
    with pytest.raises(TypeError):
        ctx.run({1: x})
    # the context still works after all of that
    assert ctx.run({"x": x})["y"].shape == (2, 32)


def test_closed_engine_and_context(mlp_path):
    e = streamrt.build(mlp_path, device="cpu", profiles=PROFILE)
    ctx = e.create_execution_context()
    e.close()
    with pytest.raises(streamrt.InvalidStateError, match="closed"):
        ctx.run({"x": batch(1)})
    with pytest.raises(streamrt.InvalidStateError, match="closed"):
        e.create_execution_context()
    with pytest.raises(streamrt.InvalidStateError, match="closed"):
        e.inputs
    with pytest.raises(streamrt.InvalidStateError, match="closed"):
        e.save("never.plan")
    e.close()  # twice is fine


def test_last_run_stats_before_a_run(engine):
    ctx = engine.create_execution_context()
    try:
        stats = ctx.last_run_stats
    except streamrt.InvalidStateError:
        return
    assert stats.bytes_streamed == 0
