#!/usr/bin/env python3
"""Byte-flip and truncation check of the plan and program readers, through the CLI.

Builds a small plan (`streamrt build`) and a small program (`streamrt compile`, one engine and
one portable kernel) from tests/fixtures/refit/tiny_a.onnx on the CPU, then writes mutants of
each: every byte xor-ed with each --xor mask, and the file cut at every length. Each mutant is
given to `streamrt inspect` and to `streamrt run --iterations 1`, with a timeout, --jobs at a time.
Every byte of the headers and of the top-level FlatBuffer is flipped and cut; in the bulk
(zero padding, weight data, segments: ranges that one zero check or one checksum covers) every
--bulk-stride'th byte and the first and last of each range, since each CLI start costs ~0.1 s of
CPU (it loads the CUDA libraries) and the 4096-byte alignment makes even a tiny plan 4 KB.
Each result is one of:
  rejected  exit 1 with an "error:" line (what every corrupt file must get)
  accepted  exit 0
  unclean   any other exit status, or exit 1 without "error:"
  crash     killed by a signal, exit >= 128, or a sanitizer report in the output
  hang      past --timeout
Accepted mutants are explained by where the changed byte lies in the file's layout (parsed here
from the header and the FlatBuffer: src/plan/plan.h, plan.fbs, src/program/container.h,
program.fbs); the classes in EXPLAINED are ones where a changed byte cannot change what the file
means. The exit status is non-zero on any crash, hang, unclean exit or unexplained acceptance,
or when an unmutated file is not accepted.

  scripts/mutate_check.py --cli build/bin/streamrt [--jobs 2] [--bulk-stride 16] [--stride N] [--xor ff,01]
--bulk-stride 1 takes every byte; --stride N samples every Nth offset of the whole file (and the
first and last byte of every region: each header field), for a quick run.
"""
import argparse
import os
import struct
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, "tests", "fixtures", "refit", "tiny_a.onnx")
BUILD_ARGS = ["--device", "cpu", "--profile", "x:1x4:2x4:4x4"]
COMPILE_ARGS = ["--device", "cpu", "--shapes", "x:2x4", "--fallback-ops", "Relu"]
SANITIZER_MARKS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer", "runtime error:")

# Classes of byte where a change does not change the file's meaning. Both formats check every
# byte (checksums over the FlatBuffer and the data, zero padding), so none is expected; a class
# goes here only with a reason.
EXPLAINED = {}

PLAN_HEADER = [("magic", 8), ("format_version", 4), ("header_size", 4), ("metadata_offset", 8),
               ("metadata_size", 8), ("weights_offset", 8), ("weights_size", 8),
               ("metadata_checksum", 8), ("weights_checksum", 8)]
CONTAINER_HEADER = [("magic", 8), ("format_version", 4), ("header_size", 4), ("flatbuffer_offset", 8),
                    ("flatbuffer_size", 8), ("section_offset", 8), ("section_size", 8),
                    ("flatbuffer_checksum", 8), ("reserved", 8)]


# ---- layout: a minimal FlatBuffers reader (only what the two root tables need) ----------------

class Table:
    def __init__(self, buf, pos):
        self.buf, self.pos = buf, pos
        self.vtable = pos - struct.unpack_from("<i", buf, pos)[0]
        self.vt_size = struct.unpack_from("<H", buf, self.vtable)[0]

    def _field(self, index):
        at = 4 + 2 * index
        if at >= self.vt_size:
            return None
        off = struct.unpack_from("<H", self.buf, self.vtable + at)[0]
        return self.pos + off if off else None

    def scalar(self, index, fmt, default=0):
        p = self._field(index)
        return default if p is None else struct.unpack_from("<" + fmt, self.buf, p)[0]

    def _indirect(self, p):
        return p + struct.unpack_from("<I", self.buf, p)[0]

    def string(self, index):
        p = self._field(index)
        if p is None:
            return ""
        s = self._indirect(p)
        n = struct.unpack_from("<I", self.buf, s)[0]
        return self.buf[s + 4:s + 4 + n].decode("utf-8", "replace")

    def tables(self, index):
        p = self._field(index)
        if p is None:
            return []
        v = self._indirect(p)
        n = struct.unpack_from("<I", self.buf, v)[0]
        return [Table(self.buf, self._indirect(v + 4 + 4 * i)) for i in range(n)]


def root(buf):
    return Table(buf, struct.unpack_from("<I", buf, 0)[0])


def header_regions(fields, base=0, prefix=""):
    out, at = [], base
    for name, size in fields:
        out.append((at, at + size, prefix + "header." + name))
        at += size
    return out


def plan_regions(data, base=0, prefix="plan."):
    """(start, end, class) for every byte of a plan file (PlanHeader, metadata, padding, weights)."""
    _, _, _, m_off, m_size, w_off, w_size, _, _ = struct.unpack_from("<8sIIQQQQQQ", data, 0)
    out = header_regions(PLAN_HEADER, base, prefix)
    out.append((base + m_off, base + m_off + m_size, prefix + "metadata (FlatBuffer)"))
    if w_size:
        out.append((base + m_off + m_size, base + w_off, prefix + "padding before the weights"))
        at = w_off
        for w in sorted(root(data[m_off:m_off + m_size]).tables(7), key=lambda t: t.scalar(3, "Q")):
            start = w_off + w.scalar(3, "Q")
            if start > at:
                out.append((base + at, base + start, prefix + "gap between weights"))
            out.append((base + start, base + start + w.scalar(4, "Q"), prefix + "weight data"))
            at = start + w.scalar(4, "Q")
        if w_off + w_size > at:
            out.append((base + at, base + w_off + w_size, prefix + "gap after the last weight"))
    return out


def container_regions(data, base, prefix, section_regions):
    """Every byte of a container (src/program/container.h: header, FlatBuffer, padding, section);
    section_regions(data, base, prefix, section_offset, section_size, flatbuffer) labels the section."""
    _, _, _, f_off, f_size, s_off, s_size, _, _ = struct.unpack_from("<8sIIQQQQQQ", data, 0)
    out = header_regions(CONTAINER_HEADER, base, prefix)
    out.append((base + f_off, base + f_off + f_size, prefix + "FlatBuffer"))
    if s_size:
        out.append((base + f_off + f_size, base + s_off, prefix + "padding before the section"))
        out.extend(section_regions(data, base, prefix, s_off, s_size, data[f_off:f_off + f_size]))
    return out


def blob_regions(blob, base, prefix):
    """A segment: an engine record (a container around a plan), a plan, or plain data."""
    if blob[:8] == b"SRTENGN\0":
        def plan_section(data, base, prefix, s_off, s_size, _):
            return plan_regions(data[s_off:s_off + s_size], base + s_off, prefix + "plan.")
        return container_regions(blob, base, prefix + "engine record.", plan_section)
    if blob[:8] == b"SRTPLAN\0":
        return plan_regions(blob, base, prefix + "plan.")
    return [(base, base + len(blob), prefix + "data")]


def program_regions(data):
    """Every byte of a program: the container, its segments table (Program.segments) splitting the
    section, and each segment by what it holds."""
    def segments(data, base, prefix, s_off, s_size, flatbuffer):
        out, at = [], s_off
        for seg in sorted(root(flatbuffer).tables(2), key=lambda t: t.scalar(0, "Q")):
            start, size = s_off + seg.scalar(0, "Q"), seg.scalar(1, "Q")
            if start > at:
                out.append((at, start, prefix + "gap between segments"))
            out.extend(blob_regions(data[start:start + size], start, prefix + "segment "))
            at = start + size
        if s_off + s_size > at:
            out.append((at, s_off + s_size, prefix + "gap after the last segment"))
        return out
    return container_regions(data, 0, "program.", segments)


def classify(regions, offset):
    for start, end, name in regions:
        if start <= offset < end:
            return name
    return "outside every region"


# ---- running the CLI -----------------------------------------------------------------------

def outcome(cmd, timeout):
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "hang", ""
    err = (p.stdout + p.stderr).decode("utf-8", "replace")
    if p.returncode < 0 or p.returncode >= 128 or any(m in err for m in SANITIZER_MARKS):
        return "crash", err[-2000:]
    if p.returncode == 0:
        return "accepted", ""
    if p.returncode == 1 and "error:" in err:
        return "rejected", ""
    return "unclean", err[-2000:]


def commands(cli, path):
    return {"inspect": [cli, "inspect", path],
            "run": [cli, "run", path, "--device", "cpu", "--iterations", "1", "--warmup", "0"]}


def check_mutant(cli, work, ext, data, mutation, timeout):
    kind, offset, value = mutation
    if kind == "flip":
        bytes_ = bytearray(data)
        bytes_[offset] ^= value
    else:
        bytes_ = data[:offset]
    fd, path = tempfile.mkstemp(suffix=ext, dir=work)
    with os.fdopen(fd, "wb") as f:
        f.write(bytes_)
    try:
        return mutation, {name: outcome(cmd, timeout) for name, cmd in commands(cli, path).items()}
    finally:
        os.unlink(path)


def structural(cls):
    """Headers and the top-level FlatBuffer: every byte there is flipped and cut. The rest is bulk
    (padding, weight data, segments: whole ranges under one zero check or one checksum)."""
    return cls.startswith(("plan.header.", "program.header.")) or cls in ("plan.metadata (FlatBuffer)",
                                                                           "program.FlatBuffer")


def mutations(data, regions, stride, bulk_stride, masks):
    # The first byte of every region (each header field) always; the last one too unless sampling.
    edges = {start for start, _, _ in regions}
    if stride == 1:
        edges |= {end - 1 for _, end, _ in regions}

    def sampled(i):
        if i in edges:
            return True
        if i % stride:
            return False
        return structural(classify(regions, i)) or i % bulk_stride == 0
    offsets = [i for i in range(len(data)) if sampled(i)]
    return [("flip", i, m) for i in offsets for m in masks] + [("truncate", n, None) for n in offsets]


def describe(mutation):
    kind, offset, value = mutation
    return f"byte {offset} ^= 0x{value:02x}" if kind == "flip" else f"cut to {offset} bytes"


def check_file(args, work, label, path, regions_of):
    data = open(path, "rb").read()
    regions = regions_of(data)
    for name, cmd in commands(args.cli, path).items():
        verdict, err = outcome(cmd, args.timeout)
        if verdict != "accepted":
            print(f"{label}: the unmutated file is not accepted by {name} ({verdict}):\n{err}")
            return False
    todo = mutations(data, regions, args.stride, args.bulk_stride, args.xor)
    ext = os.path.splitext(path)[1]
    t0 = time.time()
    with ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda m: check_mutant(args.cli, work, ext, data, m, args.timeout), todo))
    counts = {name: Counter() for name in ("inspect", "run")}
    accepted, failures = Counter(), []
    for mutation, by_cmd in results:
        for name, (verdict, err) in by_cmd.items():
            counts[name][verdict] += 1
            if verdict == "accepted" and mutation[0] == "flip":
                accepted[(name, classify(regions, mutation[1]))] += 1
            elif verdict == "accepted":  # a cut file is never complete
                accepted[(name, "truncation")] += 1
            if verdict in ("crash", "hang", "unclean"):
                failures.append(f"  {verdict}: {name} on {describe(mutation)} "
                                f"[{classify(regions, min(mutation[1], len(data) - 1))}]\n{err}")
    print(f"{label}: {len(data)} bytes, {len(todo)} mutants, {time.time() - t0:.0f} s")
    for name, c in counts.items():
        print(f"  {name:8s} " + "  ".join(f"{v} {c[v]}" for v in
                                          ("rejected", "accepted", "unclean", "crash", "hang")))
    unexplained = [(k, n) for k, n in sorted(accepted.items()) if k[1] not in EXPLAINED]
    for (name, cls), n in sorted(accepted.items()):
        why = EXPLAINED.get(cls, "UNEXPLAINED")
        print(f"  accepted by {name}: {n} in {cls} ({why})")
    listed = [f"  unexplained: {name} accepted {describe(mutation)}"
              for mutation, by_cmd in results for name, (verdict, _) in by_cmd.items()
              if verdict == "accepted" and (mutation[0] == "truncate" or
                                            classify(regions, mutation[1]) not in EXPLAINED)]
    for line in (listed + failures)[:60]:
        print(line)
    if len(listed) + len(failures) > 60:
        print(f"  ... and {len(listed) + len(failures) - 60} more")
    return not failures and not unexplained


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", required=True, help="the streamrt binary")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--stride", type=int, default=1,
                    help="every Nth offset of the file and the edges of each region, for a quick run")
    ap.add_argument("--bulk-stride", type=int, default=16,
                    help="every Nth offset of padding, weight data and segments (1: every byte)")
    ap.add_argument("--xor", default="ff", help="comma-separated masks each byte is xor-ed with")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds per command")
    args = ap.parse_args()
    args.xor = [int(m, 16) for m in args.xor.split(",")]
    if any(not 0 < m < 256 for m in args.xor) or min(args.stride, args.bulk_stride, args.jobs) < 1:
        ap.error("--xor masks must be 01..ff; --stride, --bulk-stride and --jobs at least 1")
    args.cli = os.path.abspath(args.cli)
    with tempfile.TemporaryDirectory(prefix="streamrt_mutate_") as work:
        plan, pte = os.path.join(work, "tiny.plan"), os.path.join(work, "tiny.pte")
        for cmd in ([args.cli, "build", MODEL, "-o", plan] + BUILD_ARGS,
                    [args.cli, "compile", MODEL, "-o", pte] + COMPILE_ARGS):
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                print(f"mutate_check: {' '.join(cmd)} failed:\n{p.stdout}{p.stderr}")
                return 2
        ok = check_file(args, work, "plan", plan, plan_regions)
        ok = check_file(args, work, "program", pte, program_regions) and ok
    print("mutate_check: " + ("ok" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
