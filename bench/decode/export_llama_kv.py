#!/usr/bin/env python3
"""Exports the decode benchmark model: transformers' LlamaForCausalLM at the Llama-3-8B shape (hidden 4096,
14336 MLP, 32 heads, 8 KV heads, vocabulary 128256), random weights in float16, as a user exports it for
generation with a KV cache: torch.onnx.export(..., dynamo=True) of one forward step in the transformers /
optimum layout (input_ids, attention_mask over past + new tokens, position_ids, past_key_values.N.key / value
in; logits of the last position, present.N.key / value out), every axis but the batch dynamic, weights as
ONNX external data. One file serves the prefill (2048 new tokens after a 1-token masked-out past) and the
decode steps (1 new token after 512 or 2048 past ones).

    python3 bench/decode/export_llama_kv.py OUTDIR [--layers 14] [--tiny] [--check]

14 layers: 14 x 436 MB + embedding and LM head 2 x 1.05 GB = 8.2 GB of float16. The model is built on the
GPU when there is one (seeded, transformers' own initialization) and written to OUTDIR.partial, renamed to
OUTDIR when complete. OUTDIR/export.json (also printed): config, weight bytes, times.
bench/decode/decode_peer.py rebuilds the same weights from the same seed instead of loading them.
--check (small models): onnxruntime on the export against PyTorch for a prefill and a decode step.
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

import torch

SEED = 0
LLAMA3_8B = dict(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_attention_heads=32,
                 num_key_value_heads=8, rms_norm_eps=1e-5, rope_theta=500000.0, max_position_embeddings=8192)
# Tiny: the same structure (GQA 4:2), weights of at least 64 KiB so streamrt streams them.
TINY = dict(vocab_size=512, hidden_size=256, intermediate_size=512, num_attention_heads=4,
            num_key_value_heads=2, rms_norm_eps=1e-5, rope_theta=10000.0, max_position_embeddings=256)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def config(layers, tiny):
    import transformers
    c = transformers.LlamaConfig(num_hidden_layers=layers, **(TINY if tiny else LLAMA3_8B))
    c._attn_implementation = "sdpa"
    return c


def random_model(cls, c, device, seed=SEED):
    """cls(c) with seeded random weights (transformers' own initialization) in float16 on `device`, eval mode."""
    torch.manual_seed(seed)
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float16)
    try:
        with torch.device(device):
            model = cls(c)
    finally:
        torch.set_default_dtype(old)
    return model.eval()


def build(layers, tiny, device):
    """The seeded random model in float16 on `device`, eval mode."""
    import transformers
    c = config(layers, tiny)
    return random_model(transformers.LlamaForCausalLM, c, device), c


def kv_of(cache, i):
    if hasattr(cache, "layers"):
        return cache.layers[i].keys, cache.layers[i].values
    return cache.key_cache[i], cache.value_cache[i]


def make_cache(c, past):
    import transformers
    try:
        cache = transformers.DynamicCache(config=c)
    except TypeError:  # older transformers
        cache = transformers.DynamicCache()
    for i in range(c.num_hidden_layers if past else 0):  # no pasts: an empty cache (prefill)
        cache.update(past[2 * i], past[2 * i + 1], i)
    return cache


class Step(torch.nn.Module):
    """One generation step with a cache: the logits of the last position and the presents."""

    def __init__(self, model, c):
        super().__init__()
        self.m, self.c = model, c

    def forward(self, *args):
        input_ids, attention_mask, position_ids, past = args[0], args[1], args[2], args[3:]
        o = self.m(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                   past_key_values=make_cache(self.c, past), use_cache=True, logits_to_keep=1)
        pres = []
        for i in range(self.c.num_hidden_layers):
            pres += list(kv_of(o.past_key_values, i))
        return (o.logits, *pres)


def io_names(layers):
    past = [f"past_key_values.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]
    present = [f"present.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]
    return ["input_ids", "attention_mask", "position_ids"] + past, ["logits"] + present


def step_inputs(c, batch, past, new, device, gen):
    """Inputs of a step with `new` tokens after `past` cached ones (random cache, full mask)."""
    kv_heads, head_dim = c.num_key_value_heads, c.hidden_size // c.num_attention_heads
    feeds = [torch.randint(3, c.vocab_size, (batch, new), generator=gen).to(device),
             torch.ones(batch, past + new, dtype=torch.int64, device=device),
             torch.arange(past, past + new, dtype=torch.int64, device=device).expand(batch, new).contiguous()]
    for _ in range(2 * c.num_hidden_layers):
        feeds.append((torch.randn(batch, kv_heads, past, head_dim, generator=gen) * 0.5).to(device, torch.float16))
    return feeds


def contiguous_initializers(program):
    """Makes the exported program's initializers contiguous. The exporter folds each Linear's weight
    transpose into a transposed numpy view, which onnx_ir writes out element by element (about 20 s per GB:
    most of an 8 GB export); torch copies it with every core."""
    import numpy as np
    from onnxscript import ir
    for value in program.model.graph.initializers.values():
        t = value.const_value
        raw = getattr(t, "raw", None)
        if isinstance(raw, np.ndarray) and not raw.flags.c_contiguous:
            try:
                dense = torch.from_numpy(raw).contiguous().numpy()
            except TypeError:  # a dtype torch does not take from numpy
                dense = np.ascontiguousarray(raw)
            value.const_value = ir.Tensor(dense, dtype=t.dtype, name=t.name)


def export(model, c, path):
    in_names, out_names = io_names(c.num_hidden_layers)
    gen = torch.Generator().manual_seed(1)
    args = tuple(step_inputs(c, 1, 5, 3, next(model.parameters()).device, gen))
    # One named dim for every layer's cached length and one for the new tokens, as optimum names them: with
    # Dim.DYNAMIC per input torch gives each cache its own symbol and nothing in the graph says they are
    # equal, so builders cannot prove the grouped-K/V and in-place cache patterns of the layers whose symbol
    # differs (measured: half the layers of a 2-layer export kept their Concat and repeat_kv copies).
    dyn = torch.export.Dim.DYNAMIC
    seq, past = torch.export.Dim("sequence_length"), torch.export.Dim("past_sequence_length")
    shapes = [{1: seq}, {1: dyn}, {1: seq}] + [{2: past}] * (2 * c.num_hidden_layers)
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        program = torch.onnx.export(Step(model, c), args, input_names=in_names, output_names=out_names,
                                    dynamo=True, dynamic_shapes=(tuple(shapes),))
    contiguous_initializers(program)
    program.save(path, external_data=True)


def check(model, c, path):
    import numpy as np
    import onnxruntime as ort
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    in_names, _ = io_names(c.num_hidden_layers)
    gen = torch.Generator().manual_seed(2)
    worst = 0.0
    for past, new in ((1, 7), (9, 1)):
        feeds = step_inputs(c, 1, past, new, "cpu", gen)
        with torch.no_grad():
            want = Step(model.float().cpu(), c)(*[f.float() if f.is_floating_point() else f for f in feeds])
        got = s.run(None, {n: f.numpy() for n, f in zip(in_names, feeds)})
        for w, g in zip(want, got):
            worst = max(worst, float(np.abs(w.numpy() - g.astype(np.float32)).max()))
    log(f"check: onnxruntime vs PyTorch (float32 reference) max abs diff {worst:.3g}")
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("--layers", type=int)
    ap.add_argument("--tiny", action="store_true", help="tiny config for CPU tests")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    layers = a.layers or (2 if a.tiny else 14)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    t0 = time.time()
    model, c = build(layers, a.tiny, device)
    t_build = time.time() - t0
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    log(f"built LlamaForCausalLM {layers} layers fp16 on {device} in {t_build:.1f}s: {weight_bytes / 1e9:.3f} GB")
    partial = a.outdir.rstrip("/") + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(partial)
    t1 = time.time()
    with torch.no_grad():
        export(model, c, os.path.join(partial, "model.onnx"))
    t_export = time.time() - t1
    info = dict(model="LlamaForCausalLM", layers=layers, tiny=a.tiny, dtype="float16",
                weight_bytes=weight_bytes, torch=torch.__version__, build_s=round(t_build, 1),
                export_s=round(t_export, 1), config={k: getattr(c, k, v) for k, v in (TINY if a.tiny else LLAMA3_8B).items()})
    import transformers
    info["transformers"] = transformers.__version__
    if a.check:
        info["check_max_abs_diff"] = check(model, c, os.path.join(partial, "model.onnx"))
    with open(os.path.join(partial, "export.json"), "w") as f:
        json.dump(info, f)
    shutil.rmtree(a.outdir, ignore_errors=True)
    os.rename(partial, a.outdir)
    print(json.dumps(info), flush=True)


if __name__ == "__main__":
    main()
