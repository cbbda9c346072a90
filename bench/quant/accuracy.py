#!/usr/bin/env python3
"""Logits of compressed-weight engines against the float16 engine (issue 19's accuracy columns), through the
Python package:

    python3 bench/quant/accuracy.py --plans fp16=A.plan,int8=B.plan,int4=C.plan [--device cuda]
        [--steps 256] [--prompt-len 32] [--json OUT] [--label 1b]
    python3 bench/quant/accuracy.py --tiny [--work DIR]     (CPU: exports the tiny 1b model, builds its plans)

A fixed prompt (bench/decode/decode_peer.py's prompt_ids) is prefilled after one masked-out cache position
(what examples/greedy_decode does: exports specialize an empty cache away), then --steps decode steps are
teacher-forced: every engine gets the token the fp16 engine picked greedily, each keeps its own cache (the
presents come back as numpy arrays and go in as the next pasts). For each engine and every step (the prefill's
last position included): max and mean absolute difference of the logits from fp16's, and whether the top-1
token agrees. One JSON line per compressed scheme: label, scheme, steps, max_abs_err, mean_abs_err,
top1_agree, logits_absmax (fp16's, for scale). The plans must allow --prompt-len new tokens and
prompt-len + steps + 1 cached positions (plans.py's defaults: 32 and 576).
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import plans  # noqa: E402


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def prompt_ids(n, vocab):
    """bench/decode/decode_peer.py's prompt (that module imports torch, which this process does not need)."""
    return [3 + (i * 7919) % (vocab - 3) for i in range(n)]


class Stepper:
    """One engine and its KV cache, stepped by token ids."""

    def __init__(self, engine):
        self.engine = engine
        self.ctx = engine.create_execution_context()
        self.past = {}
        self.names = [t.name for t in engine.inputs if t.name.startswith("past_key_values.")]
        for t in engine.inputs:
            if t.name.startswith("past_key_values."):
                _, heads, _, dim = t.max_shape
                self.past[t.name] = np.zeros((1, heads, 1, dim), np.float16 if t.dtype == "float16" else np.float32)
        self.mask = [0]  # the masked-out first position
        self.pos = 0

    def step(self, ids):
        n = len(ids)
        self.mask += [1] * n
        feeds = {"input_ids": np.array([ids], np.int64), "attention_mask": np.array([self.mask], np.int64),
                 "position_ids": np.arange(self.pos, self.pos + n, dtype=np.int64)[None]}
        feeds.update(self.past)
        out = self.ctx.run(feeds)
        self.pos += n
        for name in self.names:
            self.past[name] = out["present." + name[len("past_key_values."):]]
        return np.asarray(out["logits"], np.float32).reshape(-1)[-self.vocab:]

    @property
    def vocab(self):
        return next(t for t in self.engine.outputs if t.name == "logits").max_shape[-1]


def measure(plan_paths, device, steps, prompt_len):
    """{scheme: record}; plan_paths: {scheme: plan}, fp16 first."""
    import streamrt
    engines = {s: streamrt.load(p, device=device) for s, p in plan_paths.items()}
    steppers = {s: Stepper(e) for s, e in engines.items()}
    ref = steppers["fp16"]
    ids = prompt_ids(prompt_len, ref.vocab)
    err_max = {s: 0.0 for s in steppers if s != "fp16"}
    err_sum = dict.fromkeys(err_max, 0.0)
    agree = dict.fromkeys(err_max, 0)
    absmax, n = 0.0, 0
    t0 = time.time()
    feed = ids
    for _ in range(steps + 1):  # the prefill, then `steps` decode steps
        want = ref.step(feed)
        absmax = max(absmax, float(np.abs(want).max()))
        top = int(want.argmax())
        for s in err_max:
            got = steppers[s].step(feed)
            d = np.abs(got - want)
            err_max[s] = max(err_max[s], float(d.max()))
            err_sum[s] += float(d.mean())
            agree[s] += int(got.argmax()) == top
        n += 1
        feed = [top]
    log(f"accuracy: {n} steps of {len(steppers)} engines in {time.time() - t0:.1f}s")
    return {s: dict(scheme=s, steps=n, prompt_len=prompt_len, max_abs_err=round(err_max[s], 5),
                    mean_abs_err=round(err_sum[s] / n, 6), top1_agree=round(agree[s] / n, 4),
                    logits_absmax=round(absmax, 4), device=device) for s in err_max}


def tiny_plans(work, device):
    """Exports the tiny 1b model (bench/quant/export.py) and builds its fp16 / int8 / fp8 / int4 plans into `work`."""
    onnx_dir = os.path.join(work, "model-1b-tiny")
    if not os.path.exists(os.path.join(onnx_dir, "model.onnx")):
        subprocess.run([sys.executable, os.path.join(HERE, "export.py"), "1b", onnx_dir, "--tiny"], check=True,
                       stdout=subprocess.DEVNULL)
    out = {}
    for scheme in ("fp16", "int8", "fp8", "int4"):
        plan = os.path.join(work, f"1b-tiny-{scheme}.plan")
        if not os.path.exists(plan):
            rec = plans.build(os.path.join(onnx_dir, "model.onnx"), plan, scheme, device, max_new=32, opt_past=64,
                              max_past=320)
            if "error" in rec:
                raise SystemExit(f"{scheme}: {rec['error']}")
        out[scheme] = plan
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plans", help="scheme=plan,... (fp16 among them)")
    ap.add_argument("--tiny", action="store_true", help="CPU self-contained run on the tiny 1b model")
    ap.add_argument("--work", default="/tmp/bench-quant-accuracy")
    ap.add_argument("--device", default=None)
    ap.add_argument("--steps", type=int, default=256)
    ap.add_argument("--prompt-len", type=int, default=32)
    ap.add_argument("--label", default="")
    ap.add_argument("--json")
    a = ap.parse_args()
    device = a.device or ("cpu" if a.tiny else "cuda")
    if a.tiny:
        os.makedirs(a.work, exist_ok=True)
        paths = tiny_plans(a.work, device)
    else:
        if not a.plans:
            ap.error("--plans or --tiny")
        paths = dict(item.split("=", 1) for item in a.plans.split(","))
    if "fp16" not in paths or len(paths) < 2:
        ap.error("--plans needs fp16 and at least one other scheme")
    paths = dict([("fp16", paths.pop("fp16"))] + list(paths.items()))
    try:
        recs = measure(paths, device, a.steps, a.prompt_len).values()
    except Exception as e:  # noqa: BLE001 - one "error" line per scheme: the report shows why
        recs = [dict(scheme=s, error=f"failed: {type(e).__name__}: {str(e)[:200]}") for s in paths if s != "fp16"]
    rc = 0
    for r in recs:
        plans.append(a.json, dict(label=a.label, **r))
        rc |= "error" in r
    return rc


if __name__ == "__main__":
    sys.exit(main())
