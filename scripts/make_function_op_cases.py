#!/usr/bin/env python3
"""Writes ONNX backend-test cases for the ops the standard defines as functions and streamrt imports as
their bodies (opset 23 Attention, RotaryEmbedding; RMSNormalization maps onto streamrt's own op):
tests/fixtures/function_ops/<case>/model.onnx + test_data_set_0. Expected outputs come from onnxruntime
and are cross-checked with the onnx package's reference evaluator (a case on which they disagree is not
written). Needs onnx and onnxruntime (pip install -r scripts/corpus-requirements.txt)."""
import os
import shutil
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "fixtures", "function_ops")
rng = np.random.default_rng(23)
F = TensorProto.FLOAT


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def case(name, op, inputs, outputs, attrs, out_types=None):
    """inputs: list of (name, array or None for an omitted optional input); outputs: names ('' = omitted)."""
    ins = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
           for n, a in inputs if a is not None]
    node = helper.make_node(op, [n if a is not None else "" for n, a in inputs], outputs, **attrs)
    outs = [helper.make_tensor_value_info(o, F, None) for o in outputs if o]
    g = helper.make_graph([node], name, ins, outs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)], ir_version=10)
    feeds = {n: a for n, a in inputs if a is not None}
    try:
        got = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
        ref = ReferenceEvaluator(m).run(None, feeds)
    except Exception as e:  # noqa: BLE001 - a case a runtime refuses is reported, not written
        print(f"{name}: not written: {str(e).splitlines()[0][:200]}", file=sys.stderr)
        return False
    for o, a, b in zip([o for o in outputs if o], got, ref):
        if a.shape != b.shape or not np.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True):
            print(f"{name}: onnxruntime and the reference disagree on {o}; not written", file=sys.stderr)
            return False
    d = os.path.join(OUT, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    onnx.save(m, os.path.join(d, "model.onnx"))
    for i, (n, a) in enumerate(feeds.items()):
        open(os.path.join(d, "test_data_set_0", f"input_{i}.pb"), "wb").write(numpy_helper.from_array(a, n).SerializeToString())
    for i, (o, a) in enumerate(zip([o for o in outputs if o], got)):
        open(os.path.join(d, "test_data_set_0", f"output_{i}.pb"), "wb").write(numpy_helper.from_array(a, o).SerializeToString())
    print(f"{name}: written")
    return True


def attention_cases():
    B, Hq, Hkv, S, P, D = 2, 4, 2, 5, 3, 8
    q, k, v = f32(B, Hq, S, D), f32(B, Hq, S, D), f32(B, Hq, S, D)
    case("attention_4d", "Attention", [("Q", q), ("K", k), ("V", v)], ["Y"], {})
    case("attention_4d_causal_scale", "Attention", [("Q", q), ("K", k), ("V", v)], ["Y"], {"is_causal": 1, "scale": 0.2})
    kg, vg = f32(B, Hkv, S, D), f32(B, Hkv, S, D)
    case("attention_4d_gqa", "Attention", [("Q", q), ("K", kg), ("V", vg)], ["Y"], {})
    mask = f32(S, S)
    case("attention_4d_float_mask", "Attention", [("Q", q), ("K", k), ("V", v), ("attn_mask", mask)], ["Y"], {})
    bmask = rng.random((B, 1, S, S)) > 0.3
    bmask[1, 0, 2, :] = False  # a fully masked row: its output is 0
    case("attention_4d_bool_mask", "Attention", [("Q", q), ("K", k), ("V", v), ("attn_mask", bmask)], ["Y"], {})
    pk, pv = f32(B, Hkv, P, D), f32(B, Hkv, P, D)
    kq1, vq1, q1 = f32(B, Hkv, 1, D), f32(B, Hkv, 1, D), f32(B, Hq, 1, D)
    case("attention_4d_past_decode_gqa", "Attention",
         [("Q", q1), ("K", kq1), ("V", vq1), ("attn_mask", None), ("past_key", pk), ("past_value", pv)],
         ["Y", "present_key", "present_value"], {"is_causal": 1})
    kq, vq = f32(B, Hkv, S, D), f32(B, Hkv, S, D)
    case("attention_4d_past_prefill_causal", "Attention",
         [("Q", q), ("K", kq), ("V", vq), ("attn_mask", None), ("past_key", pk), ("past_value", pv)],
         ["Y", "present_key", "present_value"], {"is_causal": 1})
    case("attention_4d_past_mask", "Attention",
         [("Q", q), ("K", kq), ("V", vq), ("attn_mask", f32(B, 1, S, P + S)), ("past_key", pk), ("past_value", pv)],
         ["Y", "present_key", "present_value"], {})
    q3, k3, v3 = f32(B, S, Hq * D), f32(B, S, Hkv * D), f32(B, S, Hkv * D)
    case("attention_3d_gqa_causal", "Attention", [("Q", q3), ("K", k3), ("V", v3)], ["Y"],
         {"q_num_heads": Hq, "kv_num_heads": Hkv, "is_causal": 1})
    case("attention_4d_softcap_qk_output", "Attention", [("Q", q), ("K", k), ("V", v), ("attn_mask", mask)],
         ["Y", "", "", "qk"], {"softcap": 2.0, "qk_matmul_output_mode": 2})


def rotary_cases():
    B, H, S, D, MAXP = 2, 3, 4, 8, 16
    x = f32(B, H, S, D)
    pos = np.array([[0, 1, 2, 3], [5, 6, 7, 8]], dtype=np.int64)
    theta = np.arange(MAXP)[:, None] * (1.0 / 10000 ** (np.arange(0, D, 2) / D))[None, :]
    cos, sin = np.cos(theta).astype(np.float32), np.sin(theta).astype(np.float32)
    case("rotary_embedding_4d_positions", "RotaryEmbedding", [("X", x), ("cos", cos), ("sin", sin), ("pos", pos)], ["Y"], {})
    case("rotary_embedding_4d_interleaved", "RotaryEmbedding", [("X", x), ("cos", cos), ("sin", sin), ("pos", pos)], ["Y"],
         {"interleaved": 1})
    x3 = f32(B, S, H * D)
    cb, sb = cos[pos], sin[pos]  # [B, S, D/2]: no position_ids
    case("rotary_embedding_3d_no_positions", "RotaryEmbedding", [("X", x3), ("cos", cb), ("sin", sb)], ["Y"], {"num_heads": H})
    half = D // 2
    case("rotary_embedding_4d_partial", "RotaryEmbedding",
         [("X", x), ("cos", cos[:, : half // 2]), ("sin", sin[:, : half // 2]), ("pos", pos)], ["Y"],
         {"rotary_embedding_dim": half})
    case("rotary_embedding_3d_partial_interleaved", "RotaryEmbedding",
         [("X", x3), ("cos", cos[:, : half // 2]), ("sin", sin[:, : half // 2]), ("pos", pos)], ["Y"],
         {"num_heads": H, "rotary_embedding_dim": half, "interleaved": 1})


def rms_cases():
    x, scale = f32(2, 5, 16), f32(16)
    case("rms_normalization_23", "RMSNormalization", [("X", x), ("scale", scale)], ["Y"], {"epsilon": 1e-5})
    case("rms_normalization_23_axis", "RMSNormalization", [("X", x), ("scale", f32(5, 16))], ["Y"], {"axis": 1})


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    attention_cases()
    rotary_cases()
    rms_cases()
