"""Times allocsim.capture() of one training step of a 3-billion-parameter decoder (RMSNorm,
SwiGLU, untied head, fp32, AdamW) and reports the process's peak RSS: a capture holds no
tensor data, so the RSS stays far below the model's 12 GB of fp32 weights.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/capture_decoder.py [--layers 36] [--seq 512]
"""
import argparse
import resource
import time

import allocsim
import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


class Block(nn.Module):
    def __init__(self, width, heads, hidden):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = RMSNorm(width), RMSNorm(width)
        self.qkv = nn.Linear(width, 3 * width, bias=False)
        self.out = nn.Linear(width, width, bias=False)
        self.gate = nn.Linear(width, hidden, bias=False)
        self.up = nn.Linear(width, hidden, bias=False)
        self.down = nn.Linear(hidden, width, bias=False)

    def forward(self, x):
        batch, seq, width = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(batch, seq, 3, self.heads, width // self.heads).unbind(2)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-1, -2)) / (width // self.heads) ** 0.5
        mask = torch.ones(seq, seq, device=x.device, dtype=torch.bool).triu(1)
        attention = scores.masked_fill(mask, float("-inf")).softmax(-1) @ v
        x = x + self.out(attention.transpose(1, 2).reshape(batch, seq, width))
        h = self.norm2(x)
        return x + self.down(nn.functional.silu(self.gate(h)) * self.up(h))


class Decoder(nn.Module):
    def __init__(self, layers, width, heads, hidden, vocab):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.blocks = nn.ModuleList(Block(width, heads, hidden) for _ in range(layers))
        self.norm = RMSNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", type=int, default=36)
    parser.add_argument("--width", type=int, default=2560)
    parser.add_argument("--hidden", type=int, default=6912)
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--batch", type=int, default=1)
    options = parser.parse_args()
    vocab = 32000
    start = time.perf_counter()
    with allocsim.capture(device="a100-80gb", name="decoder_3b") as cap:
        model = Decoder(options.layers, options.width, 20, options.hidden, vocab).cuda()
        optimizer = torch.optim.AdamW(model.parameters())
        tokens = torch.randint(0, vocab, (options.batch, options.seq), device="cuda")
        logits = model(tokens)
        nn.functional.cross_entropy(logits.view(-1, vocab), tokens.view(-1)).backward()
        optimizer.step()
    seconds = time.perf_counter() - start
    parameters = sum(a.bytes for a in cap.allocations if a.tag == "weight") // 4
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(f"capture: {seconds:.1f} s for {parameters / 1e9:.2f}B parameters, {len(cap.allocations)} allocations; "
          f"peak RSS {rss / 2**30:.2f} GiB")
    result = allocsim.run(cap.trace, policy="caching", device="a100-80gb")
    print(result.verdict_text)


if __name__ == "__main__":
    main()
