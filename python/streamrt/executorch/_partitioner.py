"""StreamRTPartitioner: which nodes of an edge program StreamRT runs on the target device.

A node is taken when its op is one whose ONNX export streamrt builds (SUPPORTED_OPS, edge
names such as "aten.addmm.default"), every tensor it reads and writes has a dtype streamrt
runs, and the op is not in ``torch_executed_ops`` (which forces ops to ExecuTorch's kernels:
a graph break, as Torch-TensorRT's option of that name). Maximal connected runs become
partitions, in program order; each one's DelegationSpec carries the compile specs
preprocess builds it with and the runtime reads (see CompileSettings).

Attention stays whole: ``ops_to_not_decompose`` keeps ``aten.scaled_dot_product_attention``
from being decomposed by to_edge_transform_and_lower, so it reaches preprocess as one node and
the ONNX export (opset 23) writes it as one Attention node.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import torch
from executorch.exir.backend.compile_spec_schema import CompileSpec
from executorch.exir.backend.partitioner import DelegationSpec, Partitioner, PartitionResult
from executorch.exir.backend.utils import tag_constant_data
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

BACKEND = "StreamRTBackend"

# Edge ops (their ATen names) whose torch.onnx export streamrt runs on the CPU and CUDA.
SUPPORTED_OPS = frozenset({
    # matmul, linear
    "aten.addmm.default", "aten.mm.default", "aten.bmm.default", "aten.matmul.default", "aten.linear.default",
    # attention and normalization
    "aten.scaled_dot_product_attention.default", "aten._softmax.default", "aten._log_softmax.default",
    "aten.native_layer_norm.default", "aten.rms_norm.default",
    # elementwise
    "aten.add.Tensor", "aten.add.Scalar", "aten.sub.Tensor", "aten.sub.Scalar", "aten.mul.Tensor",
    "aten.mul.Scalar", "aten.div.Tensor", "aten.div.Scalar", "aten.div.Tensor_mode", "aten.pow.Tensor_Scalar",
    "aten.pow.Tensor_Tensor", "aten.rsqrt.default", "aten.sqrt.default", "aten.neg.default", "aten.exp.default",
    "aten.log.default", "aten.abs.default", "aten.reciprocal.default", "aten.relu.default", "aten.gelu.default",
    "aten.silu.default", "aten.sigmoid.default", "aten.tanh.default", "aten.cos.default", "aten.sin.default",
    "aten.erf.default", "aten.clamp.default", "aten.hardtanh.default", "aten.leaky_relu.default",
    "aten.minimum.default", "aten.maximum.default", "aten.where.self", "aten.logical_not.default",
    "aten.bitwise_and.Tensor", "aten.bitwise_or.Tensor", "aten.bitwise_not.default",
    "aten.eq.Tensor", "aten.eq.Scalar", "aten.ne.Tensor", "aten.ne.Scalar", "aten.lt.Tensor", "aten.lt.Scalar",
    "aten.le.Tensor", "aten.le.Scalar", "aten.gt.Tensor", "aten.gt.Scalar", "aten.ge.Tensor", "aten.ge.Scalar",
    # reductions
    "aten.mean.dim", "aten.sum.dim_IntList", "aten.amax.default", "aten.amin.default", "aten.cumsum.default",
    # data movement
    "aten.view_copy.default", "aten.permute_copy.default", "aten.t_copy.default", "aten.transpose_copy.int",
    "aten.expand_copy.default", "aten.unsqueeze_copy.default", "aten.squeeze_copy.dims", "aten.squeeze_copy.dim",
    "aten.slice_copy.Tensor", "aten.select_copy.int", "aten.cat.default", "aten.clone.default",
    "aten.alias_copy.default", "aten.embedding.default", "aten.index_select.default", "aten.gather.default",
    "aten.index.Tensor", "aten.split_with_sizes_copy.default", "aten._to_copy.default",
    # constants
    "aten.arange.start_step", "aten.full.default", "aten.full_like.default", "aten.zeros_like.default",
    "aten.ones_like.default", "aten.scalar_tensor.default",
})

# Tensor dtypes streamrt runs.
SUPPORTED_DTYPES = frozenset({torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int8,
                              torch.uint8, torch.bool})


def op_name(node: torch.fx.Node) -> str:
    """An edge op's ATen name: "aten.addmm.default"."""
    return getattr(node.target, "__name__", str(node.target))


@dataclass
class CompileSettings:
    """What preprocess builds each partition with; written as compile specs of every delegate
    (strings). The runtime reads engine_index, engine_count and a baked budget key; the others
    are for preprocess (the runtime ignores them)."""

    device: str = "cpu"
    fp16: bool = False
    weight_streaming: bool = False
    budget: Optional[Tuple[str, str]] = None  # (key, value): a baked budget
    min_streamable_bytes: Optional[str] = None
    weight_quant: str = "none"  # streamrt.build's weight_quant: "none", "int8", "fp8", "int4[:GROUP]"
    opset_version: int = 23
    # Where the engines' weights go (see streamrt.executorch.save): "inline" (the delegate's
    # blob), "pte" (the program's named data) or "ptd" (named data of the .ptd `ptd_name`).
    weights: str = "inline"
    ptd_name: Optional[str] = None

    def specs(self, index: int, count: int) -> List[CompileSpec]:
        out = {"engine_index": str(index), "engine_count": str(count), "device": self.device,
               "precision": "float16" if self.fp16 else "float32",
               "weight_streaming": "1" if self.weight_streaming else "0", "opset_version": str(self.opset_version)}
        if self.min_streamable_bytes is not None:
            out["min_streamable_bytes"] = self.min_streamable_bytes
        if self.weight_quant != "none":  # the default leaves the specs as they were
            out["weight_quant"] = self.weight_quant
        if self.budget:
            out[self.budget[0]] = self.budget[1]
        if self.weights != "inline":  # the default leaves the specs as they were
            out["weights"] = self.weights
        if self.weights == "ptd":
            out["ptd_name"] = self.ptd_name or "model"
        return [CompileSpec(k, v.encode()) for k, v in out.items()]

    @staticmethod
    def parse(specs: Sequence[CompileSpec]) -> Dict[str, str]:
        return {s.key: bytes(s.value).decode() for s in specs}


def _dtypes_ok(node: torch.fx.Node) -> bool:
    vals = [node.meta.get("val")] + [a.meta.get("val") for a in node.all_input_nodes]
    flat = []
    for v in vals:
        flat.extend(v if isinstance(v, (list, tuple)) else [v])
    return all(t.dtype in SUPPORTED_DTYPES for t in flat if isinstance(t, torch.Tensor))


class _Support(OperatorSupportBase):
    def __init__(self, excluded: frozenset) -> None:
        self.excluded = excluded

    def is_node_supported(self, submodules, node: torch.fx.Node) -> bool:
        if node.op != "call_function":
            return False
        if node.target is operator.getitem:  # an output of a multi-output op taken with it
            return self.is_node_supported(submodules, node.args[0])
        name = op_name(node)
        return name in SUPPORTED_OPS and name not in self.excluded and _dtypes_ok(node)


@dataclass
class StreamRTPartitioner(Partitioner):
    """Tags what StreamRT runs (see the module docstring). ``torch_executed_ops``: edge op names
    ("aten.cumsum.default") left to ExecuTorch; ``settings``: the compile specs of the delegates."""

    settings: CompileSettings = field(default_factory=CompileSettings)
    torch_executed_ops: Sequence[str] = ()

    def __post_init__(self) -> None:
        Partitioner.__init__(self)
        unknown = [o for o in self.torch_executed_ops if not isinstance(o, str)]
        if unknown:
            raise TypeError(f"torch_executed_ops: expected edge op names such as \"aten.cumsum.default\", got {unknown}")

    def ops_to_not_decompose(self, ep) -> Tuple[List[torch._ops.OpOverload], None]:
        return [torch.ops.aten.scaled_dot_product_attention.default], None

    def partition(self, exported_program) -> PartitionResult:
        gm = exported_program.graph_module
        support = _Support(frozenset(self.torch_executed_ops))
        parts = CapabilityBasedPartitioner(gm, support, allows_single_node_partition=True).propose_partitions()
        order = {n: i for i, n in enumerate(gm.graph.nodes)}
        parts = sorted(parts, key=lambda p: min(order[n] for n in p.nodes))  # engine i = i-th in program order
        tags = {}
        for i, p in enumerate(parts):
            tag = f"streamrt_{i}"
            tags[tag] = DelegationSpec(BACKEND, self.settings.specs(i, len(parts)))
            for n in p.nodes:
                n.meta["delegation_tag"] = tag
        tag_constant_data(exported_program)  # weights go into the engines, not the delegates' inputs
        return PartitionResult(tagged_exported_program=exported_program, partition_tags=tags)
