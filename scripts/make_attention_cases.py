#!/usr/bin/env python3
"""Writes the attention test cases in tests/fixtures/attention/ (ONNX backend-test layout).

Each case is a small ONNX model of the unfused attention chain as exporters write it,
MatMul(Q, K^T) -> scale -> mask -> Softmax -> MatMul(V), with graph inputs Q, K, V (and a mask when
it is an input). streamrt's builder fuses the chain into its Attention op, so running the cases runs
that op: on the CPU (ctest) and on CUDA (the lead's GPU run, against the CPU):

    streamrt onnx-test tests/fixtures/attention/fp32 --rtol 1e-4 --atol 1e-5
    streamrt onnx-test tests/fixtures/attention/fp16 --rtol 4e-3 --atol 2e-3
    streamrt onnx-test tests/fixtures/attention --device cuda --against-cpu --rtol 4e-3 --atol 2e-3
    streamrt onnx-test tests/fixtures/attention/fp32 --bf16 --device cuda --against-cpu --rtol 2e-2 --atol 2e-2

Reference outputs are computed here with numpy in float64 from the (rounded) inputs, with the
unfused graph's semantics (Where replaces masked scores by its fill, Add adds the mask), then
rounded to the output type. With onnxruntime installed, every case is also run by it and compared.

    pip install numpy onnx [onnxruntime]
    python3 scripts/make_attention_cases.py [OUTDIR]      # default tests/fixtures/attention
"""
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8  # what ONNX 1.12 (Debian's libonnx) reads
NP_TO_ONNX = {np.float32: TensorProto.FLOAT, np.float16: TensorProto.FLOAT16, np.bool_: TensorProto.BOOL}


def causal_masked(sq, skv):
    """True where key j is past query i's causal limit, aligned bottom-right (j > i + skv - sq)."""
    i = np.arange(sq)[:, None]
    j = np.arange(skv)[None, :]
    return j > i + (skv - sq)


class Case:
    """One model. layout 'bhsd' takes Q/K/V as [B, H, S, D]; 'bshd' as [B, S, H, D] transposed in the
    graph (GPT-2's export, whose K^T comes from one Transpose with perm [0, 2, 3, 1])."""

    def __init__(self, name, dtype, b, h, sq, skv, d, dv=None, layout="bhsd", scale="mul", mask=None,
                 fill=-np.inf, seqs=None, seed=0):
        self.name, self.dtype, self.b, self.h, self.sq, self.skv, self.d = name, dtype, b, h, sq, skv, d
        self.dv = dv or d
        self.layout, self.scale, self.mask, self.fill = layout, scale, mask, fill
        self.seqs = seqs  # several data sets of (sq, skv) with symbolic dims in the graph
        self.seed = seed

    # ------------------------------------------------------------------ graph
    def shapes(self, sq, skv):
        if self.layout == "bshd":
            return [self.b, sq, self.h, self.d], [self.b, skv, self.h, self.d], [self.b, skv, self.h, self.dv]
        return [self.b, self.h, sq, self.d], [self.b, self.h, skv, self.d], [self.b, self.h, skv, self.dv]

    def model(self):
        et = NP_TO_ONNX[self.dtype]
        sq, skv = ("sq", "skv") if self.seqs else (self.sq, self.skv)
        qs, ks, vs = self.shapes(sq, skv)
        inputs = [helper.make_tensor_value_info(n, et, s) for n, s in (("q", qs), ("k", ks), ("v", vs))]
        inits, nodes = [], []
        s = 1.0 / np.sqrt(self.d)

        def const(name, arr):
            inits.append(numpy_helper.from_array(np.asarray(arr), name))
            return name

        q, k, v = "q", "k", "v"
        if self.layout == "bshd":
            nodes += [helper.make_node("Transpose", ["q"], ["qt"], perm=[0, 2, 1, 3]),
                      helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 3, 1]),
                      helper.make_node("Transpose", ["v"], ["vt"], perm=[0, 2, 1, 3])]
            q, kt, v = "qt", "kt", "vt"
        else:
            nodes.append(helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]))
            kt = "kt"
        if self.scale == "split":  # torch's exporter: Q * sqrt(s) and K^T * sqrt(s)
            r = const("sqrt_scale", np.array(np.sqrt(s), self.dtype))
            nodes += [helper.make_node("Mul", [q, r], ["q_scaled"]), helper.make_node("Mul", [kt, r], ["kt_scaled"])]
            q, kt = "q_scaled", "kt_scaled"
        nodes.append(helper.make_node("MatMul", [q, kt], ["scores"]))
        x = "scores"
        if self.scale == "mul":
            nodes.append(helper.make_node("Mul", [x, const("scale", np.array(s, self.dtype))], ["scaled"]))
            x = "scaled"
        elif self.scale == "div":
            nodes.append(helper.make_node("Div", [x, const("sqrt_d", np.array(np.sqrt(self.d), self.dtype))],
                                          ["scaled"]))
            x = "scaled"
        m = self.mask
        if m == "causal_add":  # constant additive mask: 0 / fill above the (bottom-right) diagonal
            c = np.where(causal_masked(self.sq, self.skv), self.fill, 0).astype(self.dtype)
            nodes.append(helper.make_node("Add", [x, const("causal_bias", c)], ["masked"]))
            x = "masked"
        elif m == "causal_where":  # masked_fill(~tril, fill) with the mask constant-folded
            nodes.append(helper.make_node("Where", [const("causal_masked", causal_masked(self.sq, self.skv)),
                                                    const("fill", np.array(self.fill, self.dtype)), x], ["masked"]))
            x = "masked"
        elif m == "add_input":
            inputs.append(helper.make_tensor_value_info("mask", et, [self.b, 1, sq, skv]))
            nodes.append(helper.make_node("Add", [x, "mask"], ["masked"]))
            x = "masked"
        elif m == "keep_input":  # a run-time bool mask: Where(Not(keep), -inf, scores), as tiny_gpt
            inputs.append(helper.make_tensor_value_info("keep", TensorProto.BOOL, [1, 1, sq, skv]))
            nodes += [helper.make_node("Not", ["keep"], ["drop"]),
                      helper.make_node("Where", ["drop", const("fill", np.array(self.fill, self.dtype)), x],
                                       ["masked"])]
            x = "masked"
        nodes.append(helper.make_node("Softmax", [x], ["probs"], axis=-1))
        nodes.append(helper.make_node("MatMul", ["probs", v], ["y"]))
        ys = [self.b, self.h, sq, self.dv]
        graph = helper.make_graph(nodes, self.name, inputs, [helper.make_tensor_value_info("y", et, ys)], inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="streamrt make_attention_cases.py")
        model.ir_version = IR_VERSION
        onnx.checker.check_model(model, full_check=True)
        return model

    # ------------------------------------------------------------------ data
    def data_set(self, k, sq, skv):
        rng = np.random.default_rng(1000 * self.seed + k)
        qs, ks, vs = self.shapes(sq, skv)
        # Scores of a few units: the softmax is far from uniform, so errors in it show.
        q = (rng.standard_normal(qs) * 1.5).astype(self.dtype)
        kk = rng.standard_normal(ks).astype(self.dtype)
        v = rng.standard_normal(vs).astype(self.dtype)
        ins = {"q": q, "k": kk, "v": v}
        if self.mask == "add_input":
            mask = rng.uniform(-2, 2, (self.b, 1, sq, skv))
            mask[rng.uniform(size=mask.shape) < 0.3] = -np.inf  # padding-like holes
            mask[..., 0] = 0.0  # every row keeps a key
            ins["mask"] = mask.astype(self.dtype)
        elif self.mask == "keep_input":
            keep = rng.uniform(size=(1, 1, sq, skv)) > 0.4
            keep[..., -1] = True
            if np.isfinite(self.fill):  # a finite fill gives a fully masked row uniform weights
                keep[..., min(3, sq - 1), :] = False
            ins["keep"] = keep
        return ins

    def reference(self, ins, sq, skv):
        f = lambda a: a.astype(np.float64)
        q, k, v = f(ins["q"]), f(ins["k"]), f(ins["v"])
        if self.layout == "bshd":
            q, k, v = q.transpose(0, 2, 1, 3), k.transpose(0, 2, 1, 3), v.transpose(0, 2, 1, 3)
        s = 1.0 / np.sqrt(self.d)
        if self.scale == "split":  # the graph rounds sqrt(s) to the model's type
            r = f(np.array(np.sqrt(s), self.dtype))
            scores = (q * r) @ (k.transpose(0, 1, 3, 2) * r)
        else:
            scale = {"mul": f(np.array(s, self.dtype)), "div": 1.0 / f(np.array(np.sqrt(self.d), self.dtype)),
                     "none": 1.0}[self.scale]
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale
        fill = f(np.array(self.fill, self.dtype))
        if self.mask == "causal_add":
            scores = scores + np.where(causal_masked(sq, skv), fill, 0.0)
        elif self.mask == "causal_where":
            scores = np.where(causal_masked(sq, skv), fill, scores)
        elif self.mask == "add_input":
            scores = scores + f(ins["mask"])
        elif self.mask == "keep_input":
            scores = np.where(ins["keep"], scores, fill)
        p = np.exp(scores - scores.max(axis=-1, keepdims=True))
        p /= p.sum(axis=-1, keepdims=True)
        return (p @ v).astype(self.dtype)

    def write(self, root):
        d = os.path.join(root, "fp32" if self.dtype == np.float32 else "fp16", self.name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        model = self.model()
        onnx.save(model, os.path.join(d, "model.onnx"))
        names = [i.name for i in model.graph.input]
        for k, (sq, skv) in enumerate(self.seqs or [(self.sq, self.skv)]):
            ins = self.data_set(k, sq, skv)
            ref = self.reference(ins, sq, skv)
            ds = os.path.join(d, f"test_data_set_{k}")
            os.makedirs(ds)
            for i, n in enumerate(names):
                save_pb(os.path.join(ds, f"input_{i}.pb"), ins[n], n)
            save_pb(os.path.join(ds, "output_0.pb"), ref, "y")
            check_with_onnxruntime(self, model, ins, ref)
        return d


def save_pb(path, arr, name):
    with open(path, "wb") as fh:
        fh.write(numpy_helper.from_array(arr, name).SerializeToString())


def check_with_onnxruntime(case, model, ins, ref):
    try:
        import onnxruntime as ort
    except ImportError:
        return
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got = sess.run(None, ins)[0].astype(np.float64)
    want = ref.astype(np.float64)
    # ORT rounds every float16 intermediate (scores, probabilities); the reference does not.
    rtol, atol = (1e-5, 1e-5) if case.dtype == np.float32 else (1e-2, 1e-2)
    if not np.allclose(got, want, rtol=rtol, atol=atol):
        raise SystemExit(f"{case.name}: onnxruntime differs from the reference by {np.abs(got - want).max()}")


CASES = [
    # float16: the tensor-core kernel (D = Dv = 64 or 128) and the simple one (other dims).
    Case("decode_sq1_skv77_d64", np.float16, b=2, h=8, sq=1, skv=77, d=64, seed=1),
    Case("causal_s128_d64_gpt_layout", np.float16, b=1, h=4, sq=128, skv=128, d=64, layout="bshd",
         mask="causal_where", fill=-1e4, seed=2),
    Case("causal_s128_d128_split_scale", np.float16, b=1, h=2, sq=128, skv=128, d=128, scale="split",
         mask="causal_add", seed=3),
    Case("causal_sq4_skv77_d64", np.float16, b=1, h=3, sq=4, skv=77, d=64, scale="div", mask="causal_add", seed=4),
    Case("mask_add_sq48_skv96_d64", np.float16, b=2, h=4, sq=48, skv=96, d=64, mask="add_input", seed=5),
    Case("keep_mask_sq40_skv70_d128", np.float16, b=1, h=3, sq=40, skv=70, d=128, mask="keep_input",
         fill=np.finfo(np.float16).min, seed=6),
    Case("causal_s33_d16_simple", np.float16, b=2, h=4, sq=33, skv=33, d=16, layout="bshd", mask="causal_where",
         seed=7),
    Case("dv32_d64_simple", np.float16, b=1, h=2, sq=20, skv=50, d=64, dv=32, seed=8),
    # float32: the simple kernel on CUDA; with --fp16 / --bf16 builds, the tensor-core one.
    Case("causal_s128_d64", np.float32, b=2, h=2, sq=128, skv=128, d=64, mask="causal_add", seed=11),
    Case("mask_add_sq50_skv70_d128", np.float32, b=1, h=2, sq=50, skv=70, d=128, mask="add_input", seed=12),
    Case("decode_sq1_skv77_d64", np.float32, b=2, h=4, sq=1, skv=77, d=64, scale="div", seed=13),
    Case("keep_mask_gpt_layout_d16", np.float32, b=2, h=4, sq=24, skv=24, d=16, layout="bshd", mask="keep_input",
         seed=14),
    Case("dynamic_seq_d64", np.float32, b=1, h=2, sq=0, skv=0, d=64, seqs=[(16, 16), (100, 100)], seed=15),
]


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures",
                                                               "attention")
    for sub in ("fp32", "fp16"):
        shutil.rmtree(os.path.join(root, sub), ignore_errors=True)
    for c in CASES:
        print(os.path.relpath(c.write(root)))


if __name__ == "__main__":
    main()
