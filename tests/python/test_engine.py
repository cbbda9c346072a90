"""Building, saving, loading, describing and running engines on the CPU with numpy."""

import numpy as np
import pytest

import streamrt
from conftest import IN, OUT, PROFILE, batch, mlp_model, mlp_reference


def test_io_descriptions(engine):
    (x,) = engine.inputs
    (y,) = engine.outputs
    assert (x.name, x.dtype, x.shape, x.is_input) == ("x", "float32", (-1, IN), True)
    assert (x.min_shape, x.opt_shape, x.max_shape) == ((1, IN), (4, IN), (8, IN))
    assert (y.name, y.dtype, y.shape, y.is_input) == ("y", "float32", (-1, OUT), False)
    assert y.max_shape == (8, OUT)
    assert "TensorInfo(name='x'" in repr(x)
    assert engine.device == "cpu"
    assert engine.name == "mlp"
    assert engine.num_steps >= 1
    assert engine.weights_size == (IN * 128 + 128 + 128 * OUT) * 4
    assert engine.streamable_weights_size == 0
    assert engine.build_report["steps"] == engine.num_steps
    # A CPU build times nothing (tactics are CUDA's), and says so.
    assert (engine.build_report["steps_tuned"], engine.build_report["steps_tuned_reused"]) == (0, 0)
    assert engine.build_report["tactic_ms"] == 0


@pytest.mark.parametrize("n", [1, 3, 8])
def test_run_matches_numpy(engine, n):
    x = batch(n, seed=n)
    ctx = engine.create_execution_context()
    out = ctx.run({"x": x})
    assert list(out) == ["y"]
    assert isinstance(out["y"], np.ndarray) and out["y"].dtype == np.float32 and out["y"].shape == (n, OUT)
    np.testing.assert_allclose(out["y"], mlp_reference(x), rtol=1e-5, atol=1e-5)


def test_run_accepts_lists_and_non_contiguous(engine):
    ctx = engine.create_execution_context()
    x = batch(6)
    strided = np.asfortranarray(x)  # same values, other layout: copied once
    np.testing.assert_allclose(ctx.run({"x": strided})["y"], mlp_reference(x), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ctx.run({"x": x[:2].tolist()})["y"], mlp_reference(x[:2]), rtol=1e-5, atol=1e-5)


def test_build_from_proto_and_bytes(mlp_path):
    x = batch(2)
    for model in (mlp_model(), mlp_model().SerializeToString()):
        e = streamrt.build(model, device="cpu", shapes={"x": [2, IN]})
        assert e.inputs[0].shape == (2, IN)
        out = e.create_execution_context().run({"x": x})["y"]
        np.testing.assert_allclose(out, mlp_reference(x), rtol=1e-5, atol=1e-5)


def test_save_load_round_trip(engine, tmp_path):
    path = tmp_path / "m.plan"
    engine.save(path)  # os.PathLike accepted
    loaded = streamrt.load(str(path), device="cpu")
    assert [(t.name, t.dtype, t.shape) for t in loaded.inputs + loaded.outputs] == \
        [(t.name, t.dtype, t.shape) for t in engine.inputs + engine.outputs]
    x = batch(5)
    a = engine.create_execution_context().run({"x": x})["y"]
    b = loaded.create_execution_context().run({"x": x})["y"]
    np.testing.assert_array_equal(a, b)
    from_bytes = streamrt.load(path.read_bytes(), device="cpu")
    np.testing.assert_array_equal(from_bytes.create_execution_context().run({"x": x})["y"], a)
    assert loaded.build_report == {}


def test_load_takes_the_runtime_diagnostics(engine, tmp_path):
    # streamrt run's flags as keyword arguments: accepted on the CPU (which ignores them), the same
    # outputs; unknown kernel names and positional use are refused.
    path = tmp_path / "m.plan"
    engine.save(path)
    x = batch(3)
    want = engine.create_execution_context().run({"x": x})["y"]
    for source in (path, path.read_bytes()):
        loaded = streamrt.load(source, device="cpu", profile=True, attention_kernel="wgmma",
                               group_gemm_kernel="cublaslt", few_row_kernel=False,
                               programmatic_launch=False, step_times=str(tmp_path / "steps.jsonl"),
                               stream_trace=str(tmp_path / "trace.jsonl"))
        np.testing.assert_array_equal(loaded.create_execution_context().run({"x": x})["y"], want)
    with pytest.raises(streamrt.InvalidArgumentError, match="unknown attention kernel 'fast'"):
        streamrt.load(path, device="cpu", attention_kernel="fast")
    with pytest.raises(streamrt.InvalidArgumentError, match="group"):
        streamrt.load(path, device="cpu", group_gemm_kernel="cutlass")
    with pytest.raises(TypeError):
        streamrt.load(path, "cpu", True)  # keyword-only


def test_contexts_are_independent_and_counted(engine):
    a, b = engine.create_execution_context(), engine.create_execution_context()
    assert engine.num_execution_contexts == 2
    xa, xb = batch(1, seed=5), batch(7, seed=6)
    ya, yb = a.run({"x": xa})["y"], b.run({"x": xb})["y"]
    np.testing.assert_allclose(ya, mlp_reference(xa), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(yb, mlp_reference(xb), rtol=1e-5, atol=1e-5)
    a.close()
    assert a.closed and engine.num_execution_contexts == 1
    with b:
        pass
    assert b.closed and engine.num_execution_contexts == 0


def test_engine_context_manager_closes(mlp_path):
    with streamrt.build(mlp_path, device="cpu", profiles=PROFILE) as e:
        ctx = e.create_execution_context()
    assert e.closed and ctx.closed
    assert "closed" in repr(e)
