"""Benchmark models with random weights (fixed seed): ResNet-50, a GPT-2-small-sized decoder and a
Llama-style decoder stack.

Everything is written with plain tensor ops so that torch.onnx.export(..., dynamo=False, opset 17)
produces standard ONNX ops (MatMul, Softmax, Where, LayerNormalization, Pow/ReduceMean/Sqrt ...):
no fused attention, no custom ops.

    build_model(name, dtype=torch.float32, device="cpu", tiny=False, **overrides) -> nn.Module (eval)
    example_inputs(name, batch, seq, dtype, device, tiny) -> tuple of tensors
    io_names(name) -> (input names, output names)
"""
import math

import torch
from torch import nn
import torch.nn.functional as F

MODELS = ("resnet50", "gpt2", "llama")
DTYPES = {"fp32": torch.float32, "float32": torch.float32, "fp16": torch.float16,
          "float16": torch.float16, "bf16": torch.bfloat16, "bfloat16": torch.bfloat16}

# Defaults: GPT-2 small and a ~1.1B-Llama-like stack cut to 8 layers (411M parameters).
GPT2_CONFIG = dict(n_layer=12, d_model=768, n_head=12, vocab=50257, n_positions=1024)
LLAMA_CONFIG = dict(hidden=2048, n_head=16, n_kv_head=None, intermediate=5632, n_layer=8,
                    max_positions=4096, rope_theta=10000.0, eps=1e-5)
# Tiny configs for CPU tests of the export path.
GPT2_TINY = dict(n_layer=2, d_model=64, n_head=4, vocab=1000, n_positions=128)
LLAMA_TINY = dict(hidden=64, n_head=4, n_kv_head=None, intermediate=172, n_layer=2,
                  max_positions=256, rope_theta=10000.0, eps=1e-5)
DEFAULT_SEQ = {"gpt2": 512, "llama": 512}
TINY_SEQ = {"gpt2": 32, "llama": 32}

# Masked attention scores: large and negative but finite in every float type (GPT-2 used -1e4).
MASK_VALUE = -1e4


def to_dtype(d):
    if isinstance(d, torch.dtype):
        return d
    return DTYPES[d]


# ----------------------------------------------------------------------------- GPT-2

class GPT2Attention(nn.Module):
    def __init__(self, d_model, n_head, n_positions):
        super().__init__()
        self.n_head = n_head
        self.head_dim = d_model // n_head
        self.c_attn = nn.Linear(d_model, 3 * d_model)
        self.c_proj = nn.Linear(d_model, d_model)
        mask = torch.tril(torch.ones(n_positions, n_positions, dtype=torch.bool))
        self.register_buffer("causal", mask.view(1, 1, n_positions, n_positions), persistent=False)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q = q.view(b, t, self.n_head, self.head_dim).transpose(1, 2)
        k = k.view(b, t, self.n_head, self.head_dim).transpose(1, 2)
        v = v.view(b, t, self.n_head, self.head_dim).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(self.head_dim))
        # masked_fill exports as Where(mask, scalar, scores): no full-size constant in the graph.
        scores = scores.masked_fill(~self.causal[:, :, :t, :t], MASK_VALUE)
        probs = torch.softmax(scores, dim=-1)
        y = torch.matmul(probs, v).transpose(1, 2).reshape(b, t, c)
        return self.c_proj(y)


class GPT2Block(nn.Module):
    def __init__(self, d_model, n_head, n_positions):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d_model, eps=1e-5)
        self.attn = GPT2Attention(d_model, n_head, n_positions)
        self.ln_2 = nn.LayerNorm(d_model, eps=1e-5)
        self.fc = nn.Linear(d_model, 4 * d_model)
        self.proj = nn.Linear(4 * d_model, d_model)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        # GPT-2's GELU is the tanh approximation ("gelu_new").
        return x + self.proj(F.gelu(self.fc(self.ln_2(x)), approximate="tanh"))


class GPT2(nn.Module):
    """GPT-2 decoder: token + learned position embeddings, pre-LN blocks, tied LM head -> logits."""

    def __init__(self, n_layer, d_model, n_head, vocab, n_positions):
        super().__init__()
        self.config = dict(n_layer=n_layer, d_model=d_model, n_head=n_head, vocab=vocab,
                           n_positions=n_positions)
        self.wte = nn.Embedding(vocab, d_model)
        self.wpe = nn.Embedding(n_positions, d_model)
        self.h = nn.ModuleList(GPT2Block(d_model, n_head, n_positions) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(d_model, eps=1e-5)

    def init_weights(self):
        # GPT-2: N(0, 0.02), residual projections scaled by 1/sqrt(2 * n_layer), biases 0, LN 1/0.
        n_layer = self.config["n_layer"]
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif ".ln_" in name or name.startswith("ln_f"):
                nn.init.ones_(p)
            elif name.endswith("c_proj.weight") or name.endswith("proj.weight"):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * n_layer))
            else:
                nn.init.normal_(p, std=0.02)

    def forward(self, input_ids):
        t = input_ids.shape[1]
        x = self.wte(input_ids) + self.wpe.weight[:t]
        for block in self.h:
            x = block(x)
        return F.linear(self.ln_f(x), self.wte.weight)  # weights tied like GPT-2


# ----------------------------------------------------------------------------- Llama

class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        # Written out so that it exports to Pow / ReduceMean / Add / Sqrt / Div / Mul.
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class LlamaAttention(nn.Module):
    def __init__(self, hidden, n_head, n_kv_head):
        super().__init__()
        self.n_head = n_head
        self.n_kv_head = n_kv_head
        self.head_dim = hidden // n_head
        self.q_proj = nn.Linear(hidden, n_head * self.head_dim, bias=False)
        self.k_proj = nn.Linear(hidden, n_kv_head * self.head_dim, bias=False)
        self.v_proj = nn.Linear(hidden, n_kv_head * self.head_dim, bias=False)
        self.o_proj = nn.Linear(n_head * self.head_dim, hidden, bias=False)

    def forward(self, x, cos, sin, mask):
        """mask: [t, t] bool, True where a query must not see a key."""
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.n_head, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.n_kv_head, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.n_kv_head, self.head_dim).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if self.n_kv_head != self.n_head:  # grouped-query attention: repeat the K/V heads
            rep = self.n_head // self.n_kv_head
            k = k[:, :, None].expand(b, self.n_kv_head, rep, t, self.head_dim).reshape(b, self.n_head, t, -1)
            v = v[:, :, None].expand(b, self.n_kv_head, rep, t, self.head_dim).reshape(b, self.n_head, t, -1)
        scores = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(self.head_dim))
        scores = scores.masked_fill(mask, MASK_VALUE)
        probs = torch.softmax(scores, dim=-1)
        y = torch.matmul(probs, v).transpose(1, 2).reshape(b, t, self.n_head * self.head_dim)
        return self.o_proj(y)


class LlamaMLP(nn.Module):
    def __init__(self, hidden, intermediate):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, intermediate, bias=False)
        self.up_proj = nn.Linear(hidden, intermediate, bias=False)
        self.down_proj = nn.Linear(intermediate, hidden, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))  # SwiGLU


class LlamaLayer(nn.Module):
    def __init__(self, hidden, n_head, n_kv_head, intermediate, eps):
        super().__init__()
        self.input_layernorm = RMSNorm(hidden, eps)
        self.self_attn = LlamaAttention(hidden, n_head, n_kv_head)
        self.post_attention_layernorm = RMSNorm(hidden, eps)
        self.mlp = LlamaMLP(hidden, intermediate)

    def forward(self, x, cos, sin, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaStack(nn.Module):
    """Llama decoder layers + final RMSNorm: hidden states [B, T, hidden] in and out (no embedding,
    no LM head, no KV cache). Rotary tables and the causal mask are constant buffers."""

    def __init__(self, hidden, n_head, intermediate, n_layer, n_kv_head=None, max_positions=4096,
                 rope_theta=10000.0, eps=1e-5):
        super().__init__()
        n_kv_head = n_kv_head or n_head
        assert hidden % n_head == 0 and n_head % n_kv_head == 0
        self.config = dict(hidden=hidden, n_head=n_head, n_kv_head=n_kv_head, intermediate=intermediate,
                           n_layer=n_layer, max_positions=max_positions, rope_theta=rope_theta, eps=eps)
        head_dim = hidden // n_head
        self.layers = nn.ModuleList(LlamaLayer(hidden, n_head, n_kv_head, intermediate, eps)
                                    for _ in range(n_layer))
        self.norm = RMSNorm(hidden, eps)
        inv_freq = 1.0 / (rope_theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        freqs = torch.outer(torch.arange(max_positions, dtype=torch.float32), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos(), persistent=False)
        self.register_buffer("sin_cached", emb.sin(), persistent=False)
        mask = torch.tril(torch.ones(max_positions, max_positions, dtype=torch.bool))
        self.register_buffer("causal", mask, persistent=False)

    def init_weights(self):
        for name, p in self.named_parameters():
            if name.endswith("layernorm.weight") or name == "norm.weight":
                nn.init.ones_(p)
            else:
                nn.init.normal_(p, std=0.02)

    def forward(self, hidden_states):
        t = hidden_states.shape[1]
        cos = self.cos_cached[:t].to(hidden_states.dtype)
        sin = self.sin_cached[:t].to(hidden_states.dtype)
        mask = ~self.causal[:t, :t]  # True where masked (above the diagonal)
        x = hidden_states
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.norm(x)


# ----------------------------------------------------------------------------- ResNet-50

class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class ResNet50(nn.Module):
    """torchvision's resnet50 layout (same parameter names), for machines without torchvision."""

    def __init__(self, layers=(3, 4, 6, 3), num_classes=1000):
        super().__init__()
        self.inplanes = 64
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        self.layer1 = self._make_layer(64, layers[0])
        self.layer2 = self._make_layer(128, layers[1], stride=2)
        self.layer3 = self._make_layer(256, layers[2], stride=2)
        self.layer4 = self._make_layer(512, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * 4, num_classes)
        for m in self.modules():  # torchvision's init
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)

    def _make_layer(self, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * 4:
            downsample = nn.Sequential(nn.Conv2d(self.inplanes, planes * 4, 1, stride=stride, bias=False),
                                       nn.BatchNorm2d(planes * 4))
        layers = [Bottleneck(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * 4
        layers += [Bottleneck(self.inplanes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def make_resnet50():
    """torchvision's resnet50 (random init) when torchvision is importable, else the local copy."""
    try:
        import torchvision
        return torchvision.models.resnet50(weights=None), "torchvision"
    except Exception:  # noqa: BLE001 - any import problem: use the local definition
        return ResNet50(), "local"


# ----------------------------------------------------------------------------- registry

def build_model(name, dtype=torch.float32, device="cpu", tiny=False, seed=0, **overrides):
    """The named model in eval mode with seeded random weights, on `device`, in `dtype`."""
    dtype = to_dtype(dtype)
    torch.manual_seed(seed)
    # Parameters are created (and initialized) on the target device: a 400M-parameter Llama stack
    # initializes in milliseconds on a GPU and in seconds on the CPU.
    with torch.device(device):
        if name == "resnet50":
            model, source = make_resnet50()
            model.source = source
        elif name == "gpt2":
            cfg = dict(GPT2_TINY if tiny else GPT2_CONFIG, **overrides)
            model = GPT2(**cfg)
            model.init_weights()
        elif name == "llama":
            cfg = dict(LLAMA_TINY if tiny else LLAMA_CONFIG, **overrides)
            model = LlamaStack(**cfg)
            model.init_weights()
        else:
            raise ValueError(f"unknown model '{name}' (expected one of {', '.join(MODELS)})")
    return model.to(dtype=dtype).eval()


def default_seq(name, tiny=False):
    return (TINY_SEQ if tiny else DEFAULT_SEQ).get(name)


def example_inputs(name, batch=1, seq=None, dtype=torch.float32, device="cpu", tiny=False, seed=1):
    """Inputs of the model's benchmark shape: resnet50 [B,3,224,224]; gpt2 input_ids [B,seq] int64;
    llama hidden states [B,seq,hidden]."""
    dtype = to_dtype(dtype)
    g = torch.Generator(device="cpu").manual_seed(seed)
    seq = seq or default_seq(name, tiny)
    if name == "resnet50":
        x = torch.randn(batch, 3, 224, 224, generator=g)
        return (x.to(device=device, dtype=dtype),)
    if name == "gpt2":
        vocab = (GPT2_TINY if tiny else GPT2_CONFIG)["vocab"]
        return (torch.randint(0, vocab, (batch, seq), generator=g).to(device),)
    if name == "llama":
        hidden = (LLAMA_TINY if tiny else LLAMA_CONFIG)["hidden"]
        return (torch.randn(batch, seq, hidden, generator=g).to(device=device, dtype=dtype),)
    raise ValueError(f"unknown model '{name}'")


def io_names(name):
    return {"resnet50": (["input"], ["logits"]),
            "gpt2": (["input_ids"], ["logits"]),
            "llama": (["hidden_states"], ["output"])}[name]


def work_units(name, batch, seq=None, tiny=False):
    """(count, unit) processed per forward: images for ResNet, tokens for the decoders."""
    if name == "resnet50":
        return batch, "images"
    return batch * (seq or default_seq(name, tiny)), "tokens"


def count_parameters(model):
    return sum(p.numel() for p in model.parameters())
