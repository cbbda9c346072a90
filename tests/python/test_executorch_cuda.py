"""streamrt.executorch with CUDA engines: programs exported with device="cuda" (tiny random
transformers, the two-engine MLP with a graph break, fp16, int4 weights, weights in a .ptd), run by
ExecuTorch's own C++ runtime (examples/executorch_run: Module(pte[, ptd]).load(options).forward) at
budgets 0, 50 % and automatic, outputs against eager PyTorch and identical across budgets; where
ExecuTorch's Python runtime runs this torch's tensors, also through it (streamrt.executorch.load,
set_budget live). The program's tensors are ExecuTorch's (host memory): the engines copy inputs to
the GPU and outputs back. Skips (visibly) without a GPU, without the runner
($STREAMRT_ET_RUN, else build-et/bin/streamrt_et_run), or without what test_executorch.py needs."""

import os
import pathlib
import re
import subprocess

import numpy as np
import pytest

# Imported module by module: test_executorch's own skip marks stay in that module, but its import
# skips this one as well, visibly, without torch, executorch, onnxscript or the adapter library.
from test_executorch import PYTHON_RUNTIME_PROBLEM, Mlp, Runtime, eager, se, tiny_transformer, torch  # noqa: E402

import streamrt  # noqa: E402

if not (streamrt._C.cuda_available() and torch.cuda.is_available()):
    pytest.skip("no CUDA device (or streamrt built without CUDA): the CUDA engines of streamrt.executorch "
                "are not tested", allow_module_level=True)

REPO = pathlib.Path(__file__).resolve().parents[2]
RUNNER = os.environ.get("STREAMRT_ET_RUN") or str(REPO / "build-et" / "bin" / "streamrt_et_run")
# float32 on the GPU: cuBLASLt and the fused attention accumulate in another order than PyTorch's CPU.
ATOL, RTOL = 2e-3, 2e-3
STREAMING = dict(weight_streaming=True, min_streamable_bytes="1KiB", device="cuda")
python_runtime = pytest.mark.skipif(PYTHON_RUNTIME_PROBLEM is not None, reason=PYTHON_RUNTIME_PROBLEM or "")
needs_runner = pytest.mark.skipif(not os.access(RUNNER, os.X_OK),
                                  reason=f"no streamrt_et_run at {RUNNER} (make test-executorch, or $STREAMRT_ET_RUN)")


def et_run(pte, inputs, want, tmp, *, budget=None, per_engine=None, data=None, atol=ATOL, rtol=RTOL):
    """Runs `pte` through ExecuTorch's C++ Module (streamrt_et_run) with the load-time budget, checking
    its first output against `want`. Returns (per-engine (budget, streamable) pairs, the output)."""
    tmp.mkdir(parents=True, exist_ok=True)
    args = [RUNNER, str(pte), "--expect", str(tmp / "want.npy"), "--atol", str(atol), "--rtol", str(rtol),
            "--save-outputs", str(tmp)]
    np.save(tmp / "want.npy", want.detach().numpy())
    for i, x in enumerate(inputs):
        np.save(tmp / f"in{i}.npy", x.detach().numpy())
        args += ["--input", str(tmp / f"in{i}.npy")]
    args += ["--data", str(data)] if data else []
    args += ["--budget", str(budget)] if budget is not None else []
    args += ["--budget-per-engine", str(per_engine)] if per_engine is not None else []
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{' '.join(args)}: rc {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    engines = [(int(b), int(s)) for b, s in re.findall(r"engine \d+: budget (\d+) of (\d+) bytes", proc.stdout)]
    return engines, np.load(tmp / "output0.npy")


@pytest.fixture(scope="module", params=["bert", "llama"])
def transformer_pte(request, tmp_path_factory):
    model, inputs = tiny_transformer(request.param)
    path = tmp_path_factory.mktemp("et_cuda") / f"{request.param}.pte"
    report = se.save(model, path, arg_inputs=inputs, **STREAMING)
    return path, report, eager(model, inputs), inputs


@pytest.fixture(scope="module")
def graph_break_pte(tmp_path_factory):
    model, x = Mlp().eval(), torch.randn(2, 64)
    path = tmp_path_factory.mktemp("et_cuda") / "graph_break.pte"
    report = se.save(model, path, (x,), torch_executed_ops=["aten.cumsum.default"], **STREAMING)
    return path, report, eager(model, (x,)), x


def test_engines_are_built_for_cuda(transformer_pte):
    _, report, _, _ = transformer_pte
    assert report["device"] == "cuda" and len(report["engines"]) == 1
    assert report["engines"][0]["device"] == "cuda" and report["engines"][0]["streamable_size"] > 0


@needs_runner
def test_executorch_cpp_runtime_at_load_time_budgets(transformer_pte, tmp_path):
    """0, 50 % and automatic (all of it: the GPU has room for a few hundred KiB): the budget in force
    is what was asked, the output is PyTorch's within float32 tolerance and the same bytes at every budget."""
    path, report, want, inputs = transformer_pte
    size = report["engines"][0]["streamable_size"]
    outputs = []
    for budget, expected in ((0, 0), ("50%", size // 2), (None, size)):
        engines, out = et_run(path, inputs, want, tmp_path / str(expected), budget=budget)
        assert engines == [(expected, size)]
        outputs.append(out)
    assert all(np.array_equal(o, outputs[0]) for o in outputs), "streaming changes where weights live, not the result"


@needs_runner
def test_graph_break_splits_the_budget_on_the_gpu(graph_break_pte, tmp_path):
    path, report, want, x = graph_break_pte
    assert len(report["engines"]) == 2 and report["executorch_ops"] == ["aten.cumsum.default"]
    sizes = [e["streamable_size"] for e in report["engines"]]
    engines, split = et_run(path, (x,), want, tmp_path / "split", budget="48KiB")
    budgets = [b for b, _ in engines]
    assert [s for _, s in engines] == sizes and sum(budgets) == 48 * 1024
    assert all(abs(b - 48 * 1024 * s / sum(sizes)) <= 1 for b, s in zip(budgets, sizes))
    engines, half = et_run(path, (x,), want, tmp_path / "half", per_engine="50%")
    assert [b for b, _ in engines] == [s // 2 for s in sizes]
    assert np.array_equal(split, half)


@needs_runner
def test_fp16_cuda_engine(tmp_path):
    model, x = Mlp().eval(), torch.randn(2, 64)
    report = se.save(model, tmp_path / "h.pte", (x,), fp16=True, device="cuda")
    assert report["engines"][0]["device"] == "cuda"
    et_run(tmp_path / "h.pte", (x,), eager(model, (x,)), tmp_path / "run", atol=2e-2, rtol=2e-2)


@needs_runner
def test_int4_weights_on_the_gpu(tmp_path):
    """weight_quant="int4:32" on CUDA: the engines stream a fraction of float32's bytes and the GPU's
    dequantizing kernels stay within int4 rounding of eager PyTorch."""
    model, x = Mlp().eval(), torch.randn(2, 64)
    plain = se.save(model, tmp_path / "f.pte", (x,), weight_streaming=True, min_streamable_bytes=0, device="cuda",
                    torch_executed_ops=["aten.cumsum.default"])
    report = se.save(model, tmp_path / "q.pte", (x,), weight_streaming=True, min_streamable_bytes=0, device="cuda",
                     torch_executed_ops=["aten.cumsum.default"], weight_quant="int4:32")
    size = lambda r: sum(e["streamable_size"] for e in r["engines"])  # noqa: E731
    assert size(report) < 0.25 * size(plain)
    want = eager(model, (x,))
    engines, _ = et_run(tmp_path / "q.pte", (x,), want, tmp_path / "run", budget=0,
                        atol=0.2 * float(want.abs().max()), rtol=0)
    assert [b for b, _ in engines] == [0, 0]


@needs_runner
def test_weights_in_a_ptd_stream_to_the_gpu(tmp_path):
    model, x = Mlp().eval(), torch.randn(2, 64)
    report = se.save(model, tmp_path / "m.pte", (x,), weights="ptd", torch_executed_ops=["aten.cumsum.default"],
                     **STREAMING)
    assert report["weights"] == "ptd"
    engines, _ = et_run(tmp_path / "m.pte", (x,), eager(model, (x,)), tmp_path / "run", budget=0,
                        data=tmp_path / "m.ptd")
    assert [b for b, _ in engines] == [0, 0]


@python_runtime
def test_executorch_python_runtime_runs_cuda_engines(transformer_pte):
    path, _, want, inputs = transformer_pte
    method = Runtime.get().load_program(str(path)).load_method("forward")
    first = method.execute(list(inputs))[0]
    assert first.device.type == "cpu" and torch.allclose(first, want, atol=ATOL, rtol=RTOL)
    assert torch.equal(method.execute(list(inputs))[0], first), "a second run gives the same bytes"


@python_runtime
def test_budget_changes_live_on_the_gpu(graph_break_pte):
    path, report, want, x = graph_break_pte
    sizes = [e["streamable_size"] for e in report["engines"]]
    program = se.load(path, weight_streaming_budget=0)
    at_zero = program.forward(x)[0]
    assert torch.allclose(at_zero, want, atol=ATOL, rtol=RTOL)
    program.set_budget("auto")
    assert program.engine_budgets == sizes
    assert torch.equal(program.forward(x)[0], at_zero)
