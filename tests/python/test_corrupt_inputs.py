"""Corrupt inputs through the Python API (issue 13): bytes of a small plan and of a small program flipped
(every byte of the first 4 KiB, where headers and tables are, then every 97th) and the files cut at 257
lengths, loaded from bytes or a file and, where accepted, run. Each must raise a streamrt.Error or give
the reference outputs: never a crash (which would end this process), a hang or another exception."""

import numpy as np
import pytest

import streamrt
from conftest import IN, PROFILE, batch, mlp_reference


def outcome(load, data):
    """'refused', or 'ran' when the load was accepted and the run matched; raises on anything else."""
    try:
        obj = load(data)
    except streamrt.Error:
        return "refused"
    x = batch(4)
    try:
        y = obj(x)
    except streamrt.Error:
        return "refused"
    np.testing.assert_allclose(y, mlp_reference(x), rtol=1e-5, atol=1e-5)
    return "ran"


def sweep(data, load):
    counts = {"refused": 0, "ran": 0}
    flips = list(range(min(len(data), 4096))) + list(range(4096, len(data), 97))
    for i in flips:
        flipped = bytearray(data)
        flipped[i] ^= 0x5A
        counts[outcome(load, bytes(flipped))] += 1
    for n in range(0, len(data), max(1, len(data) // 257)):
        assert outcome(load, data[:n]) == "refused", f"a plan cut at {n} of {len(data)} bytes was accepted"
    return counts, len(flips)


def run_engine(e):
    return lambda x: e.create_execution_context().run({"x": x})["y"]


def test_plan_bytes_flipped_and_cut(mlp_path, tmp_path):
    path = tmp_path / "mlp.plan"
    streamrt.build(mlp_path, device="cpu", profiles=PROFILE).save(str(path))
    counts, n = sweep(path.read_bytes(), lambda b: run_engine(streamrt.load(b, device="cpu")))
    assert counts["refused"] > n // 2  # the checksums and the verifier catch most flips


def test_plan_file_flipped_and_cut(mlp_path, tmp_path):
    path = tmp_path / "mlp.plan"
    streamrt.build(mlp_path, device="cpu", profiles=PROFILE).save(str(path))
    data = path.read_bytes()

    def load(b):
        bad = tmp_path / "bad.plan"
        bad.write_bytes(b)
        return run_engine(streamrt.load(str(bad), device="cpu"))

    counts, n = sweep(data, load)
    assert counts["refused"] > n // 2


def test_program_file_flipped_and_cut(mlp_path, tmp_path):
    path = tmp_path / "mlp.pte"
    streamrt.compile(mlp_path, str(path), device="cpu", shapes={"x": [4, IN]}, weight_streaming=True,
                     min_streamable_bytes=0)
    data = path.read_bytes()

    def load(b):
        bad = tmp_path / "bad.pte"
        bad.write_bytes(b)
        m = streamrt.Module(str(bad))
        return lambda x: m.forward([x])[0]

    counts, n = sweep(data, load)
    assert counts["refused"] > n // 2
