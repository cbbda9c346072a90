"""A real exported transformer from the committed corpus (tests/corpus/transformers), against its
committed expected outputs, with and without weight streaming."""

import numpy as np
import pytest
from onnx import TensorProto, numpy_helper

import streamrt
from conftest import CORPUS

CASES = ["gpt2_dynamo", "bert_torchscript"]


def load_pb(path):
    t = TensorProto()
    t.ParseFromString(path.read_bytes())
    return numpy_helper.to_array(t)


@pytest.mark.parametrize("case", CASES)
def test_corpus_case(case):
    d = CORPUS / case
    if not d.exists():
        pytest.skip(f"{d} is not in this checkout")
    import onnx

    names = [i.name for i in onnx.load(str(d / "model.onnx"), load_external_data=False).graph.input]
    sets = sorted(d.glob("test_data_set_*"))
    shapes = {n: [load_pb(s / f"input_{i}.pb").shape for s in sets] for i, n in enumerate(names)}
    # the profile spans the data sets' dims
    profiles = {n: [tuple(map(min, zip(*ss))), ss[0], tuple(map(max, zip(*ss)))] for n, ss in shapes.items()}
    engine = streamrt.build(str(d / "model.onnx"), device="cpu", weight_streaming=True, min_streamable_bytes=0,
                            profiles=profiles)
    assert [t.name for t in engine.inputs] == names
    outs = [t.name for t in engine.outputs]
    engine.weight_streaming_budget = 0
    ctx = engine.create_execution_context()
    for data in sets:
        inputs = {n: load_pb(data / f"input_{i}.pb") for i, n in enumerate(names)}
        got = ctx.run(inputs)
        for i, n in enumerate(outs):
            expected_path = data / f"output_{i}.pb"
            if expected_path.exists():
                np.testing.assert_allclose(got[n], load_pb(expected_path), rtol=1e-3, atol=1e-3)
        assert ctx.last_run_stats.bytes_streamed > 0


def test_kv_cache_in_place():
    """The transformers KV-cache decode step built with kv_cache_in_place: its pasts and presents say
    their capacity (the present's length at the profile's max), the rest stay dense, and run(),
    which takes dense arrays, refuses the engine by name."""
    d = CORPUS / "llama_decode_dynamo"
    if not d.exists():
        pytest.skip(f"{d} is not in this checkout")
    profiles = {"input_ids": [(1, 1), (1, 1), (1, 1)], "position_ids": [(1, 1), (1, 1), (1, 1)],
                "attention_mask": [(1, 2), (1, 9), (1, 64)]}
    for kv in ("0.key", "0.value", "1.key", "1.value"):
        profiles[f"past_key_values.{kv}"] = [(1, 2, 1, 8), (1, 2, 8, 8), (1, 2, 63, 8)]
    engine = streamrt.build(str(d / "model.onnx"), device="cpu", profiles=profiles, kv_cache_in_place=True)
    caps = {t.name: (t.seq_capacity, t.seq_axis) for t in list(engine.inputs) + list(engine.outputs)}
    for kv in ("0.key", "0.value", "1.key", "1.value"):
        assert caps[f"past_key_values.{kv}"] == (64, 2)
        assert caps[f"present.{kv}"] == (64, 2)
    assert caps["logits"] == (0, 0) and caps["input_ids"] == (0, 0)
    ctx = engine.create_execution_context()
    with pytest.raises(ValueError, match="stores 'past_key_values.0.key' as a KV cache with room for 64"):
        ctx.run({})


@pytest.mark.parametrize("case", ["bert_dynamo", "llama_decode_torchscript", "whisper_encoder_dynamo",
                                  "t5_encoder_torchscript"])
def test_calibrated_int8_on_real_exports(case):
    """GPTQ calibration (build(calibration=...)) works on real exports of several architectures and
    exporters: each one's test data set 0 as the calibration sample, every quantized MatMul calibrated,
    and its outputs on that input closer to float than the rounded plan's."""
    d = CORPUS / case
    if not d.exists():
        pytest.skip(f"{d} is not in this checkout")
    import onnx

    names = [i.name for i in onnx.load(str(d / "model.onnx"), load_external_data=False).graph.input]
    inputs = {n: load_pb(d / "test_data_set_0" / f"input_{i}.pb") for i, n in enumerate(names)}
    shapes = {n: a.shape for n, a in inputs.items()}
    plain = streamrt.build(str(d / "model.onnx"), device="cpu", shapes=shapes)
    want = plain.create_execution_context().run(inputs)
    errors = {}
    for label, extra in [("rounded", {}), ("gptq", {"calibration": [inputs]})]:
        engine = streamrt.build(str(d / "model.onnx"), device="cpu", shapes=shapes, weight_quant="int8", **extra)
        report = engine.build_report
        assert report["steps_quantized"] > 0
        assert report["steps_calibrated"] == (report["steps_quantized"] if extra else 0)
        got = engine.create_execution_context().run(inputs)
        errors[label] = max(float(np.abs(got[k].astype(np.float64) - want[k]).max())
                            for k in want if want[k].dtype.kind == "f")
    assert errors["gptq"] < errors["rounded"], errors
