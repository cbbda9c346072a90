"""PyTorch: building a torch module (torch.onnx.export, dynamo=True), torch tensors in and out."""

import numpy as np
import pytest

import streamrt
from conftest import IN, OUT, batch, cuda_or_skip, mlp_reference

torch = pytest.importorskip("torch", reason="torch is not installed: the torch path is not tested")
pytest.importorskip("onnxscript", reason="onnxscript (torch.onnx.export(dynamo=True)) is not installed")


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 8)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


@pytest.fixture(scope="module")
def torch_engine():
    module = Mlp().eval()
    engine = streamrt.build(module, example_inputs=(torch.randn(2, 16),), device="cpu",
                            profiles={"x": [(1, 16), (4, 16), (8, 16)]}, weight_streaming=True, min_streamable_bytes=0)
    return module, engine


def test_build_torch_module(torch_engine):
    module, engine = torch_engine
    (x_info,) = engine.inputs
    assert x_info.name == "x" and x_info.shape == (-1, 16) and x_info.max_shape == (8, 16)
    assert engine.streamable_weights_size > 0
    ctx = engine.create_execution_context()
    for n in (1, 5, 8):
        x = torch.randn(n, 16)
        (y,) = ctx.run({"x": x}).values()
        assert isinstance(y, torch.Tensor) and y.dtype == torch.float32 and tuple(y.shape) == (n, 8)
        torch.testing.assert_close(y, module(x).detach(), rtol=1e-5, atol=1e-5)


def test_torch_tensors_in_and_out(engine):
    ctx = engine.create_execution_context()
    x = batch(3)
    out = ctx.run({"x": torch.from_numpy(x)})["y"]
    assert isinstance(out, torch.Tensor) and out.device.type == "cpu"
    np.testing.assert_allclose(out.numpy(), mlp_reference(x), rtol=1e-5, atol=1e-5)
    # autograd-tracked and non-contiguous tensors are taken as they are
    grad = torch.from_numpy(x).requires_grad_(True)
    np.testing.assert_allclose(ctx.run({"x": grad})["y"].numpy(), mlp_reference(x), rtol=1e-5, atol=1e-5)
    t = torch.from_numpy(np.ascontiguousarray(x.T)).T
    assert not t.is_contiguous()
    np.testing.assert_allclose(ctx.run({"x": t})["y"].numpy(), mlp_reference(x), rtol=1e-5, atol=1e-5)
    with pytest.raises(streamrt.InvalidArgumentError, match="float64"):
        ctx.run({"x": torch.from_numpy(x).double()})


def test_torch_export_needs_example_inputs():
    with pytest.raises(ValueError, match="example_inputs"):
        streamrt.build(Mlp().eval(), device="cpu")


def test_module_with_torch_tensors(mlp_path, tmp_path):
    path = tmp_path / "mlp.pte"
    streamrt.compile(mlp_path, path, device="cpu", shapes={"x": [2, IN]})
    x = batch(2)
    (y,) = streamrt.Module(path).forward([torch.from_numpy(x)])
    assert isinstance(y, torch.Tensor) and tuple(y.shape) == (2, OUT)
    np.testing.assert_allclose(y.numpy(), mlp_reference(x), rtol=1e-5, atol=1e-5)


def test_cuda_tensors_on_a_cpu_engine(engine):
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU for torch")
    with pytest.raises(streamrt.InvalidArgumentError, match="cuda"):
        engine.create_execution_context().run({"x": torch.zeros(2, IN, device="cuda")})


def test_cuda_engine_with_torch_and_numpy(mlp_path):
    cuda_or_skip()
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    e = streamrt.build(mlp_path, device="cuda", profiles={"x": [(1, IN), (4, IN), (8, IN)]}, weight_streaming=True,
                       min_streamable_bytes=0)
    e.weight_streaming_budget = 0
    ctx = e.create_execution_context()
    x = batch(5)
    y = ctx.run({"x": x})["y"]  # numpy in, numpy out (copied to and from the device)
    np.testing.assert_allclose(y, mlp_reference(x), rtol=1e-4, atol=1e-4)
    xt = torch.from_numpy(x).cuda()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        yt = ctx.run({"x": xt})["y"]  # on torch's current stream, not synchronized
    stream.synchronize()
    assert yt.is_cuda
    np.testing.assert_allclose(yt.cpu().numpy(), mlp_reference(x), rtol=1e-4, atol=1e-4)
    assert ctx.last_run_stats.bytes_streamed > 0
