#!/usr/bin/env python3
"""Writes ONNX backend-test cases of pre-quantized weights (issue 19: DequantizeLinear feeding MatMul / Gemm
weights, and onnxruntime's com.microsoft MatMulNBits), which streamrt reads compressed as WeightOnlyMatMul
steps (src/builder/import_quantized.cc):

    tests/fixtures/quant_import/fp32/<case>/model.onnx + test_data_set_0/input_<i>.pb, output_<j>.pb
    tests/fixtures/quant_import/fp16/<case>/...     float16 activations and scales
    tests/fixtures/quant_import/models/<case>/...   a real transformers export quantized by onnxruntime

The fp32 / fp16 cases are hand-written with onnx.helper (random codes, scales and zero points from fixed
seeds); the expected outputs are onnxruntime's (CPUExecutionProvider, basic graph optimizations: see run_ort) on
the model itself. onnxruntime's CPU
provider has no float16 MatMul / DequantizeLinear-to-float16 path on every machine, so each fp16 case is run
as its float32 twin (the same codes; the float16 scales, bias and inputs widened exactly) and the output
rounded once to float16, the rounding streamrt's float-accumulating kernels make too.

`models/` holds tests/corpus/transformers/llama_dynamo (torch.onnx dynamo export of transformers' Llama, random
small config) with every MatMul weight quantized by onnxruntime's own matmul_nbits_quantizer, block 32,
asymmetric: once as MatMulNBits (QOperator), once as opset-21 blocked uint4 DequantizeLinear + MatMul (QDQ);
expected outputs onnxruntime's on the quantized model, for both data sets of the corpus case (the
exporter's per-node metadata is dropped, for size).

Needs numpy, onnx >= 1.16 (INT4 tensors) and onnxruntime (with onnx_ir for the quantizer). No network.

    scripts/make_quant_import_cases.py [--out DIR]
"""
import argparse
import os
import shutil
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(ROOT, "tests", "fixtures", "quant_import")
LLAMA = os.path.join(ROOT, "tests", "corpus", "transformers", "llama_dynamo")

F32, F16 = TensorProto.FLOAT, TensorProto.FLOAT16


def run_ort(model, feeds):
    """onnxruntime at its basic graph optimizations: from the extended level on it fuses DequantizeLinear +
    MatMul into kernels that quantize the activations to 8 bits on the fly (MatMulIntegerToFloat), which
    differs from the model's float arithmetic by about 1e-2."""
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def write_case(out, name, model, data_sets):
    """data_sets: list of (inputs dict, outputs list); names from the graph."""
    d = os.path.join(out, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    onnx.save(model, os.path.join(d, "model.onnx"))
    in_names = [i.name for i in model.graph.input]
    out_names = [o.name for o in model.graph.output]
    for k, (feeds, outs) in enumerate(data_sets):
        sd = os.path.join(d, f"test_data_set_{k}")
        os.makedirs(sd)
        for i, n in enumerate(in_names):
            with open(os.path.join(sd, f"input_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(feeds[n], n).SerializeToString())
        for j, (n, a) in enumerate(zip(out_names, outs)):
            with open(os.path.join(sd, f"output_{j}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(a, n).SerializeToString())
    ops = sorted({n.op_type for n in model.graph.node})
    print(f"{name}: written ({', '.join(ops)})")


def np_type(t):
    return np.float16 if t == F16 else np.float32


# ---- hand-written graphs ------------------------------------------------------------------------

class Case:
    """One graph: inputs x [rows..., K] (float), y = weight op(x) (+ bias). Nodes and initializers are
    added by the builders below; `widen` gives the float32 twin of a float16 case."""

    def __init__(self, name, ftype, rows, k, opset=21, nbits=False):
        self.name, self.ftype, self.rows, self.k = name, ftype, rows, k
        self.opset, self.nbits = opset, nbits
        self.nodes, self.inits = [], []

    def tensor(self, name, array, onnx_type=None):
        if onnx_type is None:
            self.inits.append(numpy_helper.from_array(array, name))
        else:  # INT4 / UINT4: helper packs them two a byte
            self.inits.append(helper.make_tensor(name, onnx_type, array.shape, array.flatten().tolist()))
        return name

    def model(self, ftype, n):
        opsets = [helper.make_opsetid("", self.opset)]
        if self.nbits:
            opsets.append(helper.make_opsetid("com.microsoft", 1))
        inits = [widen(t) if ftype == F32 and self.ftype == F16 else t for t in self.inits]
        g = helper.make_graph(self.nodes, self.name, [helper.make_tensor_value_info("x", ftype, list(self.rows) + [self.k])],
                              [helper.make_tensor_value_info("y", ftype, list(self.rows) + [n])], inits)
        return helper.make_model(g, opset_imports=opsets, ir_version=10)


def widen(t):
    if t.data_type != F16:
        return t
    return numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float32), t.name)


def scales_for(rng, shape, code_std, k, ftype):
    s = rng.uniform(0.5, 1.5, size=shape) / (code_std * np.sqrt(k))
    return s.astype(np_type(ftype))


def dq_case(rng, name, *, ftype=F32, rows=(1,), k=64, n=48, qtype=np.int8, onnx4=None, layout="channel",
            block=0, zp=True, op="MatMul", transpose=False, bias=False):
    """DequantizeLinear(codes, scale, zp) -> [Transpose] -> MatMul / Gemm. `layout`: tensor | channel |
    blocked; `onnx4`: TensorProto.INT4 / UINT4 to store the codes as 4-bit tensors. The codes are stored
    [K, N] for MatMul, [N, K] for Gemm transB (and the other way round through a Transpose)."""
    c = Case(name, ftype, rows, k, opset=21 if (onnx4 or block or ftype == F16) else 13)  # float16 scales: 19+
    lo, hi = {np.int8: (-128, 127), np.uint8: (0, 255)}[qtype]
    if onnx4 is not None:
        lo, hi = (-8, 7) if onnx4 == TensorProto.INT4 else (0, 15)
    nk = (op == "Gemm") != transpose  # codes stored [N, K]
    shape = (n, k) if nk else (k, n)
    codes = rng.integers(lo, hi + 1, size=shape).astype(qtype)
    ch_axis, k_axis = (0, 1) if nk else (1, 0)
    code_std = (hi - lo) / np.sqrt(12)
    if layout == "tensor":
        pshape, attrs = (), {}
    elif layout == "channel":
        pshape, attrs = (n,), {"axis": ch_axis}
    else:
        blocks = (k + block - 1) // block
        pshape = (n, blocks) if nk else (blocks, n)
        attrs = {"axis": k_axis, "block_size": block}
    scale = scales_for(rng, pshape, code_std, k, ftype)
    inputs = [c.tensor("w_q", codes, onnx4), c.tensor("w_scale", scale)]
    if zp:
        mid = (lo + hi) // 2
        z = rng.integers(max(lo, mid - 3), min(hi, mid + 3) + 1, size=pshape).astype(qtype)
        inputs.append(c.tensor("w_zp", z, onnx4))
    c.nodes.append(helper.make_node("DequantizeLinear", inputs, ["w"], "dq", **attrs))
    w = "w"
    if transpose:
        c.nodes.append(helper.make_node("Transpose", ["w"], ["wt"], "t", perm=[1, 0]))
        w = "wt"
    b = rng.uniform(-0.5, 0.5, size=(n,)).astype(np_type(ftype)) if bias else None
    if op == "Gemm":
        ins = ["x", w] + ([c.tensor("b", b)] if bias else [])
        c.nodes.append(helper.make_node("Gemm", ins, ["y"], "gemm", transB=1 if nk != transpose else 0))
    elif bias:
        c.nodes.append(helper.make_node("MatMul", ["x", w], ["h"], "mm"))
        c.nodes.append(helper.make_node("Add", ["h", c.tensor("b", b)], ["y"], "add"))
    else:
        c.nodes.append(helper.make_node("MatMul", ["x", w], ["y"], "mm"))
    return c, n


def nbits_case(rng, name, *, ftype=F32, rows=(1,), k=64, n=48, block=32, zp="packed", bias=False):
    """com.microsoft MatMulNBits with 4-bit codes; zp: packed | float | None (8)."""
    c = Case(name, ftype, rows, k, opset=21, nbits=True)
    blocks = (k + block - 1) // block
    codes = rng.integers(0, 16, size=(n, blocks * block)).astype(np.uint8)
    packed = (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8).reshape(n, blocks, block // 2)
    scale = scales_for(rng, (n * blocks,), 15 / np.sqrt(12), k, ftype)
    inputs = [c.tensor("B", packed), c.tensor("scales", scale)]
    if zp == "packed":
        z = rng.integers(5, 11, size=(n, blocks + blocks % 2)).astype(np.uint8)
        inputs.append(c.tensor("zero_points", (z[:, 0::2] | (z[:, 1::2] << 4)).astype(np.uint8).reshape(-1)))
    elif zp == "float":
        inputs.append(c.tensor("zero_points", rng.integers(5, 11, size=(n * blocks,)).astype(np_type(ftype))))
    else:
        inputs.append("")
    if bias:
        inputs += ["", c.tensor("bias", rng.uniform(-0.5, 0.5, size=(n,)).astype(np_type(ftype)))]
    while inputs and inputs[-1] == "":
        inputs.pop()
    c.nodes.append(helper.make_node("MatMulNBits", ["x"] + inputs, ["y"], "mmnb", domain="com.microsoft", K=k, N=n, bits=4,
                                    block_size=block))
    return c, n


def emit(out, rng, case_n):
    c, n = case_n
    x = rng.uniform(-1, 1, size=list(c.rows) + [c.k]).astype(np_type(c.ftype))
    if c.ftype == F16:
        twin = c.model(F32, n)
        want = run_ort(twin, {"x": x.astype(np.float32)})[0].astype(np.float16)
    else:
        want = run_ort(c.model(F32, n), {"x": x})[0]
    write_case(out, c.name, c.model(c.ftype, n), [({"x": x}, [want])])


def hand_written(out):
    rng = np.random.default_rng(19)
    I4, U4 = TensorProto.INT4, TensorProto.UINT4
    fp32 = os.path.join(out, "fp32")
    for case in [
        dq_case(rng, "dq_int8_tensor", rows=(1,), layout="tensor", zp=False),
        dq_case(rng, "dq_int8_tensor_zp_rows12", rows=(12,), layout="tensor"),
        dq_case(rng, "dq_int8_channel", rows=(3,), k=200, n=70, zp=False),
        dq_case(rng, "dq_int8_channel_zp_rows9", rows=(9,), k=96, bias=True),
        dq_case(rng, "dq_uint8_channel_zp", rows=(1,), qtype=np.uint8),
        dq_case(rng, "dq_uint8_tensor_zp_gemm_bias", rows=(10,), qtype=np.uint8, layout="tensor", op="Gemm",
                bias=True),
        dq_case(rng, "dq_int8_channel_transpose", rows=(2, 5), k=80, transpose=True),
        dq_case(rng, "dq_uint8_channel_gemm_transpose", rows=(1,), qtype=np.uint8, op="Gemm", transpose=True),
        dq_case(rng, "dq_int4_block32", rows=(1,), k=128, onnx4=I4, layout="blocked", block=32),
        dq_case(rng, "dq_int4_block64_nozp_rows16", rows=(16,), k=200, n=40, onnx4=I4, layout="blocked", block=64,
                zp=False),
        dq_case(rng, "dq_uint4_block16_rows9", rows=(9,), k=72, onnx4=U4, layout="blocked", block=16),
        dq_case(rng, "dq_uint4_block128_gemm_bias", rows=(1,), k=256, n=33, onnx4=U4, layout="blocked", block=128,
                op="Gemm", bias=True),
        dq_case(rng, "dq_int4_block256", rows=(4,), k=512, n=24, onnx4=I4, layout="blocked", block=256),
        dq_case(rng, "dq_int4_channel", rows=(1,), k=100, onnx4=I4, layout="channel"),
        dq_case(rng, "dq_uint4_tensor_rows11", rows=(11,), k=64, onnx4=U4, layout="tensor"),
        nbits_case(rng, "nbits_zp_bias", rows=(1,), k=64, block=32, bias=True),
        nbits_case(rng, "nbits_nozp_rows12", rows=(12,), k=128, block=64, zp=None),
        nbits_case(rng, "nbits_float_zp_3d", rows=(2, 6), k=96, block=32, zp="float"),
        nbits_case(rng, "nbits_odd_blocks_k_tail", rows=(1,), k=200, n=20, block=64),
        nbits_case(rng, "nbits_block16_rows10", rows=(10,), k=80, block=16),
        nbits_case(rng, "nbits_block256", rows=(1,), k=512, n=16, block=256, bias=True),
    ]:
        emit(fp32, rng, case)
    fp16 = os.path.join(out, "fp16")
    for case in [
        dq_case(rng, "dq_int8_channel_zp", ftype=F16, rows=(1,), k=128),
        dq_case(rng, "dq_uint8_tensor_rows12_bias", ftype=F16, rows=(12,), qtype=np.uint8, layout="tensor", bias=True),
        dq_case(rng, "dq_int4_block32_gemm", ftype=F16, rows=(9,), k=96, onnx4=I4, layout="blocked", block=32,
                op="Gemm"),
        dq_case(rng, "dq_uint4_block64", ftype=F16, rows=(1,), k=128, onnx4=U4, layout="blocked", block=64),
        nbits_case(rng, "nbits_zp", ftype=F16, rows=(1,), k=128, block=32),
        nbits_case(rng, "nbits_bias_rows12", ftype=F16, rows=(12,), k=64, block=16, zp=None, bias=True),
    ]:
        emit(fp16, rng, case)


# ---- a real export, quantized by onnxruntime ------------------------------------------------------

def quantized_llama(out):
    from onnxruntime.quantization import QuantFormat
    from onnxruntime.quantization import matmul_nbits_quantizer as mq
    src = os.path.join(LLAMA, "model.onnx")
    sets = sorted(d for d in os.listdir(LLAMA) if d.startswith("test_data_set_"))
    base = onnx.load(src)
    in_names = [i.name for i in base.graph.input]
    feeds = []
    for s in sets:
        feeds.append({n: numpy_helper.to_array(onnx.load_tensor(os.path.join(LLAMA, s, f"input_{i}.pb")))
                      for i, n in enumerate(in_names)})
    for name, fmt in [("llama_dynamo_matmulnbits", QuantFormat.QOperator), ("llama_dynamo_qdq_uint4", QuantFormat.QDQ)]:
        cfg = mq.DefaultWeightOnlyQuantConfig(block_size=32, is_symmetric=False, quant_format=fmt)
        q = mq.MatMulNBitsQuantizer(onnx.load(src), algo_config=cfg)
        q.process()
        model = q.model.model
        for node in model.graph.node:  # the exporter's per-node provenance: most of the file's bytes
            del node.metadata_props[:]
        kinds = {n.op_type for n in model.graph.node}
        if "MatMulNBits" not in kinds and "DequantizeLinear" not in kinds:
            sys.exit(f"{name}: the quantizer left no quantized MatMul")
        write_case(os.path.join(out, "models"), name, model, [(f, run_ort(model, f)) for f in feeds])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args()
    for sub in ("fp32", "fp16", "models"):
        shutil.rmtree(os.path.join(args.out, sub), ignore_errors=True)
    hand_written(args.out)
    quantized_llama(args.out)


if __name__ == "__main__":
    main()
