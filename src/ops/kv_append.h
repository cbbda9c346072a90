// KvAppend: a KV cache's Concat(past, new) along its sequence axis, for caches stored with room
// for more positions (ops/op.h CapacityLayout; the builder's kv_cache pass puts it where an
// exported graph concatenates a past input into a present output, BuilderConfig::kv_cache_in_place).
//
// Inputs:  past [.., P, ..] stored with `capacity` places along `axis`; new [.., n, ..] dense.
// Output:  present [.., P + n, ..] stored like past. When present's buffer is past's (the caller
//          bound one buffer to both), only the n new rows are written, at places P .. P + n - 1;
//          otherwise past's P rows are copied first. Entries past P + n are not touched.
// Attributes: axis (int, in [0, rank)), capacity (int, in [1, 2^30]; P + n must not exceed it).
// Any type: the kernels move bytes.
#pragma once

#include "ops/op.h"

namespace streamrt::ops {

// Where the rows go, in bytes: `outer` blocks (dims before the axis), each `pitch` bytes apart in
// past and present; past's part of a block is `past_bytes`, new's `new_bytes` (dense in `new`),
// written at `past_bytes` into present's block. `in_place`: present is past's buffer.
struct KvAppendLayout {
  int64_t outer = 1, pitch = 0, past_bytes = 0, new_bytes = 0;
  bool in_place = false;
};

// Reads the attributes and checks the tensors against them and each other (shared by the CPU and
// CUDA kernels).
Result<KvAppendLayout> kv_append_layout(const KernelContext& ctx);

}  // namespace streamrt::ops
