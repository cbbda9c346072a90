"""streamrt.executorch with the engines' weights in ExecuTorch named data: save(..., weights="ptd")
writes model.pte and model.ptd; both ExecuTorch's runtime (load_program(pte, data_path=ptd)) and
streamrt.executorch.load(pte, data_path=ptd) run it like the inline program. weights="pte" keeps
them in the .pte's own named data. Corrupt inputs: the committed streaming_ptd fixture's .ptd
flipped and cut, and bad budget values, raise streamrt's errors (ValueError / TypeError for bad
arguments) or run as the intact program: never a crash. Skips (visibly) without torch, executorch,
onnxscript or the adapter library."""

import os

import pytest

# Importing test_executorch skips this module as well, visibly, without torch, executorch,
# onnxscript or the adapter library.
from test_executorch import PYTHON_RUNTIME_PROBLEM, Mlp, Runtime, se, streamrt, torch  # Mlp: two engines

pytestmark = pytest.mark.skipif(PYTHON_RUNTIME_PROBLEM is not None, reason=PYTHON_RUNTIME_PROBLEM or "")

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
    with pytest.raises(streamrt.InvalidProgramError, match="named data 'streamrt/"):
        se.load(d / "model.pte")


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


FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "executorch", "fixtures")


@pytest.fixture(scope="module")
def fixture_ptd():
    """streaming_ptd (scripts/make_executorch_fixtures.py): .pte path, .ptd bytes, input, the intact output."""
    pte = os.path.join(FIXTURES, "streaming_ptd.pte")
    with open(os.path.join(FIXTURES, "streaming_ptd.ptd"), "rb") as f:
        ptd = f.read()
    with open(os.path.join(FIXTURES, "streaming_ptd.input0.bin"), "rb") as f:
        x = torch.frombuffer(bytearray(f.read()), dtype=torch.float32).reshape(1, 128)
    prog = se.load(pte, data_path=os.path.join(FIXTURES, "streaming_ptd.ptd"))
    return pte, ptd, x, prog.forward(x)[0].clone()


def ptd_outcome(pte, data, x, want, path):
    """'refused' (a streamrt.Error at load or forward), or 'ran' with the intact output; anything
    else (another exception, another output) fails the test, a crash ends the process."""
    path.write_bytes(data)
    try:
        prog = se.load(pte, data_path=path, weight_streaming_budget="50%")
        got = prog.forward(x)[0]
    except streamrt.Error:
        return "refused"
    assert torch.equal(got, want)
    return "ran"


def test_corrupt_ptd_flipped_and_cut(fixture_ptd, tmp_path):
    """Every byte of the .ptd's first 512 (FlatTensor header, FlatBuffer, padding, the weights'
    start) flipped, then every 257th, and the file cut at 128 lengths."""
    pte, ptd, x, want = fixture_ptd
    path = tmp_path / "bad.ptd"
    engines = int(se.get_option("num_engines"))
    counts = {"refused": 0, "ran": 0}
    for i in list(range(512)) + list(range(512, len(ptd), 257)):
        flipped = bytearray(ptd)
        flipped[i] ^= 0xFF
        counts[ptd_outcome(pte, bytes(flipped), x, want, path)] += 1
    for n in range(0, len(ptd), len(ptd) // 128):
        assert ptd_outcome(pte, ptd[:n], x, want, path) == "refused", f"the .ptd cut at {n} bytes was accepted"
    assert counts["refused"] > sum(counts.values()) // 2, counts
    assert int(se.get_option("num_engines")) == engines, "a refused load left an engine"


def test_corrupt_weights_in_ptd_name_the_checksum(fixture_ptd, tmp_path):
    pte, ptd, _, _ = fixture_ptd
    flipped = bytearray(ptd)
    flipped[len(ptd) // 2] ^= 0x01  # inside the 64 KiB weight
    path = tmp_path / "bad.ptd"
    path.write_bytes(bytes(flipped))
    with pytest.raises(streamrt.InvalidProgramError, match="weights checksum mismatch"):
        se.load(pte, data_path=path)
    with pytest.raises(streamrt.Error):
        se.load(pte, data_path=tmp_path / "missing.ptd")


@pytest.mark.parametrize("kwargs, error", [
    ({"weight_streaming_budget": 1.5}, TypeError),
    ({"weight_streaming_budget": True}, TypeError),
    ({"weight_streaming_budget": b"1KiB"}, TypeError),
    ({"weight_streaming_budget": [1024]}, TypeError),
    ({"weight_streaming_budget_per_engine": {"a": 1}}, TypeError),
    ({"weight_streaming_budget": -1}, ValueError),
    ({"weight_streaming_budget": 2**64}, ValueError),
    ({"weight_streaming_budget": ""}, ValueError),
    ({"weight_streaming_budget": "8gb"}, ValueError),
    ({"weight_streaming_budget": "101%"}, ValueError),
    ({"weight_streaming_budget": "-1"}, ValueError),
    ({"weight_streaming_budget": " 1KiB"}, ValueError),
    ({"weight_streaming_budget": "1KiB\x00junk"}, ValueError),
    ({"weight_streaming_budget": "\uff15\uff10%"}, ValueError),  # fullwidth digits
    ({"weight_streaming_budget": "9" * 40}, ValueError),
    ({"weight_streaming_budget_per_engine": "16EiB"}, ValueError),
    ({"weight_streaming_budget": "1KiB", "weight_streaming_budget_per_engine": "1KiB"}, ValueError),
])
def test_bad_budget_values_at_load_and_live(fixture_ptd, kwargs, error):
    """Refused before anything loads, and by a loaded program's set_budget, which keeps its budget."""
    pte, _, x, want = fixture_ptd
    data = os.path.join(FIXTURES, "streaming_ptd.ptd")
    engines = int(se.get_option("num_engines"))
    with pytest.raises(error):
        se.load(pte, data_path=data, **kwargs)
    assert int(se.get_option("num_engines")) == engines
    prog = se.load(pte, data_path=data, weight_streaming_budget=0)
    with pytest.raises(error):
        prog.set_budget(kwargs.get("weight_streaming_budget"), per_engine=kwargs.get("weight_streaming_budget_per_engine"))
    assert prog.engine_budgets == [0]
    assert torch.equal(prog.forward(x)[0], want)
