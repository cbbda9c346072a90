#!/usr/bin/env python3
"""StreamRTBackend in ExecuTorch's Python runtime: the adapter library, loaded into the process
with ctypes.CDLL(path, RTLD_GLOBAL) after `import torch`, registers in the registry that
executorch.runtime uses; every fixture then runs and matches eager PyTorch's saved outputs.

    python3 tests/executorch/python_runtime_check.py build-et/lib/libstreamrt_executorch.so tests/executorch/fixtures
"""
import ctypes
import json
import os
import sys

import numpy as np
import torch  # before the adapter: the ExecuTorch extension resolves symbols from torch's libraries

ctypes.CDLL(os.path.abspath(sys.argv[1]), mode=ctypes.RTLD_GLOBAL)
from executorch.runtime import Runtime  # noqa: E402


def main(fixtures):
    manifest = json.load(open(os.path.join(fixtures, "manifest.json")))
    runtime, failed = Runtime.get(), 0
    for name, info in sorted(manifest.items()):
        method = runtime.load_program(os.path.join(fixtures, name + ".pte")).load_method("forward")
        x = np.fromfile(os.path.join(fixtures, name + ".input0.bin"), "<f4").reshape(info["inputs"][0])
        want = np.fromfile(os.path.join(fixtures, name + ".output0.bin"), "<f4").reshape(info["outputs"][0])
        got = method.execute([torch.from_numpy(x)])[0].numpy()
        ok = np.allclose(got, want, rtol=1e-4, atol=1e-5)
        failed += not ok
        print(f"{name}: {'ok' if ok else 'MISMATCH'} (max abs diff {float(np.abs(got - want).max()):.3g})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[2]))
