#!/usr/bin/env python3
"""The fused Attention kernel alone against PyTorch's scaled_dot_product_attention on one GPU.

    python3 bench/attention/attn_bench.py OUTDIR [--streamrt BIN] [--cases NAME,...] [--iters 100]

Each case is one Attention node (the op the builder fuses transformers' exports into, with the layout those
exports give it: Q, K, V and Y as [B, S, H, D], grouped-query heads read by group), written with onnx.helper and
run by `streamrt run --cuda-graph` on random float16 inputs. The PyTorch peer runs
torch.nn.functional.scaled_dot_product_attention on the same inputs (views as [B, H, S, D], enable_gqa) inside a
CUDA graph, so both sides pay one graph launch per call; PyTorch picks its fastest backend (flash / cuDNN /
efficient). streamrt's output is checked against PyTorch's (max abs error). Prints a table (median ms per call,
TFLOP/s counting the causal half only, GB/s for decode: bytes of K and V read once) and writes OUTDIR/attn.md and
OUTDIR/attn.json; models, inputs and outputs go to --workdir.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from cuda_graph_timing import graphed_median_ms  # noqa: E402

# name: (batch, query heads, kv heads, head dim, Sq, Skv, causal)
CASES = {
    "llama1b_prefill512": (1, 32, 8, 64, 512, 512, 1),
    "llama1b_prefill2048": (1, 32, 8, 64, 2048, 2048, 1),
    "llama1b_b8_prefill512": (8, 32, 8, 64, 512, 512, 1),
    "llama1b_b8_prefill2048": (8, 32, 8, 64, 2048, 2048, 1),
    "qwen05_b8_prefill2048": (8, 14, 2, 64, 2048, 2048, 1),
    "llama1b_token": (1, 32, 8, 64, 1, 1, 1),
    "llama1b_b8_token": (8, 32, 8, 64, 1, 1, 1),
    "llama1b_decode512": (1, 32, 8, 64, 1, 513, 1),
    "llama1b_decode2048": (1, 32, 8, 64, 1, 2049, 1),
    "llama1b_b8_decode2048": (8, 32, 8, 64, 1, 2049, 1),
    "qwen05_prefill512": (1, 14, 2, 64, 512, 512, 1),
    "qwen05_prefill2048": (1, 14, 2, 64, 2048, 2048, 1),
    "qwen05_decode2048": (1, 14, 2, 64, 1, 2049, 1),
    "llama8b_prefill2048": (1, 32, 8, 128, 2048, 2048, 1),
    "llama8b_decode2048": (1, 32, 8, 128, 1, 2049, 1),
    "llama1b_prefill4096": (1, 32, 8, 64, 4096, 4096, 1),
    "llama1b_full4096": (1, 32, 8, 64, 4096, 4096, 0),
    "llama1b_prefill8192": (1, 32, 8, 64, 8192, 8192, 1),
    "llama1b_prefill16384": (1, 32, 8, 64, 16384, 16384, 1),
    "llama1b_prefill32768": (1, 32, 8, 64, 32768, 32768, 1),
    "llama8b_prefill4096": (1, 32, 8, 128, 4096, 4096, 1),
    "llama8b_prefill8192": (1, 32, 8, 128, 8192, 8192, 1),
    "llama8b_full4096": (1, 32, 8, 128, 4096, 4096, 0),
    "llama1b_full8192": (1, 32, 8, 64, 8192, 8192, 0),
    "gemma_prefill1024_d256": (1, 8, 1, 256, 1024, 1024, 1),
    "gemma_decode2048_d256": (1, 8, 1, 256, 1, 2049, 1),
    "gemma9b_prefill4096_d256": (1, 16, 8, 256, 4096, 4096, 1),
}


def write_model(path, b, h, hkv, d, sq, skv, causal, key_mask=False):
    import onnx
    from onnx import TensorProto, helper

    f16 = TensorProto.FLOAT16
    # key_mask: the int64 [B, Skv] attention_mask that the builder folds a padding mask into (input 4).
    ins = ["q", "k", "v"] + (["", "key_mask"] if key_mask else [])
    node = helper.make_node("Attention", ins, ["y"], causal=causal, kv_group=h // hkv, bshd=15,
                            scale=1.0 / math.sqrt(d))
    inputs = [helper.make_tensor_value_info("q", f16, [b, sq, h, d]),
              helper.make_tensor_value_info("k", f16, [b, skv, hkv, d]),
              helper.make_tensor_value_info("v", f16, [b, skv, hkv, d])]
    if key_mask:
        inputs.append(helper.make_tensor_value_info("key_mask", TensorProto.INT64, [b, skv]))
    graph = helper.make_graph([node], "attention", inputs, [helper.make_tensor_value_info("y", f16, [b, sq, h, d])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)], ir_version=10), path)


def flops(b, h, d, sq, skv, causal):
    pairs = sq * skv
    if causal:  # bottom-right aligned: query i sees keys up to i + skv - sq
        pairs = sum(min(skv, i + skv - sq + 1) for i in range(sq))
    return 4.0 * b * h * d * pairs


def torch_time(q, k, v, causal, iters):
    import torch
    import torch.nn.functional as F

    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
    sq, skv = q.shape[1], k.shape[1]
    # PyTorch's is_causal is top-left aligned; with one query row (decode) every key is visible anyway.
    is_causal = bool(causal) and sq > 1
    assert not is_causal or sq == skv
    ms, out = graphed_median_ms(lambda: F.scaled_dot_product_attention(qt, kt, vt, is_causal=is_causal, enable_gqa=True),
                                iters)
    return ms, out.transpose(1, 2).float().cpu().numpy()


def streamrt_time(binary, model, inputs, outdir, iters, extra):
    args = [binary, "run", model, "--device", "cuda", "--cuda-graph", "--iterations", str(iters), "--warmup", "10",
            "--output-dir", outdir] + [f"--input={n}={p}" for n, p in inputs.items()] + extra
    r = subprocess.run(args, capture_output=True, text=True, timeout=120)  # a hung kernel costs two minutes a case, not five
    if r.returncode != 0:
        raise RuntimeError((r.stderr or r.stdout).strip().splitlines()[-1])
    m = re.search(r"median ([0-9.]+) ms", r.stdout)
    if not m:
        raise RuntimeError("no latency in streamrt's output")
    out = np.load(os.path.join(outdir, "y.npy")).astype(np.float32)
    # The kernel's own GPU time (events around the step, no graph): what the profile prints per op.
    r = subprocess.run(args[:5] + ["--iterations", str(iters), "--warmup", "10", "--profile-ops"] + args[10:],
                       capture_output=True, text=True, timeout=120)
    k = re.search(r"^\s*Attention\S*.*?([0-9.]+) ms", r.stderr, re.M)
    return float(m.group(1)), float(k.group(1)) if k else None, out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("--streamrt", default=os.environ.get("STREAMRT", "streamrt"))
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--streamrt-args", default="", help="more arguments for `streamrt run` (one string, split on spaces)")
    ap.add_argument("--workdir", default="/tmp/attn-bench", help="models, inputs and outputs (large)")
    ap.add_argument("--key-mask", action="store_true",
                    help="streamrt's model also reads an all-ones int64 key_mask (a folded attention_mask), as exports do")
    a = ap.parse_args()
    import torch

    os.makedirs(a.outdir, exist_ok=True)
    rows = []
    gpu = torch.cuda.get_device_name()
    for name in a.cases.split(","):
        b, h, hkv, d, sq, skv, causal = CASES[name]
        work = os.path.join(a.workdir, name)
        os.makedirs(work, exist_ok=True)
        model = os.path.join(work, "model.onnx")
        write_model(model, b, h, hkv, d, sq, skv, causal, a.key_mask)
        gen = torch.Generator(device="cuda").manual_seed(0)
        q = torch.randn(b, sq, h, d, device="cuda", dtype=torch.float16, generator=gen)
        k = torch.randn(b, skv, hkv, d, device="cuda", dtype=torch.float16, generator=gen)
        v = torch.randn(b, skv, hkv, d, device="cuda", dtype=torch.float16, generator=gen)
        inputs = {}
        for n, t in (("q", q), ("k", k), ("v", v)):
            inputs[n] = os.path.join(work, n + ".npy")
            np.save(inputs[n], t.cpu().numpy())
        if a.key_mask:
            inputs["key_mask"] = os.path.join(work, "key_mask.npy")
            np.save(inputs["key_mask"], np.ones((b, skv), np.int64))
        row = {"case": name + (" +key_mask" if a.key_mask else ""), "b": b, "h": h, "hkv": hkv, "d": d, "sq": sq, "skv": skv, "causal": causal, "gpu": gpu}
        fl = flops(b, h, d, sq, skv, causal)
        kv_bytes = 2 * b * skv * hkv * d * 2
        try:
            row["torch_ms"], ref = torch_time(q, k, v, causal, a.iters)
        except Exception as e:  # noqa: BLE001 - a failed peer is a table cell
            row["torch_error"], ref = str(e).splitlines()[0][:120], None
        try:
            row["streamrt_ms"], row["kernel_ms"], out = streamrt_time(a.streamrt, model, inputs, os.path.join(work, "out"), a.iters,
                                                                       a.streamrt_args.split())
            if ref is not None:
                row["max_err"] = float(np.abs(out - ref).max())
        except Exception as e:  # noqa: BLE001
            row["streamrt_error"] = str(e)[:160]
        for side in ("torch", "streamrt"):
            if f"{side}_ms" in row:
                ms = row[f"{side}_ms"]
                row[f"{side}_tflops"] = fl / ms / 1e9
                row[f"{side}_gbs"] = kv_bytes / ms / 1e6
        rows.append(row)
        print(json.dumps(row), flush=True)

    lines = [f"Attention kernel alone, float16, CUDA graphs on both sides ({gpu})", "",
             "| case | B | H/Hkv | D | Sq | Skv | streamrt ms | kernel ms (profile) | PyTorch SDPA ms | streamrt / SDPA | streamrt TFLOP/s | "
             "SDPA TFLOP/s | streamrt K+V GB/s | max abs err |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        s = f"{r['streamrt_ms']:.4f}" if "streamrt_ms" in r else "failed: " + r.get("streamrt_error", "")
        t = f"{r['torch_ms']:.4f}" if "torch_ms" in r else "failed: " + r.get("torch_error", "")
        ratio = f"{r['streamrt_ms'] / r['torch_ms']:.2f}x" if "streamrt_ms" in r and "torch_ms" in r else "-"
        st = f"{r['streamrt_tflops']:.1f}" if "streamrt_tflops" in r else "-"
        tt = f"{r['torch_tflops']:.1f}" if "torch_tflops" in r else "-"
        gb = f"{r['streamrt_gbs']:.0f}" if "streamrt_gbs" in r else "-"
        err = f"{r['max_err']:.2e}" if "max_err" in r else "-"
        kern = f"{r['kernel_ms']:.3f}" if r.get("kernel_ms") is not None else "-"
        lines.append(f"| {r['case']} | {r['b']} | {r['h']}/{r['hkv']} | {r['d']} | {r['sq']} | {r['skv']} | {s} | {kern} | {t} | "
                     f"{ratio} | {st} | {tt} | {gb} | {err} |")
    text = "\n".join(lines) + "\n"
    print(text)
    with open(os.path.join(a.outdir, "attn.md"), "w") as f:
        f.write(text)
    with open(os.path.join(a.outdir, "attn.json"), "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
