#!/usr/bin/env python3
"""Holds GPU memory so that only --leave bytes stay free (the "second process" of the decode benchmark):

    python3 bench/decode/hog.py --leave 1GiB &   # prints one JSON line {"free_bytes": ...} when ready

then sleeps until killed. Without CUDA it prints {"free_bytes": null} and sleeps (CPU self-tests)."""
import argparse
import json
import re
import signal
import sys
import time

UNITS = {"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def size(text):
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMG]iB|B)?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 1GiB, 512MiB)")
    return int(float(m.group(1)) * UNITS[m.group(2) or ""])


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--leave", type=size, required=True)
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    import torch
    held = []
    if torch.cuda.is_available():
        free, _ = torch.cuda.mem_get_info()
        step = 256 << 20
        while free - a.leave > 0:  # in pieces: one huge block may not fit the allocator's arenas
            n = min(step, free - a.leave)
            try:
                held.append(torch.empty(n, dtype=torch.uint8, device="cuda"))
            except RuntimeError:
                break
            free, _ = torch.cuda.mem_get_info()
        print(json.dumps({"free_bytes": free, "held_bytes": sum(t.numel() for t in held)}), flush=True)
    else:
        print(json.dumps({"free_bytes": None}), flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
