#!/usr/bin/env python3
"""A MatMul chain as ONNX (x [1, seq, H] -> H x H weights, Relu between), for quick weight-streaming
checks: python3 bench/tools/make_chain_model.py OUT.onnx --hidden 4096 --layers 32 --dtype fp16
Weights go to OUT.onnx.data (external data)."""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ap = argparse.ArgumentParser(description=__doc__)
ap.add_argument("out")
ap.add_argument("--hidden", type=int, default=1024)
ap.add_argument("--layers", type=int, default=8)
ap.add_argument("--dtype", choices=["fp16", "fp32"], default="fp16")
a = ap.parse_args()
np_dtype = np.float16 if a.dtype == "fp16" else np.float32
onnx_dtype = TensorProto.FLOAT16 if a.dtype == "fp16" else TensorProto.FLOAT
rng = np.random.default_rng(0)
nodes, inits, prev = [], [], "x"
for i in range(a.layers):
    w = (rng.standard_normal((a.hidden, a.hidden), dtype=np.float32) / np.sqrt(a.hidden)).astype(np_dtype)
    inits.append(numpy_helper.from_array(w, f"w{i}"))
    nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"m{i}"], name=f"mm{i}"))
    out = "y" if i == a.layers - 1 else f"h{i}"
    nodes.append(helper.make_node("Relu", [f"m{i}"], [out], name=f"relu{i}"))
    prev = out
io = lambda n: helper.make_tensor_value_info(n, onnx_dtype, [1, "seq", a.hidden])
g = helper.make_graph(nodes, "chain", [io("x")], [io("y")], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
if os.path.exists(a.out + ".data"):
    os.remove(a.out + ".data")
onnx.save(m, a.out, save_as_external_data=True, all_tensors_to_one_file=True,
          location=os.path.basename(a.out) + ".data", size_threshold=1024)
print(f"wrote {a.out}: {a.layers} x [{a.hidden}, {a.hidden}] {a.dtype}")
