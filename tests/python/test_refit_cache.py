"""Refit (new weights without a rebuild) and the engine cache."""

import numpy as np
import onnx
import pytest

import streamrt
from conftest import IN, PROFILE, batch, mlp_model, mlp_reference, mlp_weights


def test_refit_from_arrays(engine, tmp_path):
    names = {w.name: w for w in engine.weights}
    assert set(names) >= {"w1", "b1", "w2"}
    assert names["w1"].dtype == "float32" and names["w1"].shape == (IN, 128) and names["w1"].present
    new = mlp_weights(seed=42)
    engine.refit(new)
    x = batch(3)
    y = engine.create_execution_context().run({"x": x})["y"]
    np.testing.assert_allclose(y, mlp_reference(x, new), rtol=1e-5, atol=1e-5)
    # saved with the refitted weights
    engine.save(tmp_path / "refitted.plan")
    loaded = streamrt.load(tmp_path / "refitted.plan", device="cpu")
    np.testing.assert_array_equal(loaded.create_execution_context().run({"x": x})["y"], y)


def test_refit_errors(engine):
    with pytest.raises(streamrt.NotFoundError, match="nope"):
        engine.refit({"nope": np.zeros(3, np.float32)})
    with pytest.raises(streamrt.InvalidArgumentError):
        engine.refit({"w1": np.zeros((IN, 127), np.float32)})
    with pytest.raises(streamrt.InvalidArgumentError, match="float64"):
        engine.refit({"w1": np.zeros((IN, 128), np.float64)})
    ctx = engine.create_execution_context()
    with pytest.raises(streamrt.InvalidStateError):
        engine.refit({"w1": np.zeros((IN, 128), np.float32)})
    ctx.close()


def test_strip_and_refit_from_onnx(tmp_path):
    new = mlp_weights(seed=7)
    path = tmp_path / "new.onnx"
    onnx.save(mlp_model(new), str(path))
    e = streamrt.build(mlp_model(), device="cpu", profiles=PROFILE, strip_weights=True)
    assert e.weights_stripped
    with pytest.raises(streamrt.InvalidStateError):
        e.create_execution_context()
    e.refit(str(path))
    assert not e.weights_stripped
    x = batch(2)
    np.testing.assert_allclose(e.create_execution_context().run({"x": x})["y"], mlp_reference(x, new),
                               rtol=1e-5, atol=1e-5)


def test_engine_cache(tmp_path, mlp_path):
    cache = tmp_path / "cache"
    first = streamrt.build(mlp_path, device="cpu", profiles=PROFILE, cache_dir=cache)
    assert first.build_report["cache_hit"] is False and first.build_report["cache_saved"]
    # Same architecture, other weights: a hit, refitted with the new model's weights.
    new = mlp_weights(seed=3)
    other = tmp_path / "other.onnx"
    onnx.save(mlp_model(new), str(other))
    second = streamrt.build(str(other), device="cpu", profiles=PROFILE, cache_dir=str(cache), cache_max_size="1GiB")
    assert second.build_report["cache_hit"] is True
    assert second.build_report["cache_key"] == first.build_report["cache_key"]
    x = batch(4)
    np.testing.assert_allclose(second.create_execution_context().run({"x": x})["y"], mlp_reference(x, new),
                               rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="cache_max_size"):
        streamrt.build(mlp_path, device="cpu", cache_dir=str(cache), cache_max_size="big")
