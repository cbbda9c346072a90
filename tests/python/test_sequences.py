"""Sequence and optional inputs and outputs through ExecutionContext.run: lists of arrays in and out,
None for an empty optional, checked against numpy."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

import streamrt  # noqa: E402


def seq_model(tmp_path):
    """xs: seq(float32 [-1, 3]) -> total = ConcatFromSequence(xs, axis 0), count = SequenceLength(xs),
    grown = SequenceInsert(xs, extra) (a sequence output)."""
    seq_t = helper.make_tensor_sequence_value_info("xs", TensorProto.FLOAT, None)
    extra = helper.make_tensor_value_info("extra", TensorProto.FLOAT, [1, 3])
    nodes = [
        helper.make_node("ConcatFromSequence", ["xs"], ["total"], axis=0),
        helper.make_node("SequenceLength", ["xs"], ["count"]),
        helper.make_node("SequenceInsert", ["xs", "extra"], ["grown"]),
    ]
    outs = [
        helper.make_tensor_value_info("total", TensorProto.FLOAT, None),
        helper.make_tensor_value_info("count", TensorProto.INT64, []),
        helper.make_tensor_sequence_value_info("grown", TensorProto.FLOAT, None),
    ]
    g = helper.make_graph(nodes, "seq", [seq_t, extra], outs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "seq.onnx"
    onnx.save(m, str(path))
    return path


def optional_model(tmp_path):
    """maybe: optional(float32 tensor) -> has = OptionalHasElement(maybe)."""
    opt = helper.make_value_info(
        "maybe", helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [2])))
    g = helper.make_graph([helper.make_node("OptionalHasElement", ["maybe"], ["has"])], "opt", [opt],
                          [helper.make_tensor_value_info("has", TensorProto.BOOL, [])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    path = tmp_path / "opt.onnx"
    onnx.save(m, str(path))
    return path


def test_sequence_in_and_out(tmp_path):
    engine = streamrt.build(str(seq_model(tmp_path)), device="cpu")
    kinds = {t.name: (t.kind, t.element_dtype) for t in engine.inputs + engine.outputs}
    assert kinds["xs"] == ("sequence", "float32")
    assert kinds["grown"] == ("sequence", "float32")
    assert kinds["total"][0] == "tensor"
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((n, 3)).astype(np.float32) for n in (2, 1, 4)]
    extra = rng.standard_normal((1, 3)).astype(np.float32)
    out = engine.create_execution_context().run({"xs": xs, "extra": extra})
    np.testing.assert_array_equal(out["total"], np.concatenate(xs, axis=0))
    assert int(out["count"]) == 3
    assert isinstance(out["grown"], list) and len(out["grown"]) == 4
    for got, want in zip(out["grown"], xs + [extra]):
        np.testing.assert_array_equal(got, want)


def test_sequence_input_must_be_a_list(tmp_path):
    engine = streamrt.build(str(seq_model(tmp_path)), device="cpu")
    ctx = engine.create_execution_context()
    with pytest.raises(ValueError, match="xs"):
        ctx.run({"xs": None, "extra": np.zeros((1, 3), np.float32)})
    with pytest.raises(ValueError, match="list of arrays"):
        ctx.run({"xs": np.zeros((2, 3), np.float32), "extra": np.zeros((1, 3), np.float32)})


def test_optional_input_none_and_present(tmp_path):
    engine = streamrt.build(str(optional_model(tmp_path)), device="cpu")
    assert engine.inputs[0].kind == "optional tensor"
    ctx = engine.create_execution_context()
    assert not bool(ctx.run({"maybe": None})["has"])
    assert bool(ctx.run({"maybe": np.array([1, 2], np.float32)})["has"])
