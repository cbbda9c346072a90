"""Fixtures of the Python package's tests: small ONNX models made here with the onnx package, their
expected outputs computed with numpy, and paths into the committed test corpus."""

import os
import pathlib

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import streamrt  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "corpus" / "transformers"

IN, HIDDEN, OUT = 64, 128, 32


def mlp_weights(seed=0):
    rng = np.random.default_rng(seed)
    return {
        "w1": rng.standard_normal((IN, HIDDEN)).astype(np.float32) * 0.1,
        "b1": rng.standard_normal(HIDDEN).astype(np.float32) * 0.1,
        "w2": rng.standard_normal((HIDDEN, OUT)).astype(np.float32) * 0.1,
    }


def mlp_model(weights=None, batch="batch"):
    """y = relu(x @ w1 + b1) @ w2, x: [batch, 64] float32; z = argmax-free int64 side output: x's row count."""
    w = weights or mlp_weights()
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, IN])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, OUT])
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h0"]),
        helper.make_node("Add", ["h0", "b1"], ["h1"]),
        helper.make_node("Relu", ["h1"], ["h2"]),
        helper.make_node("MatMul", ["h2", "w2"], ["y"]),
    ]
    inits = [numpy_helper.from_array(v, k) for k, v in w.items()]
    graph = helper.make_graph(nodes, "mlp", [x], [y], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def mlp_reference(x, weights=None):
    w = weights or mlp_weights()
    return np.maximum(x @ w["w1"] + w["b1"], 0) @ w["w2"]


PROFILE = {"x": [(1, IN), (4, IN), (8, IN)]}


@pytest.fixture(scope="session")
def mlp_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("models") / "mlp.onnx"
    onnx.save(mlp_model(), str(path))
    return str(path)


@pytest.fixture(scope="session")
def streaming_engine_plan(tmp_path_factory, mlp_path):
    """A weight-streaming plan of the MLP (every weight streamable), saved once."""
    engine = streamrt.build(mlp_path, device="cpu", weight_streaming=True, profiles=PROFILE, min_streamable_bytes=0)
    path = tmp_path_factory.mktemp("plans") / "mlp_stream.plan"
    engine.save(str(path))
    return str(path)


@pytest.fixture
def engine(mlp_path):
    e = streamrt.build(mlp_path, device="cpu", profiles=PROFILE)
    yield e
    e.close()


@pytest.fixture
def streaming_engine(streaming_engine_plan):
    e = streamrt.load(streaming_engine_plan, device="cpu")
    yield e
    e.close()


def batch(n, seed=1):
    return np.random.default_rng(seed).standard_normal((n, IN)).astype(np.float32)


def cuda_or_skip():
    if not streamrt.has_cuda_backend():
        pytest.skip("this build of streamrt has no CUDA backend (STREAMRT_CUDA=OFF)")
    if not streamrt.cuda_available():
        pytest.skip("no CUDA GPU on this machine")
