"""Captures, from the architecture alone, a training step of the language model recorded in
../shared/traces/lm_medium_ctx128_train.snapshot.pickle (docs/llm.md, "The recorded check":
CS336's BasicsTransformerLM, d_model 1024, d_ff 4096 SwiGLU, 24 layers, 16 heads, vocab
10,000, RMSNorm, RoPE, untied head, context 128, batch 4, fp32 (no autocast), an AdamW that updates
one parameter at a time and replaces its moments) and compares the peaks through `caching`.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/capture_lm_medium.py [--recording PATH]

The recording's own step is not known line by line: the model and optimizer here are written
from that description, so the difference measures the description as much as the capture.
"""
import argparse
import math
import os
import time

import allocsim
import torch
from torch import nn


class Linear(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(d_out, d_in))
        nn.init.trunc_normal_(self.weight, std=0.02)

    def forward(self, x):
        return x @ self.weight.t()


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        x = x.to(torch.float32)
        rms = torch.sqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return (x / rms * self.weight).to(dtype)


def rope(x, positions, theta=10000.0):
    d = x.shape[-1]
    freqs = theta ** (-torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d)
    angles = positions[:, None].float() * freqs[None, :]
    cos, sin = angles.cos(), angles.sin()
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


class Block(nn.Module):
    def __init__(self, d, heads, d_ff):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = RMSNorm(d), RMSNorm(d)
        self.q, self.k, self.v, self.o = Linear(d, d), Linear(d, d), Linear(d, d), Linear(d, d)
        self.w1, self.w2, self.w3 = Linear(d, d_ff), Linear(d_ff, d), Linear(d, d_ff)

    def forward(self, x):
        b, s, d = x.shape
        h = self.ln1(x)
        q, k, v = (proj(h).view(b, s, self.heads, d // self.heads).transpose(1, 2) for proj in (self.q, self.k, self.v))
        positions = torch.arange(s, device=x.device)
        q, k = rope(q, positions), rope(k, positions)
        scores = q @ k.transpose(-1, -2) / math.sqrt(d // self.heads)
        mask = torch.triu(torch.ones(s, s, device=x.device, dtype=torch.bool), 1)
        scores = scores.masked_fill(mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        x = x + self.o((weights @ v).transpose(1, 2).reshape(b, s, d))
        h = self.ln2(x)
        a = self.w1(h)
        return x + self.w2(a * torch.sigmoid(a) * self.w3(h))


class LM(nn.Module):
    def __init__(self, vocab=10000, d=1024, layers=24, heads=16, d_ff=4096):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(Block(d, heads, d_ff) for _ in range(layers))
        self.ln_final = RMSNorm(d)
        self.lm_head = Linear(d, vocab)

    def forward(self, tokens):
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.ln_final(x))


class AdamW(torch.optim.Optimizer):
    """One parameter at a time; the moments replaced by new tensors each step."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                t = state.get("t", 1)
                m = state.get("m", torch.zeros_like(p))
                v = state.get("v", torch.zeros_like(p))
                g = p.grad
                m = beta1 * m + (1 - beta1) * g
                v = beta2 * v + (1 - beta2) * g ** 2
                alpha = group["lr"] * math.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)
                p -= alpha * m / (torch.sqrt(v) + group["eps"])
                p -= group["lr"] * group["weight_decay"] * p
                state["m"], state["v"], state["t"] = m, v, t + 1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--recording", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "traces",
                                                            "lm_medium_ctx128_train.snapshot.pickle"))
    parser.add_argument("--steps", type=int, default=2)
    options = parser.parse_args()
    start = time.perf_counter()
    with allocsim.capture(device="a100-80gb", name="lm_medium_ctx128") as cap:
        model = LM().cuda()
        optimizer = AdamW(model.parameters())
        for _ in range(options.steps):
            tokens = torch.randint(0, 10000, (4, 128), device="cuda")
            targets = torch.randint(0, 10000, (4, 128), device="cuda")
            logits = model(tokens)
            loss = nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]).float(), targets.view(-1))
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
    print(f"capture: {time.perf_counter() - start:.1f} s, {len(cap.allocations)} allocations, {cap.steps} steps")
    ours = allocsim.run(cap.trace, policy="caching", device="a100-80gb").to_dict()
    print(f"capture peak allocated through caching: {ours['peak_allocated_bytes']:,} B "
          f"(recording: 7,026,606,592 B, {100 * (ours['peak_allocated_bytes'] - 7026606592) / 7026606592:+.2f}%)")
    print(f"capture live lower bound: {ours['live_lower_bound_bytes']:,} B (recording's trace: 7,013,335,044 B)")


if __name__ == "__main__":
    main()
