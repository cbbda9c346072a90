"""build(weight_quant=..., calibration=...): compressed weights from Python, rounded or calibrated by GPTQ."""

import numpy as np
import pytest

import streamrt
from conftest import IN, PROFILE, mlp_reference


def correlated(n, seed):
    """Rows of one low-rank structure (fixed mix), some channels far larger: what GPTQ exploits."""
    mix = np.random.default_rng(42).standard_normal((8, IN)).astype(np.float32)
    z = np.random.default_rng(seed).standard_normal((n, 8)).astype(np.float32)
    x = z @ mix + 0.05 * np.random.default_rng(seed + 1).standard_normal((n, IN)).astype(np.float32)
    x[:, ::8] *= 6
    return x


def error(engine, x):
    with engine.create_execution_context() as ctx:
        y = ctx.run({"x": x})["y"]
    return float(((y - mlp_reference(x)) ** 2).sum())


def test_calibrated_int4_is_closer_to_float_than_rounded(mlp_path):
    rounded = streamrt.build(mlp_path, device="cpu", profiles=PROFILE, weight_quant="int4:32")
    calibration = [{"x": correlated(8, s)} for s in range(6)]
    gptq = streamrt.build(mlp_path, device="cpu", profiles=PROFILE, weight_quant="int4:32", calibration=calibration)
    assert rounded.build_report["steps_quantized"] == 2
    assert rounded.build_report["steps_calibrated"] == 0
    assert gptq.build_report["steps_calibrated"] == 2
    x = correlated(8, 100)  # rows the calibration never saw
    assert error(gptq, x) < 0.7 * error(rounded, x)


def test_weight_quant_and_calibration_errors(mlp_path):
    with pytest.raises(ValueError, match="weight_quant: .*int4:GROUP"):
        streamrt.build(mlp_path, device="cpu", profiles=PROFILE, weight_quant="int3")
    with pytest.raises(ValueError, match="calibration: needs weight_quant"):
        streamrt.build(mlp_path, device="cpu", profiles=PROFILE, calibration=[{"x": correlated(4, 0)}])
    with pytest.raises(TypeError, match="calibration: expected a list"):
        streamrt.build(mlp_path, device="cpu", profiles=PROFILE, weight_quant="int8", calibration={"x": 1})
    with pytest.raises(TypeError, match=r"calibration\[1\]: expected a dict"):
        streamrt.build(mlp_path, device="cpu", profiles=PROFILE, weight_quant="int8",
                       calibration=[{"x": correlated(4, 0)}, correlated(4, 1)])
    with pytest.raises(streamrt.InvalidArgumentError, match="calibration sample 0 has no tensor for input 'x'"):
        streamrt.build(mlp_path, device="cpu", profiles=PROFILE, weight_quant="int8",
                       calibration=[{"y": correlated(4, 0)}])


# Relative squared error of the outputs on this MLP at most (measured: int8 9e-5, fp8 1.5e-3, int4:32 1.5e-2):
# about 2^-8 and 2^-4 relative steps for the 8-bit codes, 1/15 of a group's range for int4.
@pytest.mark.parametrize("scheme,bound", [("int8", 5e-4), ("fp8", 5e-3), ("int4:32", 5e-2)])
def test_each_scheme_stays_near_the_float_model(mlp_path, scheme, bound):
    engine = streamrt.build(mlp_path, device="cpu", profiles=PROFILE, weight_quant=scheme)
    assert engine.build_report["steps_quantized"] == 2
    x = correlated(8, 7)
    assert error(engine, x) < bound * float((mlp_reference(x) ** 2).sum())
