"""streamrt.executorch with the engines' weights in ExecuTorch named data: save(..., weights="ptd")
writes model.pte and model.ptd; both ExecuTorch's runtime (load_program(pte, data_path=ptd)) and
streamrt.executorch.load(pte, data_path=ptd) run it like the inline program. weights="pte" keeps
them in the .pte's own named data. Skips (visibly) without torch, executorch, onnxscript or the
adapter library."""

import os

import pytest

# Importing test_executorch skips this module as well, visibly, without torch, executorch,
# onnxscript or the adapter library.
from test_executorch import Mlp, Runtime, se, torch  # Mlp: two Linear layers around cumsum (two engines)

OPTIONS = dict(weight_streaming=True, min_streamable_bytes="1KiB", device="cpu",
               torch_executed_ops=["aten.cumsum.default"])


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """The model saved inline and with weights="ptd", its input and eager output."""
    d = tmp_path_factory.mktemp("ptd")
    model, x = Mlp().eval(), torch.randn(2, 64)
    with torch.no_grad():
        want = model(x)
    inline = se.save(model, d / "inline.pte", (x,), **OPTIONS)
    ptd = se.save(model, d / "model.pte", (x,), weights="ptd", **OPTIONS)
    return d, x, want, inline, ptd


def test_save_writes_the_weights_into_a_ptd_beside_the_pte(saved):
    d, _, _, inline, report = saved
    assert report["weights"] == "ptd" and report["ptd"] == str(d / "model.ptd")
    assert len(report["engines"]) == 2 and report["engines"] == inline["engines"]
    streamable = sum(e["streamable_size"] for e in report["engines"])
    assert streamable >= (64 * 128 + 128 * 32) * 4
    assert os.path.getsize(d / "model.ptd") >= streamable
    # What left the .pte is the weights.
    assert os.path.getsize(d / "inline.pte") - os.path.getsize(d / "model.pte") >= streamable


def test_executorch_runtime_runs_it_with_the_ptd(saved):
    d, x, want, _, _ = saved
    inline = Runtime.get().load_program(str(d / "inline.pte")).load_method("forward").execute([x])[0]
    program = Runtime.get().load_program(str(d / "model.pte"), data_path=str(d / "model.ptd"))
    got = program.load_method("forward").execute([x])[0]
    assert torch.allclose(got, want, atol=1e-4, rtol=1e-4)
    assert torch.equal(got, inline)  # the same engines, reading the same bytes


def test_streamrt_load_with_the_ptd_at_budgets(saved):
    d, x, want, _, report = saved
    sizes = [e["streamable_size"] for e in report["engines"]]
    prog = se.load(d / "model.pte", data_path=d / "model.ptd", weight_streaming_budget="50%")
    assert prog.num_engines == 2 and prog.streamable_weights_size == sizes
    assert prog.weight_streaming_budget == sum(sizes) // 2
    first = prog.forward(x)[0]
    assert torch.allclose(first, want, atol=1e-4, rtol=1e-4)
    prog.set_budget(0)
    assert prog.engine_budgets == [0, 0]
    assert torch.equal(prog.forward(x)[0], first)


def test_without_the_ptd_loading_fails_naming_the_key(saved):
    d = saved[0]
    with pytest.raises(Exception) as info:
        se.load(d / "model.pte").forward(torch.zeros(2, 64))
    assert not isinstance(info.value, AssertionError)


def test_weights_in_the_ptes_own_named_data(tmp_path):
    model, x = Mlp().eval(), torch.randn(2, 64)
    with torch.no_grad():
        want = model(x)
    report = se.save(model, tmp_path / "m.pte", (x,), weights="pte", **OPTIONS)
    assert report["weights"] == "pte" and "ptd" not in report
    assert not (tmp_path / "m.ptd").exists()
    got = se.load(tmp_path / "m.pte", weight_streaming_budget=0).forward(x)[0]
    assert torch.allclose(got, want, atol=1e-4, rtol=1e-4)


def test_bad_weights_options_raise_before_exporting(tmp_path):
    x = torch.randn(2, 64)
    with pytest.raises(ValueError, match="weights"):
        se.save(Mlp().eval(), tmp_path / "m.pte", (x,), weights="external", **OPTIONS)
    with pytest.raises(ValueError, match="ptd_name"):
        se.export(Mlp().eval(), (x,), weights="ptd", ptd_name="a/b", **OPTIONS)
    assert not (tmp_path / "m.pte").exists()
