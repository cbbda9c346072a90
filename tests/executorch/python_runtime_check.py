#!/usr/bin/env python3
"""StreamRTBackend in ExecuTorch's Python runtime: the adapter library, loaded into the process
with ctypes.CDLL(path) after `import torch`, registers in the registry that
executorch.runtime uses; every fixture then runs (a *_ptd one with its .ptd) and matches eager
PyTorch's saved outputs.

    python3 tests/executorch/python_runtime_check.py build-et/lib/libstreamrt_executorch.so tests/executorch/fixtures
"""
import ctypes
import json
import os
import sys

import numpy as np
import torch  # before the adapter: the ExecuTorch extension resolves symbols from torch's libraries

LIB = ctypes.CDLL(os.path.abspath(sys.argv[1]))
from executorch.runtime import Runtime  # noqa: E402


def main(fixtures):
    manifest = json.load(open(os.path.join(fixtures, "manifest.json")))
    runtime, failed = Runtime.get(), 0
    for name, info in sorted(manifest.items()):
        # The *_ptd fixtures keep their engines' weights in <name>.ptd (ExecuTorch named data).
        data = os.path.join(fixtures, name + ".ptd") if "ptd_bytes" in info else None
        method = runtime.load_program(os.path.join(fixtures, name + ".pte"), data_path=data).load_method("forward")
        x = np.fromfile(os.path.join(fixtures, name + ".input0.bin"), "<f4").reshape(info["inputs"][0])
        want = np.fromfile(os.path.join(fixtures, name + ".output0.bin"), "<f4").reshape(info["outputs"][0])
        got = method.execute([torch.from_numpy(x)])[0].numpy()
        ok = np.allclose(got, want, rtol=1e-4, atol=1e-5)
        failed += not ok
        print(f"{name}: {'ok' if ok else 'MISMATCH'} (max abs diff {float(np.abs(got - want).max()):.3g})")
        if name == "graph_break":  # the live change through the library's C entry points
            failed += not check_set_option(method, x, want)
    return 1 if failed else 0


def get_option(key):
    buf = ctypes.create_string_buffer(256)
    rc = LIB.streamrt_executorch_get_option(key.encode(), buf, ctypes.c_size_t(256))
    return buf.value.decode() if rc == 0 else f"error {rc}"


def check_set_option(method, x, want):
    rc = LIB.streamrt_executorch_set_option(b"weight_streaming_budget", b"48KiB")
    budgets = [get_option(f"weight_streaming_budget.{i}") for i in range(2)]
    got = method.execute([torch.from_numpy(x)])[0].numpy()
    ok = rc == 0 and budgets == ["16384", "32768"] and np.allclose(got, want, rtol=1e-4, atol=1e-5)
    bad = LIB.streamrt_executorch_set_option(b"weight_streaming_budget", b"8gb")
    ok = ok and bad != 0 and get_option("weight_streaming_budget") == "49152"
    print(f"graph_break set_option 48KiB: {'ok' if ok else 'FAILED'} (rc {rc}, budgets {budgets}, bad value rc {bad})")
    return ok


if __name__ == "__main__":
    sys.exit(main(sys.argv[2]))
