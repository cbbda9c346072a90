"""Weight-streaming budgets: every accepted form, the errors, and what a run streams."""

import numpy as np
import pytest

import streamrt
from conftest import batch, mlp_reference


def test_budget_forms(streaming_engine):
    e = streaming_engine
    size = e.streamable_weights_size
    assert size == (64 * 128 + 128 + 128 * 32) * 4 or size > 0
    e.weight_streaming_budget = 0
    assert e.weight_streaming_budget == 0
    e.weight_streaming_budget = "50%"
    assert e.weight_streaming_budget == size // 2
    e.weight_streaming_budget = "100%"
    assert e.weight_streaming_budget == size
    e.weight_streaming_budget = "1KiB"
    assert e.weight_streaming_budget == 1024
    e.weight_streaming_budget = "8GiB"  # clamped to the streamable size
    assert e.weight_streaming_budget == size
    e.weight_streaming_budget = 4096
    assert e.weight_streaming_budget == 4096
    e.weight_streaming_budget = "4096"
    assert e.weight_streaming_budget == 4096
    e.weight_streaming_budget = 10**15
    assert e.weight_streaming_budget == size
    e.weight_streaming_budget = "auto"
    assert e.weight_streaming_budget == min(e.weight_streaming_automatic_budget, size)


@pytest.mark.parametrize("bad", ["8GB", "8gib", "AUTO", "1.5GiB", "101%", "-5", " 8GiB", "8 GiB", "", "%", "16EiB",
                                 "fifty"])
def test_budget_bad_strings(streaming_engine, bad):
    before = streaming_engine.weight_streaming_budget
    with pytest.raises(ValueError) as info:
        streaming_engine.weight_streaming_budget = bad
    assert isinstance(info.value, streamrt.InvalidArgumentError)
    assert "weight_streaming_budget" in str(info.value)
    assert streaming_engine.weight_streaming_budget == before


def test_budget_bad_values(streaming_engine):
    with pytest.raises(ValueError, match="negative"):
        streaming_engine.weight_streaming_budget = -1
    with pytest.raises(ValueError, match="too large"):
        streaming_engine.weight_streaming_budget = 2**70
    for bad in (0.5, None, True, [1]):
        with pytest.raises(TypeError):
            streaming_engine.weight_streaming_budget = bad


def test_budget_while_context_alive(streaming_engine):
    ctx = streaming_engine.create_execution_context()
    with pytest.raises(streamrt.InvalidStateError, match="context"):
        streaming_engine.weight_streaming_budget = "50%"
    ctx.close()
    streaming_engine.weight_streaming_budget = "50%"


def test_budget_without_streamable_weights(engine):
    with pytest.raises(streamrt.UnsupportedError):
        engine.weight_streaming_budget = "50%"


def test_run_stats_stream_at_budget_zero(streaming_engine):
    e = streaming_engine
    x = batch(3)
    e.weight_streaming_budget = 0
    ctx = e.create_execution_context()
    y = ctx.run({"x": x})["y"]
    np.testing.assert_allclose(y, mlp_reference(x), rtol=1e-5, atol=1e-5)
    stats = ctx.last_run_stats
    assert stats.bytes_streamed > 0 and stats.weights_streamed > 0
    assert stats.run_ms >= 0 and 0 <= stats.overlap <= 1
    assert "bytes_streamed=" in repr(stats)
    ctx.close()
    e.weight_streaming_budget = "100%"
    ctx = e.create_execution_context()
    np.testing.assert_allclose(ctx.run({"x": x})["y"], y, rtol=1e-6, atol=1e-6)
    assert ctx.last_run_stats.bytes_streamed == 0
    ctx.streaming_profiling = True
    assert ctx.streaming_profiling
