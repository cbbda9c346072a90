#!/usr/bin/env python3
"""Export small real-architecture models to ONNX, with reference outputs, as test fixtures.

Requirements (PyPI; CI does not need them, the results are committed under tests/fixtures/models/):
    python >= 3.10
    pip install torch torchvision onnx onnxruntime numpy
The fixtures in the tree were made with the versions recorded in tests/fixtures/README.md.

Usage:
    python3 scripts/export_fixtures.py [--out tests/fixtures/models] [--only NAME ...]

Each model lands in the ONNX backend-test layout (like /usr/share/libonnx-testdata/data/node/test_add):
    <out>/<name>/model.onnx
    <out>/<name>/test_data_set_<k>/input_<i>.pb, output_<j>.pb
where every .pb is a serialized onnx.TensorProto named after its graph input / output.

The models have random weights from a fixed seed, scaled so that their outputs carry signal (logits with
a standard deviation near 1). They are exported with the TorchScript-based exporter at opset 17 and IR
version 8 (what Debian's ONNX 1.12 reads), checked with onnx.checker, restricted to standard ai.onnx ops,
and run through onnxruntime, whose outputs must match torch's. The reference outputs written are torch's.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import warnings
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import onnx
import onnxruntime as ort
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import numpy_helper

OPSET = 17
IR_VERSION = 8  # ONNX 1.12 (Debian) reads IR version <= 8; opset 17 belongs to IR 8.
SEED = 0
# onnxruntime vs torch: |ort - ref| <= ATOL * max(1, max|ref|) + RTOL * |ref|.
RTOL = 1e-4
ATOL = 1e-4


# --------------------------------------------------------------------------------------------------
# Models


class MLP(nn.Module):
    """784-256-128-10 with ReLU, on a flattened 28x28 image."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(784, 256)
        self.fc2 = nn.Linear(256, 128)
        self.fc3 = nn.Linear(128, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


class LeNetBN(nn.Module):
    """LeNet-5 shaped CNN on 1x28x28 with BatchNorm, AvgPool and Gemm.

    The BatchNorms sit where the exporter can not fold them into a Conv (after ReLU, after a Gemm), so
    BatchNormalization nodes stay in the graph; the second one (after a Conv) is folded, as usual.
    """

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.bn1 = nn.BatchNorm2d(6)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.bn2 = nn.BatchNorm2d(16)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.bn3 = nn.BatchNorm1d(120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.avg_pool2d(self.bn1(F.relu(self.conv1(x))), 2)  # 6x14x14
        x = F.avg_pool2d(F.relu(self.bn2(self.conv2(x))), 2)  # 16x5x5
        x = torch.flatten(x, 1)
        x = F.relu(self.bn3(self.fc1(x)))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model: int, n_head: int, max_len: int) -> None:
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        mask = torch.tril(torch.ones(max_len, max_len, dtype=torch.bool))
        self.register_buffer("mask", mask.view(1, 1, max_len, max_len), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        hd = c // self.n_head
        q, k, v = self.qkv(x).split(c, dim=2)
        q = q.view(b, t, self.n_head, hd).transpose(1, 2)  # b, h, t, hd
        k = k.view(b, t, self.n_head, hd).transpose(1, 2)
        v = v.view(b, t, self.n_head, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        att = att.masked_fill(~self.mask[:, :, :t, :t], float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, c)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, d_model: int, n_head: int, max_len: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_head, max_len)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    """GPT-2 shaped decoder: token + learned position embedding, pre-LN blocks, final LN, LM head."""

    def __init__(self, vocab: int = 256, d_model: int = 64, n_head: int = 4, n_layer: int = 2,
                 max_len: int = 64) -> None:
        super().__init__()
        self.tok_emb = nn.Embedding(vocab, d_model)
        self.pos_emb = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(Block(d_model, n_head, max_len) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        t = input_ids.shape[1]
        pos = torch.arange(t, dtype=torch.long, device=input_ids.device)
        x = self.tok_emb(input_ids) + self.pos_emb(pos)
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


# --------------------------------------------------------------------------------------------------
# Weight initialisation: random, fixed seed, scaled so activations neither vanish nor explode.


def init_unit_variance(model: nn.Module) -> None:
    """Linear/Conv weights ~ N(0, gain^2/fan_in), small random biases, non-trivial norm parameters.

    Norm layers get random affine parameters and running statistics so that they are not identities.
    """
    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Conv2d)):
            fan_in = m.weight[0].numel()
            nn.init.normal_(m.weight, 0.0, math.sqrt(2.0 / fan_in))
            if m.bias is not None:
                nn.init.normal_(m.bias, 0.0, 0.1)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, 0.0, 1.0)
        elif isinstance(m, nn.LayerNorm):
            with torch.no_grad():
                m.weight.copy_(1.0 + 0.1 * torch.randn_like(m.weight))
                m.bias.copy_(0.1 * torch.randn_like(m.bias))
        elif isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
            with torch.no_grad():
                m.weight.copy_(1.0 + 0.2 * torch.randn_like(m.weight))
                m.bias.copy_(0.2 * torch.randn_like(m.bias))
                m.running_mean.copy_(0.5 * torch.randn_like(m.running_mean))
                m.running_var.copy_(0.5 + torch.rand_like(m.running_var))


def rescale_output(model: nn.Module, last: nn.Module, inputs: list[torch.Tensor],
                   target_std: float = 1.0) -> None:
    """Scale the last layer's weight and bias so the outputs have std `target_std` (on `inputs`).

    Valid because everything after `last` is positively homogeneous (nothing, ReLU, average pool).
    """
    with torch.no_grad():
        std = torch.cat([model(x).flatten() for x in inputs]).std().item()
        factor = target_std / std
        last.weight.mul_(factor)
        if getattr(last, "bias", None) is not None:
            last.bias.mul_(factor)


# --------------------------------------------------------------------------------------------------
# Fixture specs


@dataclass
class Fixture:
    name: str
    description: str
    model: nn.Module
    input_names: list[str]
    output_names: list[str]
    data_sets: list[list[torch.Tensor]]  # data_sets[k][i]: input i of data set k
    dynamic_axes: dict[str, dict[int, str]] = field(default_factory=dict)


def make_squeezenet(gen: torch.Generator) -> Fixture:
    import torchvision

    model = torchvision.models.squeezenet1_1(weights=None, num_classes=1000).eval()
    # torchvision zeroes every conv bias; the exporter then dedups the identical zero tensors into
    # Identity nodes, and a zero bias tests nothing. Give them small random values.
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.normal_(m.bias, 0.0, 0.05)
    x = torch.randn(1, 3, 224, 224, generator=gen)  # like a normalised ImageNet image
    # torchvision's init already keeps the features' scale (Kaiming uniform); its final conv is N(0, 0.01)
    # which gives tiny logits, so scale it. Calibrate on other images than the reference one.
    calib = [torch.randn(4, 3, 224, 224, generator=gen)]
    rescale_output(model, model.classifier[1], calib)
    return Fixture("squeezenet1_1", "torchvision squeezenet1_1, random init, 1x3x224x224 -> 1x1000",
                   model, ["input"], ["logits"], [[x]])


def make_tiny_gpt(gen: torch.Generator) -> Fixture:
    model = TinyGPT()
    init_unit_variance(model)
    # Attention/MLP output projections feed the residual stream: scale them down like GPT-2 does.
    with torch.no_grad():
        for block in model.blocks:
            block.attn.proj.weight.mul_(0.5)
            block.mlp[2].weight.mul_(0.5)
    model.eval()
    calib = [torch.randint(0, 256, (4, 32), generator=gen)]
    rescale_output(model, model.lm_head, calib)
    sets = [[torch.randint(0, 256, (1, 8), generator=gen)],
            [torch.randint(0, 256, (2, 16), generator=gen)]]
    return Fixture("tiny_gpt", "GPT-style decoder: vocab 256, d_model 64, 4 heads, 2 blocks, max_len 64; "
                   "input_ids [batch, seq] int64 -> logits [batch, seq, 256], dynamic batch and seq",
                   model, ["input_ids"], ["logits"], sets,
                   {"input_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}})


def make_mlp(gen: torch.Generator) -> Fixture:
    model = MLP()
    init_unit_variance(model)
    model.eval()
    calib = [torch.rand(16, 784, generator=gen)]
    rescale_output(model, model.fc3, calib)
    sets = [[torch.rand(1, 784, generator=gen)], [torch.rand(5, 784, generator=gen)]]
    return Fixture("mlp", "MLP 784-256-128-10 with ReLU; input [batch, 784] -> logits [batch, 10], "
                   "dynamic batch", model, ["input"], ["logits"], sets,
                   {"input": {0: "batch"}, "logits": {0: "batch"}})


def make_lenet_bn(gen: torch.Generator) -> Fixture:
    model = LeNetBN()
    init_unit_variance(model)
    model.eval()
    calib = [torch.rand(16, 1, 28, 28, generator=gen)]
    rescale_output(model, model.fc3, calib)
    sets = [[torch.rand(2, 1, 28, 28, generator=gen)], [torch.rand(1, 1, 28, 28, generator=gen)]]
    return Fixture("lenet_bn", "LeNet-5 shaped CNN with BatchNorm/AvgPool/Gemm; input [batch, 1, 28, 28] "
                   "-> logits [batch, 10], dynamic batch", model, ["input"], ["logits"], sets,
                   {"input": {0: "batch"}, "logits": {0: "batch"}})


def make_tiny_llama(gen: torch.Generator) -> Fixture:
    """The benchmark's Llama-style stack (bench/models.py) at a tiny size: RMSNorm written out
    (the pattern streamrt fuses), rotary embeddings, SwiGLU, causal attention; hidden states in/out."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
    import models as bench_models

    model = bench_models.build_model("llama", tiny=True, seed=SEED)
    x = torch.randn(1, 16, 64, generator=gen)
    return Fixture("tiny_llama", "bench/models.py LlamaStack, tiny config, 1x16x64 hidden states",
                   model, ["hidden_states"], ["output"], [[x]])


FIXTURES: dict[str, Callable[[torch.Generator], Fixture]] = {
    "tiny_llama": make_tiny_llama,
    "squeezenet1_1": make_squeezenet,
    "tiny_gpt": make_tiny_gpt,
    "mlp": make_mlp,
    "lenet_bn": make_lenet_bn,
}


# --------------------------------------------------------------------------------------------------
# Export and checks


def export(fx: Fixture, path: str) -> onnx.ModelProto:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice
        torch.onnx.export(fx.model, tuple(fx.data_sets[0]), path, dynamo=False,
                          opset_version=OPSET, input_names=fx.input_names,
                          output_names=fx.output_names, dynamic_axes=fx.dynamic_axes or None,
                          do_constant_folding=True)
    model = onnx.load(path)
    model.ir_version = IR_VERSION
    model.producer_name = "streamrt scripts/export_fixtures.py (torch " + torch.__version__ + ")"
    onnx.checker.check_model(model, full_check=True)
    domains = {(op.domain or "ai.onnx"): op.version for op in model.opset_import}
    if domains != {"ai.onnx": OPSET}:
        raise RuntimeError(f"{fx.name}: unexpected opset imports {domains}")
    odd = [n.op_type for n in model.graph.node if n.domain not in ("", "ai.onnx")]
    if odd:
        raise RuntimeError(f"{fx.name}: non-standard ops {odd}")
    if list(model.functions):
        raise RuntimeError(f"{fx.name}: model has local functions")
    onnx.save(model, path)
    return model


def check_close(name: str, got: np.ndarray, ref: np.ndarray) -> float:
    if got.shape != ref.shape or got.dtype != ref.dtype:
        raise RuntimeError(f"{name}: onnxruntime gave {got.dtype}{got.shape}, torch {ref.dtype}{ref.shape}")
    err = np.abs(got.astype(np.float64) - ref.astype(np.float64))
    bound = ATOL * max(1.0, float(np.abs(ref).max())) + RTOL * np.abs(ref)
    if not np.all(err <= bound):
        raise RuntimeError(f"{name}: onnxruntime differs from torch, max abs err {err.max():.3g}")
    return float(err.max())


def write_tensor(path: str, array: np.ndarray, name: str) -> None:
    tensor = numpy_helper.from_array(array, name)
    with open(path, "wb") as f:
        f.write(tensor.SerializeToString())


def dims_str(value_info: onnx.ValueInfoProto) -> str:
    t = value_info.type.tensor_type
    dims = [d.dim_param if d.HasField("dim_param") else str(d.dim_value) for d in t.shape.dim]
    return f"{value_info.name}: {onnx.helper.tensor_dtype_to_np_dtype(t.elem_type)}[{', '.join(dims)}]"


def build(fx: Fixture, out_dir: str) -> None:
    fx_dir = os.path.join(out_dir, fx.name)
    shutil.rmtree(fx_dir, ignore_errors=True)
    os.makedirs(fx_dir)
    model_path = os.path.join(fx_dir, "model.onnx")
    fx.model.eval()
    model = export(fx, model_path)
    session = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])

    print(f"== {fx.name}: {fx.description}")
    print(f"   size {os.path.getsize(model_path) / 1e6:.2f} MB, {len(model.graph.node)} nodes, "
          f"params {sum(p.numel() for p in fx.model.parameters())}")
    print(f"   ops: {' '.join(sorted({n.op_type for n in model.graph.node}))}")
    for vi in model.graph.input:
        print(f"   in  {dims_str(vi)}")
    for vi in model.graph.output:
        print(f"   out {dims_str(vi)}")

    for k, inputs in enumerate(fx.data_sets):
        with torch.no_grad():
            refs = fx.model(*inputs)
        refs = [refs] if isinstance(refs, torch.Tensor) else list(refs)
        in_arrays = [x.numpy() for x in inputs]
        ref_arrays = [r.numpy() for r in refs]
        got = session.run(fx.output_names, dict(zip(fx.input_names, in_arrays)))
        set_dir = os.path.join(fx_dir, f"test_data_set_{k}")
        os.makedirs(set_dir)
        for i, (name, a) in enumerate(zip(fx.input_names, in_arrays)):
            write_tensor(os.path.join(set_dir, f"input_{i}.pb"), a, name)
        for j, (name, ref, g) in enumerate(zip(fx.output_names, ref_arrays, got)):
            err = check_close(f"{fx.name} set {k} {name}", g, ref)
            write_tensor(os.path.join(set_dir, f"output_{j}.pb"), ref, name)
            print(f"   set {k}: {name} {list(ref.shape)} std {ref.std():.3f} "
                  f"range [{ref.min():.3f}, {ref.max():.3f}], ort max abs err {err:.2e}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--out", default=os.path.join(root, "tests", "fixtures", "models"))
    parser.add_argument("--only", nargs="*", choices=sorted(FIXTURES), help="export only these")
    args = parser.parse_args()

    torch.set_num_threads(1)  # less run-to-run jitter in the reference outputs
    print(f"torch {torch.__version__}, onnx {onnx.__version__}, onnxruntime {ort.__version__}, "
          f"numpy {np.__version__}, python {sys.version.split()[0]}")
    for name in args.only or FIXTURES:
        torch.manual_seed(SEED)  # each model's weights do not depend on which others are exported
        gen = torch.Generator().manual_seed(SEED)
        build(FIXTURES[name](gen), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
