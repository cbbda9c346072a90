"""Outputs whose dims depend on the input data (allocated at the planned max, narrowed after the run)."""

import numpy as np
import pytest
from onnx import TensorProto, helper

import streamrt


@pytest.fixture(scope="module")
def unique_engine():
    x = helper.make_tensor_value_info("x", TensorProto.INT64, [8])
    y = helper.make_tensor_value_info("y", TensorProto.INT64, ["u"])
    node = helper.make_node("Unique", ["x"], ["y"], sorted=1)
    model = helper.make_model(helper.make_graph([node], "unique", [x], [y]),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return streamrt.build(model.SerializeToString(), device="cpu")


@pytest.mark.parametrize("values", [[3, 1, 3, 2, 1, 7, 7, 7], [5] * 8, list(range(8))])
def test_data_dependent_output(unique_engine, values):
    x = np.array(values, np.int64)
    ctx = unique_engine.create_execution_context()
    y = ctx.run({"x": x})["y"]
    np.testing.assert_array_equal(y, np.unique(x))


def test_data_dependent_output_torch(unique_engine):
    torch = pytest.importorskip("torch", reason="torch is not installed")
    x = torch.tensor([4, 4, 0, 9, 0, 4, 1, 1])
    y = unique_engine.create_execution_context().run({"x": x})["y"]
    assert isinstance(y, torch.Tensor)
    assert y.tolist() == [0, 1, 4, 9]
