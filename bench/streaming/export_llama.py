#!/usr/bin/env python3
"""Exports the weight-streaming benchmark model: bench/models.py's LlamaStack (decoder layers + final
RMSNorm, hidden states in and out, no KV cache) in float16 with random weights, as ONNX opset 17 with
ONE dynamic axis (the sequence length of "hidden_states" [1, seq, hidden] and of "output"), so one model
serves 1 token and a 2048-token prefill. Weights are ONNX external data.

    python3 bench/streaming/export_llama.py OUTDIR [--hidden 4096 --heads 32 --intermediate 11008
                                                    --layers 20 --max-seq 2048] [--tiny] [--check]

The default is 20 layers x (4 x 4096^2 + 3 x 4096 x 11008) fp16 weights = 8.05 GB (plus norms, rotary
tables and the causal mask). Weights come from bench/models.py's build_model (seed 0, init_weights),
built on the GPU when there is one: bench/streaming/torch_peer.py rebuilds the same weights from the
same seed instead of loading them.

Writes OUTDIR/model.onnx and its external data, and OUTDIR/export.json (the JSON line printed last:
weight bytes, MatMul weight bytes, times). The export goes to OUTDIR.partial first and is renamed to
OUTDIR when complete, so an interrupted export leaves no half model behind.

Large models (over 2 GB) come out of the TorchScript exporter with one external file per tensor; only
the IR version is rewritten (streamrt reads ONNX 1.12, IR <= 8), without loading the weights into
Python. Smaller ones (--tiny, few layers) are converted to one external file model.onnx.data.
--check compares onnxruntime (CPU) with PyTorch at seq 1 and at the trace length (small models only).
"""
import argparse
import json
import os
import shutil
import sys
import time
import warnings

import torch

BENCH_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, BENCH_DIR)
import export as bench_export  # noqa: E402  (bench/export.py: IR version, opset, shape printing, ORT check)
import models  # noqa: E402

SEED = 0  # models.build_model's seed: the torch peer rebuilds the same weights
DEFAULTS = dict(hidden=4096, heads=32, intermediate=11008, layers=20, max_seq=2048)
# Tiny: weights of at least 64 KiB (streamrt streams no smaller weight by default), a few MB in all.
TINY = dict(hidden=256, heads=4, intermediate=688, layers=2, max_seq=64)
TRACE_SEQ = 8  # traced with a short sequence; the sequence axis is dynamic in the graph


def add_model_args(ap):
    """Model-shape options shared with torch_peer.py (None = the default or tiny value)."""
    ap.add_argument("--hidden", type=int)
    ap.add_argument("--heads", type=int)
    ap.add_argument("--intermediate", type=int)
    ap.add_argument("--layers", type=int)
    ap.add_argument("--max-seq", type=int, help="rotary table / causal mask length (longest sequence)")
    ap.add_argument("--tiny", action="store_true", help="tiny config for CPU tests")


def model_config(args):
    cfg = dict(TINY if args.tiny else DEFAULTS)
    for k in cfg:
        v = getattr(args, k)
        if v is not None:
            cfg[k] = v
    return cfg


def build_llama(cfg, dtype, device):
    """LlamaStack with seeded random weights (models.build_model), in eval mode."""
    return models.build_model("llama", dtype=dtype, device=device, seed=SEED, hidden=cfg["hidden"],
                              n_head=cfg["heads"], intermediate=cfg["intermediate"], n_layer=cfg["layers"],
                              max_positions=cfg["max_seq"])


def linear_weight_bytes(cfg, itemsize=2):
    """Bytes of the projection weights (what streamrt streams): 4 H^2 + 3 H I per layer."""
    h, i = cfg["hidden"], cfg["intermediate"]
    return cfg["layers"] * (4 * h * h + 3 * h * i) * itemsize


def matmul_initializer_bytes(proto):
    """Bytes of initializers consumed by MatMul nodes (dims only: the data need not be loaded)."""
    import onnx
    inits = {t.name: t for t in proto.graph.initializer}
    names = {x for n in proto.graph.node if n.op_type in ("MatMul", "Gemm") for x in n.input if x in inits}
    total = 0
    for name in names:
        t = inits[name]
        n = 1
        for d in t.dims:
            n *= d
        total += n * onnx.helper.tensor_dtype_to_np_dtype(t.data_type).itemsize
    return total


def finish_proto(tmp_dir, path):
    """Lowers the IR version; gives small models one external data file. Returns (proto, ir_from, files)."""
    import onnx
    proto = onnx.load(path, load_external_data=False)
    ir_from = proto.ir_version
    proto.ir_version = min(proto.ir_version, bench_export.MAX_IR_VERSION)
    has_external = any(t.data_location == onnx.TensorProto.EXTERNAL for t in proto.graph.initializer)
    if has_external:  # over 2 GB: the exporter wrote per-tensor files beside the model; keep them
        onnx.save(proto, path)
    else:  # small: weights inline; move them to one file (cheap at this size)
        proto = onnx.load(path)
        proto.ir_version = min(proto.ir_version, bench_export.MAX_IR_VERSION)
        onnx.save(proto, path, save_as_external_data=True, all_tensors_to_one_file=True,
                  location="model.onnx.data", size_threshold=1024)
        proto = onnx.load(path, load_external_data=False)
    files = len([f for f in os.listdir(tmp_dir) if f != "model.onnx"])
    return proto, ir_from, files


def export(outdir, cfg, dtype=torch.float16, device="cpu", check=False):
    import onnx
    outdir = os.path.abspath(outdir)
    tmp_dir = outdir + ".partial"
    shutil.rmtree(tmp_dir, ignore_errors=True)
    os.makedirs(tmp_dir)
    path = os.path.join(tmp_dir, "model.onnx")

    t0 = time.time()
    model = build_llama(cfg, dtype, device)
    g = torch.Generator(device="cpu").manual_seed(1)
    trace_seq = min(TRACE_SEQ, cfg["max_seq"])
    x = torch.randn(1, trace_seq, cfg["hidden"], generator=g).to(device=device, dtype=dtype)
    if device == "cuda":
        torch.cuda.synchronize()
    t_build = time.time() - t0

    t0 = time.time()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation and tracer notices
        torch.onnx.export(model, (x,), path, dynamo=False, opset_version=bench_export.OPSET,
                          input_names=["hidden_states"], output_names=["output"], do_constant_folding=True,
                          dynamic_axes={"hidden_states": {1: "seq"}, "output": {1: "seq"}})
    t_export = time.time() - t0

    t0 = time.time()
    proto, ir_from, files = finish_proto(tmp_dir, path)
    t_save = time.time() - t0

    weight_bytes = bench_export.initializer_bytes(proto)
    mm_bytes = matmul_initializer_bytes(proto)
    print(f"exported LlamaStack {cfg} ({dtype}) on {device} -> {outdir}/model.onnx")
    print("  inputs: " + ", ".join(f"{i.name} {bench_export.shape_of(i)}" for i in proto.graph.input))
    print("  outputs: " + ", ".join(f"{o.name} {bench_export.shape_of(o)}" for o in proto.graph.output))
    print(f"  {weight_bytes / 1e9:.3f} GB of initializers ({mm_bytes / 1e9:.3f} GB MatMul weights) in {files} "
          f"external file(s); IR version {ir_from} -> {proto.ir_version}; {len(proto.graph.node)} nodes")
    print(f"  time: build {t_build:.1f}s, export {t_export:.1f}s, save {t_save:.1f}s", flush=True)
    info = dict(model="llama_stack", config=cfg, dtype=str(dtype).replace("torch.", ""), seed=SEED,
                device=device, path=os.path.join(outdir, "model.onnx"), weight_bytes=weight_bytes,
                matmul_weight_bytes=mm_bytes, expected_linear_bytes=linear_weight_bytes(cfg, x.element_size()),
                external_files=files, nodes=len(proto.graph.node), ir_version=proto.ir_version,
                opset=bench_export.OPSET, trace_seq=trace_seq, torch=torch.__version__, onnx=onnx.__version__,
                build_s=round(t_build, 2), export_s=round(t_export, 2), save_s=round(t_save, 2))
    del proto
    if check:
        info["check_max_abs_diff"] = {}
        for seq in sorted({1, trace_seq + 3 if trace_seq + 3 <= cfg["max_seq"] else trace_seq}):
            xs = torch.randn(1, seq, cfg["hidden"], generator=g).to(device=device, dtype=dtype)
            try:
                info["check_max_abs_diff"][str(seq)] = bench_export.check_with_onnxruntime(model, (xs,), path)
            except Exception as e:  # noqa: BLE001 - e.g. an fp16 kernel onnxruntime's CPU lacks
                info["check_max_abs_diff"][str(seq)] = f"failed: {type(e).__name__}: {str(e)[:200]}"
                print(f"  onnxruntime check at seq {seq} failed: {e}", flush=True)
    del model
    info["total_s"] = round(t_build + t_export + t_save, 2)
    with open(os.path.join(tmp_dir, "export.json"), "w") as f:
        json.dump(info, f)
    shutil.rmtree(outdir, ignore_errors=True)
    os.rename(tmp_dir, outdir)
    print(json.dumps(info), flush=True)
    return info


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    add_model_args(ap)
    ap.add_argument("--dtype", default="fp16", choices=["fp16", "fp32"], help="default fp16")
    ap.add_argument("--device", default="auto", help="auto (cuda when available) | cuda | cpu")
    ap.add_argument("--check", action="store_true", help="compare onnxruntime (CPU) with PyTorch")
    args = ap.parse_args()
    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    run = lambda dev: export(args.outdir, model_config(args), models.to_dtype(args.dtype), dev, args.check)  # noqa: E731
    if device == "cpu":
        run("cpu")
        return
    try:  # building and tracing on the GPU is much faster; the CPU is the fallback (e.g. out of memory)
        run(device)
    except Exception as e:  # noqa: BLE001
        print(f"export on {device} failed ({type(e).__name__}: {str(e)[:300]}); again on the CPU", flush=True)
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        run("cpu")


if __name__ == "__main__":
    main()
