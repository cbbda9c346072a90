#!/usr/bin/env python3
"""Times the benchmark models (bench/models.py) in PyTorch: eager and torch.compile (default mode).

    python3 bench/torch_peer.py --model gpt2 --batch 1 --precision fp16,bf16 [--impl eager,compile]

Per (batch, precision, impl) it prints one JSON line:
    {"model", "batch", "seq", "precision", "impl", "median_ms", "min_ms", "max_ms", "throughput", "unit", ...}
or, when that measurement could not be taken, the same keys with "median_ms": null and "error": "n/a: ...".

Latency is per forward: the GPU is synchronized before each iteration and the time between two CUDA
events around the forward is taken (launch overhead included, like streamrt run's synchronous
execute()); warmup runs first, the median over the iterations is reported. On a machine without a GPU
(tests) it times with the host clock. torch.compile failures and its time budget never stop the run:
they are reported as "n/a".
"""
import argparse
import json
import os
import signal
import statistics
import sys
import time
import traceback

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402


class CompileTimeout(Exception):
    pass


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def time_fn(fn, inputs, warmup, iters, device):
    """Per-iteration latencies in ms (sorted)."""
    cuda = device.type == "cuda"
    with torch.no_grad():
        for _ in range(warmup):
            fn(*inputs)
        times = []
        if cuda:
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            for _ in range(iters):
                start.record()
                fn(*inputs)
                end.record()
                end.synchronize()  # one forward at a time: latency, as streamrt measures it
                times.append(start.elapsed_time(end))
        else:
            for _ in range(iters):
                t0 = time.perf_counter()
                fn(*inputs)
                times.append((time.perf_counter() - t0) * 1e3)
    return sorted(times)


def short_error(e):
    # The first line says what happened (dynamo appends pages of advice after it).
    lines = [l.strip() for l in str(e).strip().splitlines() if l.strip()]
    text = f"{type(e).__name__}: {lines[0] if lines else ''}"
    return text if len(text) <= 300 else text[:297] + "..."


class Peer:
    def __init__(self, args):
        self.args = args
        self.device = torch.device(args.device)
        self.compile_spent = 0.0

    def record(self, base, impl, times=None, error=None, **extra):
        rec = dict(base, impl=impl)
        if times:
            median = statistics.median(times)
            count, unit = models.work_units(rec["model"], rec["batch"], rec["seq"], self.args.tiny)
            rec.update(median_ms=round(median, 4), min_ms=round(times[0], 4), max_ms=round(times[-1], 4),
                       throughput=round(count / (median / 1e3), 2), unit=f"{unit}/s")
        else:
            rec.update(median_ms=None, throughput=None, error=error or "n/a")
        rec.update(extra)
        print(json.dumps(rec), flush=True)
        return rec

    def eager(self, base, model, inputs):
        try:
            times = time_fn(model, inputs, self.args.warmup, self.args.iters, self.device)
            return self.record(base, "eager", times)
        except Exception as e:  # noqa: BLE001 - report (e.g. out of memory) and go on
            log(traceback.format_exc())
            return self.record(base, "eager", error=f"failed: {short_error(e)}")

    def compiled(self, base, model, inputs):
        budget = self.args.compile_budget_s
        left = None if budget is None else budget - self.compile_spent
        if left is not None and left < 1:
            return self.record(base, "compile", error="n/a: torch.compile time budget spent")
        t0 = time.time()
        old = None
        if left is not None and hasattr(signal, "SIGALRM"):
            def on_alarm(signum, frame):
                raise CompileTimeout(f"torch.compile over its time budget ({budget:.0f}s)")
            old = signal.signal(signal.SIGALRM, on_alarm)
            signal.alarm(max(1, int(left)))
        try:
            torch._dynamo.reset()
            fn = torch.compile(model, dynamic=False)
            with torch.no_grad():
                fn(*inputs)  # compiles
                if self.device.type == "cuda":
                    torch.cuda.synchronize()
            compile_s = time.time() - t0
            if old is not None:
                signal.alarm(0)
            times = time_fn(fn, inputs, self.args.warmup, self.args.iters, self.device)
            return self.record(base, "compile", times, compile_s=round(compile_s, 1))
        except BaseException as e:  # noqa: BLE001 - compile problems are results, not crashes
            if isinstance(e, KeyboardInterrupt):
                raise
            log(traceback.format_exc())
            return self.record(base, "compile", error=f"n/a: {short_error(e)}")
        finally:
            if old is not None:
                signal.alarm(0)
                signal.signal(signal.SIGALRM, old)
            self.compile_spent += time.time() - t0
            torch._dynamo.reset()

    def run(self):
        a = self.args
        seq = a.seq or models.default_seq(a.model, a.tiny)
        for precision in a.precision:
            dtype = models.to_dtype(precision)
            try:
                model = models.build_model(a.model, dtype=dtype, device=self.device, tiny=a.tiny)
            except Exception as e:  # noqa: BLE001
                log(traceback.format_exc())
                for batch in a.batch:
                    base = self.base(batch, seq, precision)
                    for impl in a.impl:
                        self.record(base, impl, error=f"failed: building the model: {short_error(e)}")
                continue
            for batch in a.batch:
                base = self.base(batch, seq, precision)
                inputs = models.example_inputs(a.model, batch, seq, dtype, self.device, a.tiny)
                for impl in a.impl:
                    if impl == "eager":
                        self.eager(base, model, inputs)
                    else:
                        self.compiled(base, model, inputs)
            del model
            if self.device.type == "cuda":
                torch.cuda.empty_cache()

    def base(self, batch, seq, precision):
        rec = dict(model=self.args.model, batch=batch, seq=seq if self.args.model != "resnet50" else None,
                   precision=precision, device=str(self.device), torch=torch.__version__)
        if self.device.type == "cuda":
            rec["gpu"] = torch.cuda.get_device_name(self.device)
            if precision == "fp32":  # fp32 matmuls/convs may run in TF32: say which
                rec["tf32_matmul"] = getattr(torch.backends.cuda.matmul, "allow_tf32", None)
                rec["tf32_cudnn"] = getattr(torch.backends.cudnn, "allow_tf32", None)
        if self.args.tiny:
            rec["tiny"] = True
        return rec


def csv_list(kind):
    return lambda s: [kind(x) for x in s.replace(" ", ",").split(",") if x]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, choices=models.MODELS)
    ap.add_argument("--batch", type=csv_list(int), default=[1], help="e.g. 1,32")
    ap.add_argument("--seq", type=int, default=None, help="sequence length (gpt2, llama; default 512)")
    ap.add_argument("--precision", type=csv_list(str), default=["fp32"], help="fp32,fp16,bf16")
    ap.add_argument("--impl", type=csv_list(str), default=["eager", "compile"], help="eager,compile")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--compile-budget-s", type=float, default=None,
                    help="total seconds this process may spend compiling; later points report n/a")
    ap.add_argument("--tiny", action="store_true", help="tiny configs (CPU tests)")
    args = ap.parse_args()
    for p in args.precision:
        if p not in ("fp32", "fp16", "bf16"):
            ap.error(f"bad precision '{p}' (fp32, fp16, bf16)")
    for i in args.impl:
        if i not in ("eager", "compile"):
            ap.error(f"bad impl '{i}' (eager, compile)")
    Peer(args).run()


if __name__ == "__main__":
    main()
