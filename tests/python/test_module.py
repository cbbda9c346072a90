"""Program files (.pte) written by streamrt.compile, run through streamrt.Module."""

import threading

import numpy as np
import pytest

import streamrt
from conftest import IN, OUT, batch, mlp_reference

BACKEND = "StreamRTBackend"


@pytest.fixture(scope="module")
def program(tmp_path_factory, mlp_path):
    path = tmp_path_factory.mktemp("programs") / "mlp.pte"
    report = streamrt.compile(mlp_path, str(path), device="cpu", shapes={"x": [4, IN]}, weight_streaming=True,
                              min_streamable_bytes=0)
    assert len(report["engines"]) == 1 and report["kernel_calls"] == []
    assert report["engines"][0]["streamable_size"] > 0
    return str(path)


def test_forward_matches_numpy(program):
    m = streamrt.Module(program, backend_options={BACKEND: {"weight_streaming_budget": "50%"}})
    assert m.method_names == ["forward"]
    x = batch(4)
    (y,) = m.forward([x])
    assert isinstance(y, np.ndarray) and y.shape == (4, OUT)
    np.testing.assert_allclose(y, mlp_reference(x), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(m.execute("forward", [x])[0], y)


def test_backend_options(program):
    m = streamrt.Module(program, backend_options={BACKEND: {"weight_streaming_budget": "0"}})
    got = m.get_backend_option(BACKEND, ["num_engines", "weight_streaming_budget", "streamable_weights_size"])
    assert got["num_engines"] == 1 and got["weight_streaming_budget"] == "0"
    size = int(got["streamable_weights_size"])
    assert size > 0
    m.set_backend_option(BACKEND, {"weight_streaming_budget": "100%"})
    assert m.get_backend_option(BACKEND, ["weight_streaming_budget"])["weight_streaming_budget"] == str(size)
    x = batch(4, seed=3)
    np.testing.assert_allclose(m.forward([x])[0], mlp_reference(x), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="8GB"):
        m.set_backend_option(BACKEND, {"weight_streaming_budget": "8GB"})
    with pytest.raises(streamrt.NotFoundError):
        m.set_backend_option("NoSuchBackend", {"weight_streaming_budget": "1GiB"})
    with pytest.raises(TypeError):
        m.set_backend_option(BACKEND, {"weight_streaming_budget": 0.5})


def test_bad_load_time_budget(program):
    with pytest.raises(ValueError, match="8GB"):
        streamrt.Module(program, backend_options={BACKEND: {"weight_streaming_budget": "8GB"}})


def test_graph_break(mlp_path, tmp_path):
    """Relu forced to a portable kernel: two engines around a kernel call, same result."""
    path = tmp_path / "split.pte"
    report = streamrt.compile(mlp_path, path, device="cpu", shapes={"x": [2, IN]}, fallback_ops=["Relu"])
    assert report["kernel_calls"] == ["Relu"] and len(report["engines"]) == 2
    x = batch(2, seed=9)
    with streamrt.Module(path) as m:
        np.testing.assert_allclose(m.forward([x])[0], mlp_reference(x), rtol=1e-5, atol=1e-5)
    with pytest.raises(streamrt.InvalidStateError, match="closed"):
        m.forward([x])


def test_module_errors(program, tmp_path):
    with pytest.raises(streamrt.IoError):
        streamrt.Module(str(tmp_path / "missing.pte"))
    junk = tmp_path / "junk.pte"
    junk.write_bytes(b"junk" * 64)
    with pytest.raises(streamrt.InvalidProgramError):
        streamrt.Module(str(junk))
    m = streamrt.Module(program)
    with pytest.raises(streamrt.Error) as info:
        m.forward([batch(4).astype(np.float64)])
    assert "float" in str(info.value)
    with pytest.raises(streamrt.Error):
        m.forward([batch(3)])  # the program's input is 4x64
    with pytest.raises(streamrt.Error):
        m.forward([])
    with pytest.raises(streamrt.NotFoundError):
        m.execute("backward", [batch(4)])


def test_forward_on_threads(program):
    m = streamrt.Module(program)
    results = []

    def work(seed):
        for i in range(10):
            x = batch(4, seed=seed * 50 + i)
            results.append(np.allclose(m.forward([x])[0], mlp_reference(x), rtol=1e-5, atol=1e-5))

    threads = [threading.Thread(target=work, args=(s,)) for s in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 20 and all(results)
