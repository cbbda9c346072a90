#!/usr/bin/env python3
"""Writes the seed corpus of cache_entry_fuzz (fuzz/corpus/cache_entry/): "<metadata>\\0<plan>"
inputs for the all-zero key. valid_* pass verify_entry, corrupt_* do not; of the valid ones only
valid_stripped_plan holds a plan that reads.

Usage: fuzz/make_cache_entry_seeds.py STRIPPED_PLAN   (e.g. a plan from
       `streamrt build tests/fixtures/refit/tiny_a.onnx -o t.plan --profile x:1x4:2x4:4x4 --strip-weights`)
"""
import hashlib
import json
import os
import sys

plan = open(sys.argv[1], "rb").read()
key = "0" * 64
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "cache_entry")
os.makedirs(out, exist_ok=True)


def meta(p, **over):
    m = {"format": 1, "key": key, "plan_bytes": len(p), "plan_sha256": hashlib.sha256(p).hexdigest(),
         "created": 1795250000, "engine_name": "tiny", "device": "cpu", "streamrt_version": "0.1.0"}
    m.update(over)
    return json.dumps(m).encode()


def write(name, data):
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)


flipped = bytearray(plan)
flipped[70] ^= 1
flipped = bytes(flipped)
write("valid_stripped_plan", meta(plan) + b"\0" + plan)
write("valid_checksum_bad_plan", meta(flipped) + b"\0" + flipped)
write("valid_checksum_empty_plan", meta(b""))
write("corrupt_plan_bitflip", meta(plan) + b"\0" + flipped)
write("corrupt_truncated_plan", meta(plan) + b"\0" + plan[:-10])
write("corrupt_other_key", meta(plan, key="f" * 64) + b"\0" + plan)
write("corrupt_format_2", meta(plan, format=2) + b"\0" + plan)
write("corrupt_negative_size", meta(plan, plan_bytes=-1) + b"\0" + plan)
write("corrupt_size_as_string", meta(plan, plan_bytes=str(len(plan))) + b"\0" + plan)
write("corrupt_not_json", b'{"format": 1, "key": "' + key.encode() + b'"' + b"\0" + plan)
write("corrupt_array", b"[1, 2, 3]\0" + plan)
write("corrupt_deep_nesting", b"[" * 30000 + b"]" * 30000 + b"\0")
write("corrupt_huge_metadata", b'{"pad": "' + b"x" * 70000 + b'"}\0')
write("corrupt_invalid_utf8", meta(plan)[:-1] + b', "engine_name": "\xff\xfe"}\0' + plan)
