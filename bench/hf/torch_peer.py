#!/usr/bin/env python3
"""PyTorch peers of issue 16's benchmark on one model (bench/hf/models.py: the same seeded float16 weights as the
export), in two phases so that compiling can run next to other work and timing never does:

    python3 bench/hf/torch_peer.py --model llama --impls eager,compile --batches 1,8 \
        --points prefill:1,prefill:512,decode:512 --inputs DIR --json OUT.jsonl \
        [--compile-until EPOCH] [--go FILE --lock FILE] [--ready FILE] [--streamrt-out DIR] [--check-out DIR]

Phase 1: build the model, wait for the inputs (DIR/<point>/*.npy, DIR/ready), compile every point of the
compiled impls (eager, compile = torch.compile(m), ro = torch.compile(m, mode="reduce-overhead")) and run it
3 times (reduce-overhead records its CUDA graphs; the 2 runs after the compiling one hold --lock, an flock that
streamrt's runs hold too), stopping at --compile-until (later points: "n/a"); then write --ready.
Phase 2 (after --go exists, holding --lock so that one process times at a time): per point and impl, WARMUP untimed and ITERS timed forwards, each between CUDA events after a
synchronize (host clock on the CPU); one JSON line per measurement {model, batch, kind, n, impl, median_ms,
...} or {..., "error": "n/a: ..." | "failed: ..."}. The eager impl also checks streamrt's outputs
(--streamrt-out/<point>/*.npy) against its own: max abs error of the logits (and presents) and top-1 agreement.

Compiled modules take the sequence / past axis as dynamic (torch._dynamo.maybe_mark_dynamic; sizes 1 are
specialized by dynamo), so a model needs 4 prefill graphs (batch 1 / 8 x 1 token / more) and 2 decode graphs;
reduce-overhead records one CUDA graph per shape. Decode pasts are marked static addresses for
reduce-overhead (torch._dynamo.mark_static_address, guard=False), so its graphs read the cache in place
instead of copying it in before each replay.
"""
import argparse
import contextlib
import fcntl
import json
import os
import signal
import statistics
import sys
import time
import traceback

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402


class OutOfTime(Exception):
    pass


def log(msg):
    print(f"[torch_peer {os.getpid()}] {msg}", file=sys.stderr, flush=True)


def short_error(e):
    lines = [l.strip() for l in str(e).strip().splitlines() if l.strip()]
    text = f"{type(e).__name__}: {lines[0] if lines else ''}"
    return text if len(text) <= 240 else text[:237] + "..."


def wait_for(path, until, what):
    while not os.path.exists(path):
        if time.time() > until:
            raise OutOfTime(f"timed out waiting for {what}")
        time.sleep(0.25)


class alarm:
    """Raises OutOfTime in the block after `seconds` (SIGALRM; compile work cannot be cancelled otherwise)."""

    def __init__(self, seconds, what):
        self.seconds, self.what = seconds, what

    def __enter__(self):
        if self.seconds <= 0:
            raise OutOfTime(f"{self.what}: time budget spent")

        def on_alarm(signum, frame):
            raise OutOfTime(f"{self.what}: time budget spent")
        self.old = signal.signal(signal.SIGALRM, on_alarm)
        signal.alarm(max(1, int(self.seconds)))

    def __exit__(self, *exc):
        signal.alarm(0)
        signal.signal(signal.SIGALRM, self.old)
        return False


class Peer:
    def __init__(self, a):
        self.a = a
        self.device = torch.device(a.device)
        self.cuda = self.device.type == "cuda"
        self.out = open(a.json, "a")
        self.fns = {}      # impl -> {kind: callable}
        self.ready = {}    # (impl, point key) -> None | error string
        self.compile_s = {}
        self.inputs, self.ro_inputs = {}, {}

    @contextlib.contextmanager
    def gpu_lock(self):
        """Holds --lock (an flock that streamrt's runs hold too): one process on the GPU at a time."""
        if not self.a.lock:
            yield
            return
        with open(self.a.lock, "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize()

    def emit(self, rec):
        self.out.write(json.dumps(rec) + "\n")
        self.out.flush()

    def base(self, batch, kind, n, impl):
        return dict(model=self.a.model, batch=batch, kind=kind, n=n, impl=impl, torch=torch.__version__,
                    device=torch.cuda.get_device_name() if self.cuda else "cpu")

    def load_inputs(self, batch, kind, n):
        d = os.path.join(self.a.inputs, models.point_key(self.a.model, batch, kind, n))
        names, _ = models.io_names(kind, self.c.num_hidden_layers)
        return [torch.from_numpy(np.load(os.path.join(d, nm + ".npy"))).to(self.device) for nm in names]

    def make_fns(self):
        prefill, step = models.prefill_module(self.model), models.step_module(self.model, self.c)
        for impl in self.a.impls:
            if impl == "eager":
                self.fns[impl] = {"prefill": prefill, "decode": step}
            else:
                mode = "reduce-overhead" if impl == "ro" else None
                self.fns[impl] = {"prefill": torch.compile(prefill, mode=mode), "decode": torch.compile(step, mode=mode)}

    def inputs_of(self, impl, key):
        """reduce-overhead's decode pasts: copies marked as static addresses (so that the other impls'
        graphs, which guard on their inputs, never see the mark)."""
        inputs = self.inputs[key]
        if impl != "ro" or not key.split("_")[-1].startswith("decode"):
            return inputs
        if key not in self.ro_inputs:
            pasts = [t.clone() for t in inputs[3:]]
            for t in pasts:
                torch._dynamo.mark_static_address(t, guard=False)
            self.ro_inputs[key] = inputs[:3] + pasts
        return self.ro_inputs[key]

    def call(self, impl, kind, inputs):
        if impl == "ro":
            torch.compiler.cudagraph_mark_step_begin()
        return self.fns[impl][kind](*inputs)

    def prepare(self, impl, batch, kind, n, inputs, until):
        """Compiles (first call) and warms a compiled impl at a point."""
        key = models.point_key(self.a.model, batch, kind, n)
        if n > 1:  # the sequence / past axis: one graph for every length above 1
            for t in inputs[:2] if kind == "prefill" else inputs[1:2]:
                torch._dynamo.maybe_mark_dynamic(t, 1)
            if kind == "decode":
                for t in inputs[3:]:
                    torch._dynamo.maybe_mark_dynamic(t, 2)
        t0 = time.time()
        try:
            with alarm(until - time.time(), "torch.compile"), torch.no_grad():
                self.call(impl, kind, inputs)  # compiles (CPU) and runs once
                self.sync()
                self.compile_s[(impl, key)] = round(time.time() - t0, 1)
                with self.gpu_lock():  # reduce-overhead records its CUDA graph here: not next to streamrt
                    for _ in range(2):
                        self.call(impl, kind, inputs)
                    self.sync()
            self.ready[(impl, key)] = None
            log(f"{impl} {key}: compiled and warmed in {time.time() - t0:.1f}s")
            if self.cuda:  # 8 such processes, streamrt and the exports share the GPU's memory meanwhile
                torch.cuda.empty_cache()
        except OutOfTime as e:
            self.ready[(impl, key)] = f"n/a: {e}"
            log(f"{impl} {key}: {e}")
        except Exception as e:  # noqa: BLE001 - a compile failure is a result
            log(traceback.format_exc())
            # the alarm's exception may come out wrapped (e.g. BackendCompilerFailed)
            late = time.time() >= until
            self.ready[(impl, key)] = "n/a: torch.compile: time budget spent" if late else f"failed: {short_error(e)}"

    def time_point(self, impl, kind, inputs):
        w, n = self.a.warmup, self.a.iters
        times, walls = [], []
        with torch.no_grad():
            for _ in range(w):
                self.call(impl, kind, inputs)
            self.sync()
            if self.cuda:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            for _ in range(n):
                t0 = time.perf_counter()
                if self.cuda:
                    start.record()
                out = self.call(impl, kind, inputs)
                if self.cuda:
                    end.record()
                    end.synchronize()
                    times.append(start.elapsed_time(end))
                walls.append((time.perf_counter() - t0) * 1e3)
                del out
        times = times or walls
        return sorted(times), statistics.median(walls)

    def check(self, kind, key, out):
        """streamrt's outputs (npy) against this eager output."""
        d = os.path.join(self.a.streamrt_out or "", key)
        if not self.a.streamrt_out or not os.path.exists(os.path.join(d, "logits.npy")):
            return None
        outs = [out] if isinstance(out, torch.Tensor) else list(out)
        _, names = models.io_names(kind, self.c.num_hidden_layers)
        res = {}
        ref = outs[0].float()
        got = torch.from_numpy(np.load(os.path.join(d, "logits.npy"))).to(self.device).float()
        if tuple(got.shape) != tuple(ref.shape):
            return dict(error=f"logits shape {tuple(got.shape)} vs PyTorch {tuple(ref.shape)}")
        res["logits_max_abs_err"] = float((got - ref).abs().max())
        res["logits_max_abs"] = float(ref.abs().max())
        res["top1_agree"] = float((got.argmax(-1) == ref.argmax(-1)).float().mean())
        worst = 0.0
        for nm, t in zip(names[1:], outs[1:]):
            p = os.path.join(d, nm + ".npy")
            if os.path.exists(p):
                g = torch.from_numpy(np.load(p)).to(self.device).float()
                worst = max(worst, float((g - t.float()).abs().max()) if g.shape == t.shape else float("inf"))
        if len(outs) > 1:
            res["present_max_abs_err"] = worst
        return res

    def profile(self, kind, inputs):
        """PyTorch's own per-kernel GPU time for eager at the profiled point (top 25 by device time)."""
        from torch.profiler import ProfilerActivity, profile
        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.cuda else [])
        with torch.no_grad(), profile(activities=acts) as prof:
            for _ in range(5):
                self.call("eager", kind, inputs)
            self.sync()
        rows = []
        for e in prof.key_averages():
            if self.cuda:
                dev = getattr(e, "self_device_time_total", None)
                dev = getattr(e, "self_cuda_time_total", 0) if dev is None else dev
            else:
                dev = e.self_cpu_time_total
            if dev > 0:  # microseconds over 5 runs
                rows.append((e.key, dev / 5 / 1e3, e.count // 5))
        rows.sort(key=lambda r: -r[1])
        return [dict(name=k[:80], ms=round(ms, 4), calls=c) for k, ms, c in rows[:25]]

    def measure(self, batch, kind, n):
        key = models.point_key(self.a.model, batch, kind, n)
        if key not in self.inputs:
            for impl in self.a.impls:
                self.emit(dict(self.base(batch, kind, n, impl), error="failed: inputs missing"))
            return
        for impl in self.a.impls:
            rec = self.base(batch, kind, n, impl)
            err = self.ready.get((impl, key))
            if impl != "eager" and (impl, key) not in self.ready:
                err = "n/a: not compiled"
            if err:
                self.emit(dict(rec, error=err))
                continue
            try:
                inputs = self.inputs_of(impl, key)
                times, wall = self.time_point(impl, kind, inputs)
                rec.update(median_ms=round(statistics.median(times), 4), min_ms=round(times[0], 4),
                           max_ms=round(times[-1], 4), wall_median_ms=round(wall, 4), iters=len(times),
                           compile_s=self.compile_s.get((impl, key)))
                if impl == "eager":
                    with torch.no_grad():
                        out = self.call(impl, kind, inputs)
                    chk = self.check(kind, key, out)
                    if chk is not None:
                        rec["check"] = chk
                    del out
                    if self.a.profile_point == f"b{batch}:{kind}:{n}":
                        rec["profile"] = self.profile(kind, inputs)
            except Exception as e:  # noqa: BLE001 - e.g. out of memory: a table cell, not a crash
                log(traceback.format_exc())
                rec["error"] = f"failed: {short_error(e)}"
            self.emit(rec)
            if self.cuda:
                torch.cuda.empty_cache()

    def run(self):
        a = self.a
        deadline = a.deadline
        points = [(b, k, n) for b in a.batches for k, n in a.points]
        t0 = time.time()
        self.model, self.c = models.build(a.model, self.device, a.tiny)
        log(f"model built in {time.time() - t0:.1f}s")
        self.make_fns()
        torch._dynamo.config.cache_size_limit = 64
        if hasattr(torch._dynamo.config, "recompile_limit"):
            torch._dynamo.config.recompile_limit = 64
        wait_for(os.path.join(a.inputs, "ready"), deadline, "the inputs")
        for b, k, n in points:
            key = models.point_key(a.model, b, k, n)
            try:
                self.inputs[key] = self.load_inputs(b, k, n)
            except Exception as e:  # noqa: BLE001
                log(f"inputs of {key}: {short_error(e)}")
        for impl in a.impls:
            if impl == "eager":
                continue
            for b, k, n in points:
                key = models.point_key(a.model, b, k, n)
                if key in self.inputs:
                    self.prepare(impl, b, k, n, self.inputs_of(impl, key), a.compile_until)
        if self.cuda:
            torch.cuda.empty_cache()
        if a.ready:
            open(a.ready, "w").write("ready\n")
        log(f"phase 1 done in {time.time() - t0:.1f}s")
        if a.go:
            wait_for(a.go, deadline, "the go signal")
        with self.gpu_lock():
            log("timing")
            for b, k, n in points:
                if time.time() > deadline:
                    for impl in a.impls:
                        self.emit(dict(self.base(b, k, n, impl), error="n/a: time budget spent"))
                    continue
                self.measure(b, k, n)
        log(f"done in {time.time() - t0:.1f}s")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, choices=sorted(models.MODELS))
    ap.add_argument("--impls", default="eager,compile,ro", type=lambda s: [x for x in s.split(",") if x])
    ap.add_argument("--batches", default="1,8", type=lambda s: [int(x) for x in s.split(",") if x])
    ap.add_argument("--points", default="prefill:1,prefill:512,prefill:2048,decode:512,decode:2048",
                    type=models.parse_points)
    ap.add_argument("--inputs", required=True, help="folder of <point key>/<input>.npy and a 'ready' file")
    ap.add_argument("--json", required=True, help="JSON lines are appended here")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--compile-until", type=float, default=float("inf"), help="epoch seconds: compiling stops")
    ap.add_argument("--deadline", type=float, default=float("inf"), help="epoch seconds: timing stops")
    ap.add_argument("--ready", help="written when phase 1 is done")
    ap.add_argument("--go", help="phase 2 waits for this file")
    ap.add_argument("--lock", help="phase 2 holds an exclusive flock on this file")
    ap.add_argument("--streamrt-out", help="folder of <point key>/<output>.npy from streamrt run --output-dir")
    ap.add_argument("--profile-point", default="", help="e.g. b1:prefill:512: PyTorch profiler table for eager")
    a = ap.parse_args()
    for impl in a.impls:
        if impl not in ("eager", "compile", "ro"):
            ap.error(f"bad impl {impl} (eager, compile, ro)")
    Peer(a).run()


if __name__ == "__main__":
    main()
