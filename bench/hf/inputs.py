#!/usr/bin/env python3
"""Writes the inputs of every point of one model (numpy only, no torch), read by streamrt and the PyTorch peers:

    python3 bench/hf/inputs.py MODEL OUTDIR [--batches 1,8] [--points prefill:1,...] [--tiny]

OUTDIR/<point key>/<input name>.npy, OUTDIR/<point key>/streamrt.args (the `streamrt run` arguments of the point,
one a line: --shapes with every input's dims, --input name=file for each), <point key>/output_bytes (what
streamrt run --output-dir writes there), and OUTDIR/ready when all are written.
A point's seed is fixed by its key, so every run gets the same inputs.
"""
import argparse
import os
import sys
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", choices=sorted(models.MODELS))
    ap.add_argument("outdir")
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--points", default="prefill:1,prefill:512,prefill:2048,decode:512,decode:2048")
    ap.add_argument("--tiny", action="store_true")
    a = ap.parse_args()
    c = models.config(a.model, a.tiny)
    os.makedirs(a.outdir, exist_ok=True)
    ready = os.path.join(a.outdir, "ready")
    if os.path.exists(ready):
        os.remove(ready)
    for batch in (int(b) for b in a.batches.split(",") if b):
        for kind, n in models.parse_points(a.points):
            key = models.point_key(a.model, batch, kind, n)
            d = os.path.join(a.outdir, key)
            names, _ = models.io_names(kind, c.num_hidden_layers)
            arrays = models.input_arrays(c, batch, kind, n, seed=zlib.crc32(key.encode()))
            os.makedirs(d, exist_ok=True)
            shapes = []
            for name, arr in zip(names, arrays):
                np.save(os.path.join(d, name + ".npy"), arr)
                shapes.append(f"{name}:{'x'.join(str(x) for x in arr.shape)}")
            with open(os.path.join(d, "streamrt.args"), "w") as f:
                f.write("--shapes\n" + ",".join(shapes) + "\n")
                for name in names:
                    f.write(f"--input\n{name}={os.path.abspath(os.path.join(d, name + '.npy'))}\n")
            with open(os.path.join(d, "output_bytes"), "w") as f:
                f.write(f"{models.output_bytes(c, batch, kind, n)}\n")
            print(f"inputs {key}: {len(names)} tensors", flush=True)
    open(ready, "w").write("ready\n")


if __name__ == "__main__":
    main()
