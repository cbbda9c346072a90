#!/usr/bin/env python3
"""PyTorch peers of the decode benchmark (issue 15), on the same transformers Llama as export_llama_kv.py
(same seed, float16), at each free-memory point:

    python3 bench/decode/decode_peer.py --free 1GiB,2GiB,4GiB,8GiB,empty [--layers 14] [--tiny]
        [--steps 8] [--prefill 2048] [--pasts 512,2048] [--impls prefetch,accelerate] --json OUT [--deadline-s S]

For each point a hog process (hog.py) holds all but that much device memory, then:
  torch_prefetch          every nn.Linear weight in pinned host memory (the LM head cut into 64 MiB pieces),
                          the first ones in execution order kept on the device up to what the point leaves
                          (free memory minus the ring and a 1 GiB working margin), the others copied on a side
                          stream into a ring of 3 buffers two linears ahead (bench/streaming/torch_peer.py's
                          PrefetchLoop); the embedding table stays in host memory
  accelerate_cpu_offload  accelerate.cpu_offload(model, execution_device="cuda")
Points measured: a --prefill-token prefill (empty cache, logits of the last position; prompt_ids()) and --steps
greedy decode steps after it (past = --prefill), and --steps greedy steps after a random cache of each other
--pasts length (transformers DynamicCache on the device); the first decode step of each is untimed.
JSON lines: {"impl", "free", "free_bytes", "mode": "prefill" | "decode", "past", "median_ms", "min_ms",
"steps", "tokens"} or "error". The first token of each decode run is printed for comparison with streamrt's.
Without CUDA (self-tests) everything runs on the CPU and no memory is held.
"""
import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import time
import traceback

import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "streaming"))
import export_llama_kv  # noqa: E402
import hog as hogmod  # noqa: E402  (its size parser)
from torch_peer import PrefetchLoop, measure_bandwidth, short_error  # noqa: E402  (bench/streaming)

CHUNK = 64 << 20  # LM head piece: what streamrt streams at a time by default


def log(msg):
    print(msg, file=sys.stderr, flush=True)


class HostEmbedding(nn.Module):
    """The token table stays in host memory; only the looked-up rows go to the device."""

    def __init__(self, emb, device):
        super().__init__()
        self.weight_host, self.device = emb.weight.detach().cpu(), device

    def forward(self, ids):
        return nn.functional.embedding(ids.cpu(), self.weight_host).to(self.device, non_blocking=False)


class ChunkedLinear(nn.Module):
    """A wide nn.Linear as pieces of at most CHUNK bytes (so a ring slot is a piece, as in streamrt)."""

    def __init__(self, lin):
        super().__init__()
        w = lin.weight.detach()
        rows = max(1, CHUNK // (w.shape[1] * w.element_size()))
        self.parts = nn.ModuleList()
        for r in range(0, w.shape[0], rows):
            p = nn.Linear(w.shape[1], min(rows, w.shape[0] - r), bias=False, dtype=w.dtype, device=w.device)
            p.weight.data.copy_(w[r:r + rows])
            self.parts.append(p)

    def forward(self, x):
        return torch.cat([p(x) for p in self.parts], dim=-1)


def hog(leave, device):
    """Starts hog.py holding all but `leave` bytes; returns (process, free bytes it reports)."""
    if leave is None or device.type != "cuda":
        free = torch.cuda.mem_get_info()[0] if device.type == "cuda" else None
        return None, free
    p = subprocess.Popen([sys.executable, os.path.join(HERE, "hog.py"), "--leave", str(leave)],
                         stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    return p, json.loads(line)["free_bytes"]


def parse_free(text):
    out = []
    for item in text.split(","):
        item = item.strip()
        if item == "empty":
            out.append(("empty", None))
        else:
            out.append((item, hogmod.size(item)))
    return out


def prompt_ids(n, vocab):
    """The benchmark's prompt (run.sh passes the same ids to streamrt_greedy_decode)."""
    return [3 + (i * 7919) % (vocab - 3) for i in range(n)]


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


class Peer:
    def __init__(self, a):
        self.a = a
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.deadline = time.time() + a.deadline_s if a.deadline_s else None
        t0 = time.time()
        # Built where the export builds it (same seed, same device kind -> the same weights), then kept on the host.
        model, self.cfg = export_llama_kv.build(a.layers, a.tiny, self.device.type)
        self.base = model.to("cpu")
        if self.device.type == "cuda":
            torch.cuda.empty_cache()
        log(f"peer model built in {time.time() - t0:.1f}s")

    def left(self):
        return float("inf") if self.deadline is None else self.deadline - time.time()

    def write(self, rec):
        rec = {k: v for k, v in rec.items() if v is not None}
        print(json.dumps(rec), flush=True)
        with open(self.a.json, "a") as f:
            f.write(json.dumps(rec) + "\n")

    def cache(self, past):
        c = self.cfg
        g = torch.Generator().manual_seed(7)
        head = c.hidden_size // c.num_attention_heads
        kv = []
        for _ in range(2 * c.num_hidden_layers):
            kv.append((torch.randn(1, c.num_key_value_heads, past, head, generator=g) * 0.5).to(self.device, torch.float16))
        return export_llama_kv.make_cache(c, kv)

    def decode(self, model, cache, nxt, past, times, tokens):
        """a.steps greedy steps after `past` cached positions, the first untimed."""
        dev = self.device
        for step in range(self.a.steps + 1):
            pos = torch.tensor([[past + step]], device=dev)
            mask = torch.ones(1, past + step + 1, dtype=torch.int64, device=dev)
            sync(dev)
            t0 = time.perf_counter()
            out = model(input_ids=nxt, attention_mask=mask, position_ids=pos, past_key_values=cache,
                        use_cache=True, logits_to_keep=1)
            nxt = out.logits[:, -1:].argmax(-1)
            tokens.append(int(nxt))
            if step:
                times.append((time.perf_counter() - t0) * 1e3)
            cache = out.past_key_values
            if self.left() < 3:
                break

    def measure(self, model, impl, label, free_bytes):
        """Prefill (then decode after it) and decode after a random cache; errors become "error" lines."""
        a, dev = self.a, self.device
        base = dict(impl=impl, free=label, free_bytes=free_bytes)
        for mode, past in [("prefill", a.prefill)] + [("decode", p) for p in a.pasts if p != a.prefill]:
            if self.left() < 5:
                self.write(dict(base, mode=mode, past=past, error="skipped: deadline"))
                continue
            try:
                with torch.no_grad():
                    if mode == "prefill":
                        ids = torch.tensor([prompt_ids(a.prefill, self.cfg.vocab_size)], device=dev)
                        times = []
                        for _ in range(a.prefill_iters + 1):
                            cache = export_llama_kv.make_cache(self.cfg, [])
                            sync(dev)
                            t0 = time.perf_counter()
                            out = model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1)
                            nxt = out.logits[:, -1:].argmax(-1)
                            sync(dev)  # the forward's kernels are queued: time them to the end
                            times.append((time.perf_counter() - t0) * 1e3)
                            del out
                        times = times[1:]  # the first warms up
                        self.write(dict(base, mode="prefill", past=0, prompt=a.prefill, median_ms=statistics.median(times),
                                        min_ms=min(times), steps=len(times), tokens=[int(nxt)]))
                    else:
                        cache, nxt = self.cache(past), torch.tensor([[5]], device=dev)
                    dtimes, tokens = [], []
                    self.decode(model, cache, nxt, past, dtimes, tokens)
                    del cache
                    self.write(dict(base, mode="decode", past=past, median_ms=statistics.median(dtimes),
                                    min_ms=min(dtimes), steps=len(dtimes), tokens=tokens))
            except Exception as e:  # noqa: BLE001 - out of memory at a small point: recorded, the run goes on
                log(traceback.format_exc(limit=2))
                self.write(dict(base, mode=mode, past=past, error=f"failed: {short_error(e)}"))
            finally:
                if dev.type == "cuda":
                    sync(dev)
                    torch.cuda.empty_cache()

    def prefetch_model(self, free_bytes):
        """The model for torch_prefetch at a point: see the module doc."""
        m = copy.deepcopy(self.base)
        m.lm_head = ChunkedLinear(m.lm_head)
        m.model.embed_tokens = HostEmbedding(m.model.embed_tokens, self.device)
        order = [x for x in m.modules() if isinstance(x, nn.Linear)]  # Llama calls them in this order
        loop = PrefetchLoop(m, order, self.device)
        m.to(self.device)  # norms and rotary tables (the linears' weights are with the loop)
        budget = 0
        if self.device.type == "cuda":
            free_now = torch.cuda.mem_get_info()[0]
            ring = 3 * max(loop.nbytes)
            budget = max(0, free_now - ring - (1 << 30))
        else:
            budget = loop.streamable_bytes
        resident = loop.set_budget(budget)
        log(f"torch_prefetch: {resident / 1e9:.2f} of {loop.streamable_bytes / 1e9:.2f} GB resident")
        return m, loop

    def run(self):
        for label, leave in parse_free(self.a.free):
            proc, free_bytes = hog(leave, self.device)
            try:
                log(f"--- free {label}: {free_bytes} bytes free")
                if "prefetch" in self.a.impls:
                    try:
                        m, loop = self.prefetch_model(free_bytes)
                        self.measure(m, "torch_prefetch", label, free_bytes)
                        loop.ring, loop.views, loop.device_weights = [], [], []
                        del m, loop
                    except Exception as e:  # noqa: BLE001
                        log(traceback.format_exc(limit=2))
                        self.write(dict(impl="torch_prefetch", free=label, free_bytes=free_bytes,
                                        error=f"failed: {short_error(e)}"))
                    if self.device.type == "cuda":
                        torch.cuda.empty_cache()
                if "accelerate" in self.a.impls:
                    try:
                        from accelerate import cpu_offload
                        m = copy.deepcopy(self.base)
                        cpu_offload(m, execution_device=self.device)
                        self.measure(m, "accelerate_cpu_offload", label, free_bytes)
                        del m
                    except Exception as e:  # noqa: BLE001
                        log(traceback.format_exc(limit=2))
                        self.write(dict(impl="accelerate_cpu_offload", free=label, free_bytes=free_bytes,
                                        error=f"failed: {short_error(e)}"))
            finally:
                if proc is not None:
                    proc.terminate()
                    proc.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--free", default="empty")
    ap.add_argument("--layers", type=int)
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--prefill", type=int, default=2048)
    ap.add_argument("--prefill-iters", type=int, default=2)
    ap.add_argument("--pasts", default="512,2048")
    ap.add_argument("--impls", default="prefetch,accelerate")
    ap.add_argument("--bandwidth", action="store_true", help="also measure pinned / pageable host-to-device copies")
    ap.add_argument("--json", required=True)
    ap.add_argument("--deadline-s", type=float)
    a = ap.parse_args()
    a.layers = a.layers or (2 if a.tiny else 14)
    a.pasts = [int(x) for x in a.pasts.split(",") if x]
    peer = Peer(a)
    if a.bandwidth:
        for impl, pinned in (("h2d_bandwidth", True), ("h2d_bandwidth_pageable", False)):
            try:
                peer.write(dict(impl=impl, **measure_bandwidth(peer.device, (64 << 20) if a.tiny else (1 << 30), 5, pinned)))
            except Exception as e:  # noqa: BLE001
                peer.write(dict(impl=impl, error=f"failed: {short_error(e)}"))
    peer.run()


if __name__ == "__main__":
    main()
