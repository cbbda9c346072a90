"""PyTorch's side of a kernel bench: a callable captured in a CUDA graph, warmed, replayed `iters` times between
CUDA events; the median milliseconds and the captured call's output (bench/attention/attn_bench.py,
bench/tools/rotary_bench.py)."""


def graphed_median_ms(fn, iters, warm_replays=5):
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up off the capture stream, as CUDA graph capture asks
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = fn()
    for _ in range(warm_replays):
        g.replay()
    times = []
    for _ in range(iters):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        g.replay()
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1))
    times.sort()
    return times[len(times) // 2], out
