"""streamrt.executorch end to end: PyTorch models (tiny random transformers, an MLP) exported
with streamrt.executorch.save, loaded by ExecuTorch's own runtime (executorch.runtime) and by
streamrt.executorch.load, outputs compared with eager PyTorch; budgets at export, at load and
live. Skips (visibly) without torch, executorch, onnxscript or the adapter library
(libstreamrt_executorch.so: next to the package, or $STREAMRT_EXECUTORCH_LIBRARY)."""

import os

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: streamrt.executorch is not tested")
pytest.importorskip("executorch.exir", reason="executorch is not installed: streamrt.executorch is not tested")
pytest.importorskip("onnxscript", reason="onnxscript (torch.onnx.export(dynamo=True)) is not installed")
try:
    import streamrt.executorch as se
except ImportError as e:  # the package was built without the adapter library
    pytest.skip(f"streamrt.executorch unavailable: {e}", allow_module_level=True)
from executorch.runtime import Runtime  # noqa: E402

import streamrt  # noqa: E402

ATOL, RTOL = 1e-4, 1e-4
SDPA = "aten.scaled_dot_product_attention.default"
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "executorch", "fixtures")


def _python_runtime_problem():
    """None when ExecuTorch's Python runtime runs this torch's tensors, else why not. Its bindings are
    compiled against one torch's C++ ABI though the wheel pins no torch: with another, execute fails
    (executorch 1.5.1 under torch 2.11: "tensor does not have a device"). Probed on a committed fixture."""
    method = Runtime.get().load_program(os.path.join(FIXTURES, "no_streaming.pte")).load_method("forward")
    try:
        method.execute([torch.zeros(2, 16)])
    except RuntimeError as e:
        return (f"ExecuTorch's Python runtime cannot run torch {torch.__version__}'s tensors "
                f"({str(e).splitlines()[0]}): its bindings were built against another torch")
    return None


PYTHON_RUNTIME_PROBLEM = _python_runtime_problem()
# Every test here executes through ExecuTorch's Python runtime or exports for one that does.
pytestmark = pytest.mark.skipif(PYTHON_RUNTIME_PROBLEM is not None, reason=PYTHON_RUNTIME_PROBLEM or "")


def tiny_transformer(kind):
    transformers = pytest.importorskip("transformers", reason="transformers is not installed")
    torch.manual_seed(0)
    common = dict(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                  max_position_embeddings=32, attn_implementation="sdpa")
    if kind == "bert":
        model = transformers.BertModel(transformers.BertConfig(**common))
    else:
        model = transformers.LlamaForCausalLM(transformers.LlamaConfig(num_key_value_heads=1, use_cache=False,
                                                                       **common))
    return model.eval(), (torch.randint(0, 64, (1, 8)),)


class Mlp(torch.nn.Module):
    """Two Linear layers around cumsum, which torch_executed_ops can leave to ExecuTorch."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(1)
        self.fc1, self.fc2 = torch.nn.Linear(64, 128), torch.nn.Linear(128, 32)

    def forward(self, x):
        return self.fc2(torch.cumsum(torch.relu(self.fc1(x)), dim=1) * 0.05)


def eager(model, inputs):
    with torch.no_grad():
        out = model(*inputs)
    return out if isinstance(out, torch.Tensor) else out[0]  # a ModelOutput: last_hidden_state / logits


@pytest.fixture(scope="module", params=["bert", "llama"])
def transformer_pte(request, tmp_path_factory):
    model, inputs = tiny_transformer(request.param)
    path = tmp_path_factory.mktemp("et") / f"{request.param}.pte"
    report = se.save(model, path, arg_inputs=inputs, weight_streaming=True, min_streamable_bytes="1KiB",
                     device="cpu")
    return path, report, eager(model, inputs), inputs


@pytest.fixture(scope="module")
def graph_break_pte(tmp_path_factory):
    model, x = Mlp().eval(), torch.randn(2, 64)
    path = tmp_path_factory.mktemp("et") / "graph_break.pte"
    report = se.save(model, path, (x,), weight_streaming=True, min_streamable_bytes="1KiB", device="cpu",
                     torch_executed_ops=["aten.cumsum.default"])
    return path, report, eager(model, (x,)), x


def close(got, want):
    return torch.allclose(got, want, atol=ATOL, rtol=RTOL)


def test_transformer_is_one_engine(transformer_pte):
    _, report, _, _ = transformer_pte
    assert len(report["engines"]) == 1 and report["executorch_ops"] == []
    assert report["engines"][0]["streamable_size"] > 0 and report["engines"][0]["device"] == "cpu"


def test_executorch_runtime_runs_streamrt_delegates(transformer_pte):
    path, _, want, inputs = transformer_pte
    assert Runtime.get().backend_registry.is_available("StreamRTBackend")
    method = Runtime.get().load_program(str(path)).load_method("forward")
    assert close(method.execute(list(inputs))[0], want)


@pytest.mark.parametrize("budget", [0, "50%", None], ids=["0", "50%", "auto"])
def test_load_time_budget(transformer_pte, budget):
    path, report, want, inputs = transformer_pte
    size = report["engines"][0]["streamable_size"]
    program = se.load(path, weight_streaming_budget=budget)
    assert program.streamable_weights_size == [size]
    # On the CPU the automatic budget is every streamable byte (memory is plentiful for 100 KiB).
    assert program.engine_budgets == [{0: 0, "50%": size // 2, None: size}[budget]]
    assert close(program.forward(*inputs)[0], want)


def test_attention_reaches_preprocess_whole(monkeypatch, tmp_path):
    """ops_to_not_decompose keeps SDPA one node: it is tagged, and the ONNX of the partition
    has an Attention node (opset 23) and no Softmax."""
    onnx = pytest.importorskip("onnx")
    from streamrt.executorch import _backend
    from streamrt.executorch._partitioner import op_name

    seen = []
    real = _backend.export_onnx

    def spy(edge_program, path, opset):
        real(edge_program, path, opset)
        seen.append({n.op_type for n in onnx.load(path, load_external_data=False).graph.node})
        seen.append({op_name(n) for n in edge_program.graph.nodes if n.op == "call_function"})

    monkeypatch.setattr(_backend, "export_onnx", spy)
    model, inputs = tiny_transformer("bert")
    se.save(model, tmp_path / "bert.pte", inputs, device="cpu")
    onnx_ops, edge_ops = seen
    assert SDPA in edge_ops and "Attention" in onnx_ops and "Softmax" not in onnx_ops


def test_graph_break_splits_a_total(graph_break_pte):
    path, report, want, x = graph_break_pte
    assert len(report["engines"]) == 2 and report["executorch_ops"] == ["aten.cumsum.default"]
    sizes = [e["streamable_size"] for e in report["engines"]]
    program = se.load(path, weight_streaming_budget="48KiB")
    assert program.streamable_weights_size == sizes
    budgets = program.engine_budgets
    assert sum(budgets) == 48 * 1024 and all(abs(b - 48 * 1024 * s / sum(sizes)) <= 1 for b, s in zip(budgets, sizes))
    assert close(program.forward(x)[0], want)
    program = se.load(path, weight_streaming_budget_per_engine="50%")
    assert program.engine_budgets == [s // 2 for s in sizes]


def test_baked_budget_and_its_override(tmp_path):
    model, x = Mlp().eval(), torch.randn(2, 64)
    path = tmp_path / "baked.pte"
    report = se.save(model, path, (x,), weight_streaming=True, min_streamable_bytes="1KiB", device="cpu",
                     weight_streaming_budget=16 * 1024)
    assert report["baked"] == {"weight_streaming_budget": "16384"}
    assert se.load(path).weight_streaming_budget == 16 * 1024
    # ExecuTorch's own loader applies the baked value too.
    method = Runtime.get().load_program(str(path)).load_method("forward")
    assert close(method.execute([x])[0], eager(model, (x,)))
    program = se.load(path, weight_streaming_budget=0)
    assert program.weight_streaming_budget == 0 and close(program.forward(x)[0], eager(model, (x,)))


def test_set_budget_is_live_and_scoped(graph_break_pte):
    path, report, want, x = graph_break_pte
    sizes = [e["streamable_size"] for e in report["engines"]]
    a, b = se.load(path, weight_streaming_budget=0), se.load(path, weight_streaming_budget=0)
    a.set_budget("auto")
    assert a.engine_budgets == sizes and b.engine_budgets == [0, 0], "set_budget acts on its program only"
    assert close(a.forward(x)[0], want) and close(b.forward(x)[0], want)
    a.set_budget(per_engine="25%")
    assert a.engine_budgets == [s // 4 for s in sizes]
    with pytest.raises(ValueError, match="8gb"):
        a.set_budget("8gb")
    assert a.engine_budgets == [s // 4 for s in sizes], "a refused change keeps the budget"
    with pytest.raises(TypeError):
        a.set_budget(1.5)
    # The process-wide form (ExecuTorch's set_option) reaches every loaded engine.
    se.set_budget(0)
    assert a.engine_budgets == [0, 0] and b.engine_budgets == [0, 0]
    assert int(se.get_option("num_engines")) >= 4


@pytest.mark.parametrize("kwargs, error", [
    ({"weight_streaming_budget": 1.5}, TypeError),
    ({"weight_streaming_budget": True}, TypeError),
    ({"weight_streaming_budget": [1024]}, TypeError),
    ({"weight_streaming_budget": -1}, ValueError),
    ({"weight_streaming_budget": 2**64}, ValueError),
    ({"weight_streaming_budget": "8gb"}, ValueError),
    ({"weight_streaming_budget": "101%"}, ValueError),
    ({"weight_streaming_budget": ""}, ValueError),
    ({"weight_streaming_budget": "1KiB", "weight_streaming_budget_per_engine": "1KiB"}, ValueError),
    ({"weight_streaming_budget": "1KiB", "weight_streaming": False}, ValueError),
    ({"device": "tpu"}, ValueError),
    ({"weight_quant": "int3"}, ValueError),
])
def test_bad_arguments_fail_at_export(tmp_path, kwargs, error):
    path = tmp_path / "never.pte"
    kwargs = {"weight_streaming": True, **kwargs}
    with pytest.raises(error):
        se.save(Mlp().eval(), path, (torch.randn(2, 64),), **kwargs)
    assert not path.exists()


def test_bad_budgets_fail_at_load(graph_break_pte):
    path = graph_break_pte[0]
    with pytest.raises(streamrt.InvalidArgumentError, match="weight_streaming_budget"):
        se.load(path, weight_streaming_budget="8GB")
    with pytest.raises(TypeError):
        se.load(path, weight_streaming_budget=2.0)


def test_bad_baked_budget_is_invalid_program(tmp_path):
    """A program whose compile spec holds a malformed budget (written past save's checks) fails
    to load with ExecuTorch's InvalidProgram (0x23): streamrt.InvalidProgramError from se.load."""
    from executorch.exir import EdgeCompileConfig, to_edge_transform_and_lower

    model, x = Mlp().eval(), torch.randn(2, 64)
    settings = se.CompileSettings(weight_streaming=True, budget=("weight_streaming_budget", "8gb"))
    edge = to_edge_transform_and_lower(torch.export.export(model, (x,)), partitioner=[se.StreamRTPartitioner(settings)],
                                       compile_config=EdgeCompileConfig(_check_ir_validity=False, _skip_dim_order=True))
    path = tmp_path / "bad.pte"
    path.write_bytes(edge.to_executorch().buffer)
    with pytest.raises(RuntimeError, match="0x:?23"):
        Runtime.get().load_program(str(path)).load_method("forward")
    with pytest.raises(streamrt.InvalidProgramError, match="weight_streaming_budget.*0x:?23"):
        se.load(path)  # streamrt's kind and StreamRTBackend's message, ExecuTorch's code kept


def test_fp16_with_weight_streaming_is_refused(tmp_path):
    # streamrt streams weights only of strongly typed networks (TensorRT's rule): export in fp16 instead.
    with pytest.raises(streamrt.InvalidArgumentError, match="strongly typed"):
        se.save(Mlp().eval(), tmp_path / "h.pte", (torch.randn(2, 64),), fp16=True, weight_streaming=True)


def test_fp16_engine(tmp_path):
    model, x = Mlp().eval(), torch.randn(2, 64)
    path = tmp_path / "h.pte"
    se.save(model, path, (x,), fp16=True, device="cpu")
    got = se.load(path).forward(x)[0]
    assert got.dtype == torch.float32 and torch.allclose(got, eager(model, (x,)), atol=2e-2, rtol=2e-2)


def test_compressed_weights_engine(tmp_path):
    """weight_quant reaches each partition's build: the engines stream int8 weights (a quarter of
    float32's bytes) and stay within int8 rounding of eager PyTorch."""
    model, x = Mlp().eval(), torch.randn(2, 64)
    plain = se.save(model, tmp_path / "f.pte", (x,), device="cpu", weight_streaming=True, min_streamable_bytes=0)
    report = se.save(model, tmp_path / "q.pte", (x,), device="cpu", weight_streaming=True, min_streamable_bytes=0,
                     weight_quant="int8")
    size = lambda r: sum(e["streamable_size"] for e in r["engines"])  # noqa: E731
    assert size(report) < 0.4 * size(plain)
    got = se.load(tmp_path / "q.pte", weight_streaming_budget=0).forward(x)[0]
    assert torch.allclose(got, eager(model, (x,)), atol=2e-2, rtol=2e-2)


def test_library_path_is_reported():
    assert os.path.isfile(se.library_path) and se.library_path.endswith("libstreamrt_executorch.so")
