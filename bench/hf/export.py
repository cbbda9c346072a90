#!/usr/bin/env python3
"""Exports one model of the benchmark (bench/hf/models.py) as a user would: torch.onnx.export(..., dynamo=True)
of the float16 model, weights as ONNX external data, every axis dynamic:

  OUTDIR/prefill/model.onnx   (input_ids, attention_mask) -> logits [batch, tokens, vocab]   (use_cache=False)
  OUTDIR/decode/model.onnx    (input_ids, attention_mask, position_ids, past_key_values.N.key / value)
                              -> logits of the last position, present.N.key / value          (DynamicCache)

    python3 bench/hf/export.py MODEL OUTDIR [--kinds prefill,decode] [--device cuda] [--tiny] [--check]

Each file is written to <kind>.partial and renamed when complete; OUTDIR/<kind>/export.json (also printed as a
JSON line): seconds, weight bytes, node count, versions. --check (tiny models): onnxruntime against PyTorch.
"""
import argparse
import contextlib
import io
import json
import os
import shutil
import sys
import time
import warnings

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def example(c, kind, device):
    """Example inputs: batch 2 and lengths above 1 (the exporter specializes dims of size 0 and 1)."""
    arrays = models.input_arrays(c, 2, kind, 5, seed=7)
    if kind == "decode":  # 3 new tokens after 5 cached ones, so that the new-token axis stays dynamic
        arrays[0] = arrays[0].repeat(3, axis=1)
        arrays[1] = np.ones((2, 8), np.int64)
        arrays[2] = np.array([[5, 6, 7]] * 2, np.int64)
    return tuple(torch.from_numpy(a).to(device) for a in arrays)


def export(model, c, kind, path):
    dyn = torch.export.Dim.DYNAMIC
    device = next(model.parameters()).device
    args = example(c, kind, device)
    if kind == "prefill":
        module, shapes = models.prefill_module(model), ({0: dyn, 1: dyn}, {0: dyn, 1: dyn})
    else:
        module = models.step_module(model, c)
        # Step.forward takes *args: one positional structure, the tuple of inputs.
        shapes = (tuple([{0: dyn, 1: dyn}] * 3 + [{0: dyn, 2: dyn}] * (2 * c.num_hidden_layers)),)
    names, outs = models.io_names(kind, c.num_hidden_layers)
    with torch.no_grad(), warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        program = torch.onnx.export(module, args, input_names=names, output_names=outs, dynamo=True,
                                    dynamic_shapes=shapes)
    import export_llama_kv  # bench/decode (models.py put it on the path)
    export_llama_kv.contiguous_initializers(program)
    program.save(path, external_data=True)


def check(model, c, kind, path):
    import onnxruntime as ort
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names, _ = models.io_names(kind, c.num_hidden_layers)
    module = models.prefill_module(model) if kind == "prefill" else models.step_module(model, c)
    worst = 0.0
    for batch, n in ((1, 7), (2, 3)):
        arrays = models.input_arrays(c, batch, kind, n, seed=11)
        with torch.no_grad():
            want = module(*[torch.from_numpy(a).to(next(model.parameters()).device) for a in arrays])
        want = [want] if isinstance(want, torch.Tensor) else want
        got = s.run(None, dict(zip(names, arrays)))
        for w, g in zip(want, got):
            worst = max(worst, float(np.abs(w.float().cpu().numpy() - g.astype(np.float32)).max()))
    log(f"check {kind}: onnxruntime vs PyTorch max abs diff {worst:.3g}")
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", choices=sorted(models.MODELS))
    ap.add_argument("outdir")
    ap.add_argument("--kinds", default="prefill,decode")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    import onnx
    import transformers
    t0 = time.time()
    model, c = models.build(a.model, a.device, a.tiny)
    build_s = time.time() - t0
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    log(f"built {models.MODELS[a.model][0]} on {a.device} in {build_s:.1f}s: {weight_bytes / 1e9:.3f} GB")
    rc = 0
    for kind in a.kinds.split(","):
        final, partial = os.path.join(a.outdir, kind), os.path.join(a.outdir, kind + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        os.makedirs(partial)
        info = dict(model=a.model, kind=kind, cls=models.MODELS[a.model][0], tiny=a.tiny, dtype="float16",
                    weight_bytes=weight_bytes, build_s=round(build_s, 1), device=a.device, torch=torch.__version__,
                    transformers=transformers.__version__, onnx=onnx.__version__)
        t1 = time.time()
        try:
            export(model, c, kind, os.path.join(partial, "model.onnx"))
        except Exception as e:  # noqa: BLE001 - reported; the other kind may still export
            import traceback
            log(traceback.format_exc())
            info["error"] = f"failed: export: {type(e).__name__}: {str(e).strip().splitlines()[0][:200] if str(e).strip() else ''}"
            print(json.dumps(info), flush=True)
            rc = 1
            continue
        info["export_s"] = round(time.time() - t1, 1)
        g = onnx.load(os.path.join(partial, "model.onnx"), load_external_data=False).graph
        info["nodes"] = len(g.node)
        info["op_types"] = sorted({n.op_type for n in g.node})
        if a.check:
            info["check_max_abs_diff"] = check(model, c, kind, os.path.join(partial, "model.onnx"))
        with open(os.path.join(partial, "export.json"), "w") as f:
            json.dump(info, f)
        shutil.rmtree(final, ignore_errors=True)
        os.rename(partial, final)
        log(f"exported {kind} in {info['export_s']}s: {info['nodes']} nodes")
        print(json.dumps(info), flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
