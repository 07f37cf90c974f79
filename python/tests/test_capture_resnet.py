"""allocsim.capture() of torchvision's ResNet-50 against the zoo's resnet50_b32 and _b64 (docs/capture.md).

Same model, same batch: the bytes allocated per tag over the two steps follow from the
architecture alone, so they must agree exactly (weights, their gradients, SGD's momentum,
the inputs, and cuDNN's workspaces from the same rule). The step calls
zero_grad(set_to_none=True), PyTorch 2.x's default and the zoo's: 1.13's default keeps the
zeroed gradients alive into the next backward (docs/capture.md). The peaks through `caching`
agree within 2%; the test prints the largest differences at the peak by tag and by module.
"""
import os

import pytest

import allocsim

try:
    import torch
    import torchvision
except ImportError:
    if os.environ.get("CI") == "true":
        raise
    pytest.skip("needs torch and torchvision (apt install python3-torch python3-torchvision)", allow_module_level=True)

DEVICE = "a100-80gb"


def train_resnet50(batch, steps=2):
    model = torchvision.models.resnet50().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for _ in range(steps):
        images = torch.randn(batch, 3, 224, 224, device="cuda")
        labels = torch.randint(0, 1000, (batch,), device="cuda")
        torch.nn.functional.cross_entropy(model(images), labels).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)


@pytest.fixture(scope="module", params=[32, 64])
def captured(request):
    with allocsim.capture(device=DEVICE, name=f"torchvision_resnet50_b{request.param}") as cap:
        train_resnet50(request.param)
    cap.zoo = f"resnet50_b{request.param}"
    return cap


def test_bytes_by_tag_match_the_zoo(captured):
    zoo = allocsim.load(captured.zoo).info["tags"]
    ours = captured.trace.info["tags"]
    for tag in ("weight", "gradient", "optimizer", "input", "workspace"):
        assert ours[tag] == zoo[tag], tag
    assert captured.steps == 2 and captured.trace.info["steps"] == 2


def test_peak_through_caching_against_the_zoo(captured):
    ours = allocsim.run(captured.trace, policy="caching", device=DEVICE)
    zoo = allocsim.run(captured.zoo, policy="caching", device=DEVICE)
    a, b = ours.breakdown, zoo.breakdown
    peak_a, peak_b = ours.to_dict()["peak_allocated_bytes"], zoo.to_dict()["peak_allocated_bytes"]
    difference = (peak_a - peak_b) / peak_b
    print(f"\n{captured.zoo}: peak allocated through caching: capture {peak_a:,} B, zoo {peak_b:,} B ({100 * difference:+.2f}%)")
    tags = sorted(set(a["by_tag"]) | set(b["by_tag"]),
                  key=lambda tag: -abs(a["by_tag"].get(tag, 0) - b["by_tag"].get(tag, 0)))
    print("alive at the peak, by tag (capture - zoo):")
    for tag in tags:
        print(f"  {tag:<11} {a['by_tag'].get(tag, 0) - b['by_tag'].get(tag, 0):>+15,} B")
    layers_a, layers_b = dict(a["top_layers"]), dict(b["top_layers"])
    print("alive at the peak, the largest modules (capture - zoo):")
    for layer in sorted(set(layers_a) | set(layers_b)):
        print(f"  {layer:<24} {layers_a.get(layer, 0) - layers_b.get(layer, 0):>+15,} B")
    assert abs(difference) < 0.02


def test_mixed_precision_against_the_zoo():
    """torch.autocast("cuda", float16) as CUDA's autocast casts: against resnet50_b32_amp, the
    weights (with their float16 copies), inputs and workspaces per tag, and the peak within 2%.
    (The zoo's AMP step has GradScaler's 4 B scale among the optimizer's; this step has no scaler.)"""
    with allocsim.capture(device=DEVICE, name="torchvision_resnet50_b32_amp") as cap:
        model = torchvision.models.resnet50().cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        for _ in range(2):
            images = torch.randn(32, 3, 224, 224, device="cuda")
            labels = torch.randint(0, 1000, (32,), device="cuda")
            with torch.autocast("cuda", dtype=torch.float16):
                loss = torch.nn.functional.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
    zoo_tags = allocsim.load("resnet50_b32_amp").info["tags"]
    ours = cap.trace.info["tags"]
    for tag in ("weight", "input", "workspace"):
        assert ours[tag] == zoo_tags[tag], tag
    peak_a = allocsim.run(cap.trace, policy="caching", device=DEVICE).to_dict()["peak_allocated_bytes"]
    peak_b = allocsim.run("resnet50_b32_amp", policy="caching", device=DEVICE).to_dict()["peak_allocated_bytes"]
    print(f"\nresnet50_b32_amp: peak allocated through caching: capture {peak_a:,} B, zoo {peak_b:,} B "
          f"({100 * (peak_a - peak_b) / peak_b:+.2f}%)")
    assert abs(peak_a - peak_b) / peak_b < 0.02
