#!/usr/bin/env python3
"""PyTorch eager's CUDA kernels for one bench point, by total GPU time (the peer side of
bench/profile_gpu.sh): which kernels PyTorch runs and how long each takes.

    python3 bench/torch_profile.py --model resnet50 --batch 32 --precision fp16 [--rows 25]
"""
import argparse
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True, choices=models.MODELS)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seq", type=int, default=None)
    ap.add_argument("--precision", default="fp32", choices=["fp32", "fp16", "bf16"])
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--rows", type=int, default=25)
    args = ap.parse_args()
    dtype = models.to_dtype(args.precision)
    model = models.build_model(args.model, dtype=dtype, device="cuda").eval()
    inputs = models.example_inputs(args.model, args.batch, args.seq, dtype=dtype, device="cuda")
    with torch.no_grad():
        for _ in range(5):
            model(*inputs)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(args.iters):
                model(*inputs)
            torch.cuda.synchronize()
    print(f"torch eager {args.model} b{args.batch} {args.precision}: CUDA kernels over {args.iters} runs "
          f"(cudnn.allow_tf32={torch.backends.cudnn.allow_tf32}, matmul.allow_tf32={torch.backends.cuda.matmul.allow_tf32})")
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=args.rows, max_name_column_width=90))


if __name__ == "__main__":
    main()
