"""Times allocsim.capture() of torchvision's ResNet-50 (batch 32, fp32, SGD with momentum, two
steps) and compares it with the zoo's resnet50_b32, both replayed through `caching`.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/capture_resnet50.py [--batch 32] [--profile]

Prints the capture's wall time, the peaks, and the largest differences by tag and by module;
--profile adds where the capture's time goes (cProfile, top functions by own time).
"""
import argparse
import cProfile
import pstats
import time

import allocsim
import torch
import torchvision


def train(batch, steps=2):
    model = torchvision.models.resnet50().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for _ in range(steps):
        images = torch.randn(batch, 3, 224, 224, device="cuda")
        labels = torch.randint(0, 1000, (batch,), device="cuda")
        loss = torch.nn.functional.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--device", default="a100-80gb")
    parser.add_argument("--profile", action="store_true")
    options = parser.parse_args()
    profiler = cProfile.Profile() if options.profile else None
    start = time.perf_counter()
    with allocsim.capture(device=options.device, name=f"torchvision_resnet50_b{options.batch}") as cap:
        if profiler:
            profiler.enable()
        train(options.batch)
        if profiler:
            profiler.disable()
    seconds = time.perf_counter() - start
    trace = cap.trace
    print(f"capture: {seconds:.1f} s, {len(cap.allocations)} allocations, {len(trace)} events, {cap.steps} steps")
    captured = allocsim.run(trace, policy="caching", device=options.device)
    zoo = allocsim.run(f"resnet50_b{options.batch}", policy="caching", device=options.device)
    a, b = captured.to_dict(), zoo.to_dict()
    key = "peak_allocated_bytes"
    print(f"peak allocated through caching: capture {a[key]:,} B, zoo {b[key]:,} B, "
          f"difference {100 * (a[key] - b[key]) / b[key]:+.2f}%")
    zoo_trace = allocsim.load(f"resnet50_b{options.batch}")
    for name, info in (("capture", trace.info), ("zoo", zoo_trace.info)):
        print(f"{name}: " + ", ".join(f"{tag} {count} x {total:,} B" for tag, (count, total) in info["tags"].items()))
    print(cap.summary())
    if profiler:
        stats = pstats.Stats(profiler)
        stats.sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
