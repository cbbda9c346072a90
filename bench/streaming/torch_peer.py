#!/usr/bin/env python3
"""PyTorch peers of streamrt's weight-streaming benchmark, in one process, on the LlamaStack of
export_llama.py (same config options, same seed, fp16):

    python3 bench/streaming/torch_peer.py [--hidden 4096 --heads 32 --intermediate 11008 --layers 20]
        --seqs 1,2048 --budgets 0,10,...,100 --iters 5 --warmup 1 --json OUT [--deadline-s S] [--tiny]

JSON lines (appended to --json and printed), one per measurement:
  h2d_bandwidth            pinned host -> device copies of a 1 GiB tensor: "gbps" (median), "max_gbps"
  h2d_bandwidth_pageable   the same from pageable memory (what accelerate's copies get)
  torch_resident           the whole model on the GPU, per seq (budget_pct 100)
  torch_prefetch           per (seq, budget): the first nn.Linear weights in execution order up to the budget
                           stay on the GPU; the others live in pinned host memory and are copied on a side
                           stream into a ring of 3 device buffers, prefetch depth 2 (the copy for streamed
                           linear j+2 is issued when linear j starts), with events so a linear waits only for
                           its own weight and a buffer is refilled only after its consumer finished
  accelerate_cpu_offload   accelerate.cpu_offload(model, execution_device): per seq, budget-independent
with "median_ms", "min_ms", "max_ms", "n" (timed runs), or "error": "failed: ..." / "skipped: ...".
Latency: median over --iters runs of the wall time of one forward between two device synchronizations
(after --warmup untimed runs). A point stops early (at least one timed run) when it would pass its time box.

Correctness: every torch_prefetch and accelerate point compares its last output with the resident output
("check": "exact" or "max_abs_diff=..."). Without CUDA (tests) everything runs on the CPU: the prefetch loop
then copies synchronously (no streams or events) and "bandwidth" is a host memcpy; lines say "device": "cpu".
"""
import argparse
import contextlib
import json
import os
import statistics
import sys
import time
import traceback

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_llama  # noqa: E402  (model config options and the seeded model)

RING = 3            # device buffers of the prefetch loop
PREFETCH_DEPTH = 2  # copies in flight ahead of the linear being computed


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def short_error(e):
    lines = [line.strip() for line in str(e).strip().splitlines() if line.strip()]
    text = f"{type(e).__name__}: {lines[0] if lines else ''}"
    return text if len(text) <= 300 else text[:297] + "..."


def int_list(s):
    return [int(x) for x in s.split(",") if x.strip()]


class Clock:
    """The run's deadline; every measurement gets a time box within it."""

    def __init__(self, deadline_s):
        self.start = time.time()
        self.deadline = None if deadline_s is None else self.start + deadline_s

    def left(self, reserve=0.0):
        return float("inf") if self.deadline is None else self.deadline - reserve - time.time()


class Recorder:
    def __init__(self, path, device):
        self.path = path
        self.device = device

    def write(self, rec):
        rec = dict(rec, device=self.device.type)
        line = json.dumps(rec)
        print(line, flush=True)
        if self.path:
            with open(self.path, "a") as f:
                f.write(line + "\n")
        return rec

    def times(self, impl, times, **extra):
        return self.write(dict(impl=impl, median_ms=round(statistics.median(times), 4), min_ms=round(times[0], 4),
                               max_ms=round(times[-1], 4), n=len(times), **extra))

    def error(self, impl, error, **extra):
        return self.write(dict(impl=impl, median_ms=None, error=error, **extra))


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def timed(fn, device, warmup, iters, time_box_s):
    """(sorted per-run ms, last output): warmup runs, then up to `iters` timed runs; stops after at least
    one timed run once the time box is spent."""
    t_start = time.time()
    out = None
    for _ in range(warmup):
        out = fn()
        if time.time() - t_start > time_box_s:
            break
    times = []
    for _ in range(iters):
        synchronize(device)
        t0 = time.perf_counter()
        out = fn()
        synchronize(device)
        times.append((time.perf_counter() - t0) * 1e3)
        if time.time() - t_start > time_box_s:
            break
    return sorted(times), out


def compare(out, ref):
    if out is None or ref is None:
        return "n/a"
    if torch.equal(out, ref):
        return "exact"
    return f"max_abs_diff={float((out.float() - ref.float()).abs().max()):.3g}"


# --------------------------------------------------------------------------------------- bandwidth

def measure_bandwidth(device, nbytes, reps, pinned=True):
    """Median and best GB/s (1e9 bytes) of host -> device copies of an nbytes buffer."""
    cuda = device.type == "cuda"
    src = torch.empty(nbytes, dtype=torch.uint8, pin_memory=cuda and pinned)
    src.fill_(1)
    dst = torch.empty(nbytes, dtype=torch.uint8, device=device)
    dst.copy_(src, non_blocking=cuda)  # warmup
    synchronize(device)
    ms = []
    for _ in range(reps):
        synchronize(device)
        t0 = time.perf_counter()
        dst.copy_(src, non_blocking=cuda)
        synchronize(device)
        ms.append((time.perf_counter() - t0) * 1e3)
    ms.sort()
    del src, dst
    gbps = [nbytes / (t / 1e3) / 1e9 for t in ms]
    return dict(bytes=nbytes, median_ms=round(statistics.median(ms), 4), min_ms=round(ms[0], 4),
                gbps=round(statistics.median(gbps), 3), max_gbps=round(max(gbps), 3), n=reps)


# --------------------------------------------------------------------------------------- prefetch loop

def execution_order(model, x):
    """nn.Linear modules in the order a forward calls them."""
    order = []
    handles = [m.register_forward_pre_hook(lambda mod, inp: order.append(mod) if mod not in order else None)
               for m in model.modules() if isinstance(m, nn.Linear)]
    try:
        with torch.no_grad():
            model(x)
    finally:
        for h in handles:
            h.remove()
    return order


class PrefetchLoop:
    """Hand-written weight streaming for the nn.Linear weights of `model` (see the module doc).

    Every linear weight is kept in (pinned) host memory; set_budget(bytes) puts the first weights in
    execution order that fit the budget on the device and streams the others through a ring of RING
    device buffers on a side stream. Forward pre/post hooks swap module._parameters['weight'] to the
    device copy or the ring buffer's view."""

    def __init__(self, model, order, device):
        self.model, self.order, self.device = model, order, device
        self.cuda = device.type == "cuda"
        self.index = {m: i for i, m in enumerate(order)}
        self.host = []
        for m in order:
            w = m.weight.detach()
            h = torch.empty(w.shape, dtype=w.dtype, pin_memory=self.cuda)
            h.copy_(w)
            self.host.append(h)
        synchronize(device)
        for m in order:  # the device copies go: only the budget's weights and the ring stay on the device
            m._parameters["weight"] = None
        self.nbytes = [h.numel() * h.element_size() for h in self.host]
        self.streamable_bytes = sum(self.nbytes)
        self.device_weights = [None] * len(order)
        self.streamed = []        # indices (into order) of the streamed linears, in execution order
        self.stream_pos = {}      # index -> position among the streamed
        self.views = []           # per streamed position: its ring buffer's view
        self.ring = []
        self.copy_stream = torch.cuda.Stream(device) if self.cuda else None
        self.ready = [torch.cuda.Event() for _ in range(RING)] if self.cuda else None  # copy done
        self.done = [torch.cuda.Event() for _ in range(RING)] if self.cuda else None   # consumer done
        self.handles = [model.register_forward_pre_hook(self._on_forward)]
        for m in order:
            self.handles.append(m.register_forward_pre_hook(self._before_linear))
            self.handles.append(m.register_forward_hook(self._after_linear))

    def set_budget(self, budget_bytes):
        """Device-resident prefix of the weights within budget_bytes; returns the resident bytes."""
        resident, used = [], 0
        for i, n in enumerate(self.nbytes):
            if used + n > budget_bytes:
                break
            resident.append(i)
            used += n
        keep = set(resident)
        for i in range(len(self.order)):
            if i in keep and self.device_weights[i] is None:
                self.device_weights[i] = self.host[i].to(self.device, non_blocking=self.cuda)
            elif i not in keep:
                self.device_weights[i] = None
        self.streamed = [i for i in range(len(self.order)) if i not in keep]
        self.stream_pos = {i: j for j, i in enumerate(self.streamed)}
        numel = max((self.host[i].numel() for i in self.streamed), default=0)
        slots = min(RING, len(self.streamed))
        self.ring = [torch.empty(numel, dtype=self.host[0].dtype, device=self.device) for _ in range(slots)]
        self.views = [self.ring[j % RING][:self.host[i].numel()].view(self.host[i].shape)
                      for j, i in enumerate(self.streamed)]
        synchronize(self.device)
        return used

    def restore(self):
        """All weights back on the device as parameters; hooks removed."""
        for h in self.handles:
            h.remove()
        for i, m in enumerate(self.order):
            w = self.device_weights[i] if self.device_weights[i] is not None else self.host[i].to(self.device)
            m._parameters["weight"] = nn.Parameter(w, requires_grad=False)
        self.ring, self.views, self.host, self.device_weights = [], [], [], []
        synchronize(self.device)

    def _issue(self, j):
        """Starts the copy of streamed weight j into its ring buffer (after the buffer's last consumer)."""
        if j >= len(self.streamed):
            return
        i, slot = self.streamed[j], j % RING
        if not self.cuda:
            self.views[j].copy_(self.host[i])
            return
        with torch.cuda.stream(self.copy_stream):
            self.copy_stream.wait_event(self.done[slot])  # an event never recorded does not block
            self.views[j].copy_(self.host[i], non_blocking=True)
            self.ready[slot].record(self.copy_stream)

    def _on_forward(self, module, inputs):
        for j in range(PREFETCH_DEPTH):
            self._issue(j)

    def _before_linear(self, module, inputs):
        i = self.index[module]
        j = self.stream_pos.get(i)
        if j is None:
            module._parameters["weight"] = self.device_weights[i]
            return
        self._issue(j + PREFETCH_DEPTH)
        if self.cuda:
            torch.cuda.current_stream(self.device).wait_event(self.ready[j % RING])
        module._parameters["weight"] = self.views[j]

    def _after_linear(self, module, inputs, output):
        j = self.stream_pos.get(self.index[module])
        if j is not None and self.cuda:
            self.done[j % RING].record(torch.cuda.current_stream(self.device))


# --------------------------------------------------------------------------------------- the run

class Peer:
    def __init__(self, args):
        self.args = args
        dev = args.device
        if dev == "auto":
            dev = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(dev)
        self.clock = Clock(args.deadline_s)
        self.out = Recorder(args.json, self.device)
        self.cfg = export_llama.model_config(args)
        self.model = None
        self.inputs, self.refs = {}, {}
        self.streamable_bytes = None

    def box(self, reserve=0.0):
        """Time box of one point: --point-time-s within what is left before `reserve`."""
        return min(self.args.point_time_s, self.clock.left(reserve))

    def guarded(self, impl, fn, **base):
        """Runs one measurement; an exception becomes a "failed: ..." line."""
        try:
            return fn()
        except Exception as e:  # noqa: BLE001 - e.g. out of memory: record and go on
            log(traceback.format_exc())
            if self.device.type == "cuda":
                torch.cuda.synchronize()
                torch.cuda.empty_cache()
            return self.out.error(impl, f"failed: {short_error(e)}", **base)

    def bandwidth(self):
        a = self.args
        nbytes = a.bw_bytes or ((64 << 20) if a.tiny else (1 << 30))
        for impl, pinned in (("h2d_bandwidth", True), ("h2d_bandwidth_pageable", False)):
            self.guarded(impl, lambda: self.out.write(dict(impl=impl, **measure_bandwidth(
                self.device, nbytes, a.bw_reps, pinned))))

    def build(self):
        t0 = time.time()
        self.model = export_llama.build_llama(self.cfg, torch.float16, self.device)
        g = torch.Generator(device="cpu").manual_seed(1)
        for seq in self.args.seqs:
            self.inputs[seq] = torch.randn(1, seq, self.cfg["hidden"], generator=g).to(self.device, torch.float16)
        linears = [m for m in self.model.modules() if isinstance(m, nn.Linear)]
        self.streamable_bytes = sum(m.weight.numel() * m.weight.element_size() for m in linears)
        synchronize(self.device)
        log(f"built LlamaStack {self.cfg} fp16 on {self.device} in {time.time() - t0:.1f}s: "
            f"{self.streamable_bytes / 1e9:.3f} GB of linear weights")

    def forward_fn(self, seq):
        x = self.inputs[seq]
        model = self.model

        def fn():
            with torch.no_grad():
                return model(x)
        return fn

    def resident(self):
        for seq in self.args.seqs:
            def run(seq=seq):
                times, out = timed(self.forward_fn(seq), self.device, self.args.warmup, self.args.iters, self.box())
                self.refs[seq] = out.clone()
                return self.out.times("torch_resident", times, seq=seq, budget_pct=100,
                                      budget_bytes=self.streamable_bytes, streamable_bytes=self.streamable_bytes)
            self.guarded("torch_resident", run, seq=seq, budget_pct=100)

    def prefetch(self):
        a = self.args
        impl = "torch_prefetch"
        reserve = 0.0
        if "accelerate" in a.impls:  # time kept for accelerate, at most a fifth of the run's
            reserve = a.accelerate_reserve_s if a.deadline_s is None else min(a.accelerate_reserve_s, a.deadline_s / 5)
        try:
            order = execution_order(self.model, self.inputs[a.seqs[0]])
            loop = PrefetchLoop(self.model, order, self.device)
        except Exception as e:  # noqa: BLE001
            log(traceback.format_exc())
            for budget in a.budgets:
                for seq in a.seqs:
                    self.out.error(impl, f"failed: setting up the prefetch loop: {short_error(e)}", seq=seq,
                                   budget_pct=budget)
            return
        note = None if loop.cuda else "cpu: synchronous copies, no streams or events"
        try:
            for budget in a.budgets:
                budget_bytes = loop.streamable_bytes * budget // 100
                resident = None
                for seq in a.seqs:
                    base = dict(seq=seq, budget_pct=budget, budget_bytes=budget_bytes,
                                streamable_bytes=loop.streamable_bytes)
                    if self.clock.left(reserve) < 1:
                        self.out.error(impl, "skipped: deadline", **base)
                        continue

                    def run(base=base, seq=seq):
                        nonlocal resident
                        if resident is None:
                            resident = loop.set_budget(budget_bytes)
                        times, out = timed(self.forward_fn(seq), self.device, a.warmup, a.iters, self.box(reserve))
                        return self.out.times(impl, times, resident_bytes=resident,
                                              streamed_weights=len(loop.streamed), ring=RING,
                                              prefetch_depth=PREFETCH_DEPTH, check=compare(out, self.refs.get(seq)),
                                              **base, **({"note": note} if note else {}))
                    rec = self.guarded(impl, run, **base)
                    log(f"torch_prefetch seq {seq} budget {budget}%: {rec.get('median_ms')} ms, "
                        f"check {rec.get('check', rec.get('error'))}")
        finally:
            loop.restore()

    def accelerate(self):
        a = self.args
        impl = "accelerate_cpu_offload"
        if self.clock.left() < 5:
            for seq in a.seqs:
                self.out.error(impl, "skipped: deadline", seq=seq)
            return
        try:
            from accelerate import cpu_offload
            t0 = time.time()
            cpu_offload(self.model, execution_device=self.device)
            synchronize(self.device)
            setup_s = round(time.time() - t0, 2)
        except Exception as e:  # noqa: BLE001
            log(traceback.format_exc())
            for seq in a.seqs:
                self.out.error(impl, f"failed: {short_error(e)}", seq=seq)
            return
        for seq in a.seqs:
            if self.clock.left() < 1:
                self.out.error(impl, "skipped: deadline", seq=seq)
                continue

            def run(seq=seq):
                box = min(a.accelerate_time_s, self.clock.left())
                times, out = timed(self.forward_fn(seq), self.device, a.accelerate_warmup, a.accelerate_iters, box)
                return self.out.times(impl, times, seq=seq, setup_s=setup_s, check=compare(out, self.refs.get(seq)))
            rec = self.guarded(impl, run, seq=seq)
            log(f"accelerate cpu_offload seq {seq}: {rec.get('median_ms')} ms, check {rec.get('check')}")

    def run(self):
        a = self.args
        log(f"device {self.device}" + (f" ({torch.cuda.get_device_name()})" if self.device.type == "cuda" else ""))
        if "bandwidth" in a.impls:
            self.bandwidth()
        try:
            self.build()
        except Exception as e:  # noqa: BLE001 - nothing else can run
            log(traceback.format_exc())
            for seq in a.seqs:
                self.out.error("torch_resident", f"failed: building the model: {short_error(e)}", seq=seq)
            return 1
        phases = [self.resident] + [getattr(self, p) for p in ("prefetch", "accelerate") if p in a.impls]
        for phase in phases:  # accelerate last: it replaces the model's parameters by hooks
            try:
                phase()
            except Exception:  # noqa: BLE001 - e.g. restoring the weights failed: the next phase reports
                log(traceback.format_exc())
        log(f"torch_peer done in {time.time() - self.clock.start:.1f}s")
        return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    export_llama.add_model_args(ap)
    ap.add_argument("--seqs", type=int_list, default=[1, 2048])
    ap.add_argument("--budgets", type=int_list, default=list(range(0, 101, 10)), help="percent of the linear weights")
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--json", help="append the JSON lines to this file")
    ap.add_argument("--device", default="auto", help="auto (cuda when available) | cuda | cpu")
    ap.add_argument("--impls", default="bandwidth,prefetch,accelerate",
                    help="what to run besides the resident model (default: bandwidth,prefetch,accelerate)")
    ap.add_argument("--deadline-s", type=float, help="seconds for the whole run (points past it: skipped)")
    ap.add_argument("--point-time-s", type=float, default=30, help="time box of one point (default 30)")
    ap.add_argument("--accelerate-iters", type=int, default=2)
    ap.add_argument("--accelerate-warmup", type=int, default=1)
    ap.add_argument("--accelerate-time-s", type=float, default=40, help="time box per seq (default 40)")
    ap.add_argument("--accelerate-reserve-s", type=float, default=45,
                    help="seconds of the deadline kept for accelerate (default 45, at most a fifth of --deadline-s)")
    ap.add_argument("--bw-bytes", type=int, help="bytes of the bandwidth test (default 1 GiB; 64 MiB with --tiny)")
    ap.add_argument("--bw-reps", type=int, default=5)
    args = ap.parse_args()
    args.impls = [x.strip() for x in args.impls.split(",") if x.strip()]
    sys.exit(Peer(args).run())


if __name__ == "__main__":
    main()
