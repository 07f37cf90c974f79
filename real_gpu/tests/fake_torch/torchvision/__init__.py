"""The one torchvision 0.26 call record_torch.py makes, over the fake torch beside it: a
resnet50 whose weights, activations (kept for backward) and gradients take fake GPU memory."""
import os

import torch

__version__ = "0.26.0+fake"
_models_made = 0


class _ResNet50:
    WEIGHTS = 25_557_032  # resnet50's parameter count
    ACTIVATION_BYTES_PER_SAMPLE = 18 << 20  # roughly what fp32 training keeps for backward at 224x224

    def __init__(self):
        self.parameters_ = [torch.Tensor((self.WEIGHTS,), on_device=False)]

    def to(self, device):
        self.parameters_ = [torch.Tensor(parameter.shape) for parameter in self.parameters_]
        return self

    def train(self, mode=True):
        return self

    def parameters(self, recurse=True):
        return iter(self.parameters_)

    def __call__(self, inputs):
        activations = torch.Tensor((inputs.shape[0], self.ACTIVATION_BYTES_PER_SAMPLE // 4), graph=inputs)
        logits = torch.Tensor((inputs.shape[0], 1000), graph=activations)
        logits.parameters = self.parameters_
        return logits


def _resnet50(*, weights=None, progress=True, **kwargs):
    global _models_made
    _models_made += 1
    torch._call("torchvision.models.resnet50", weights=weights)
    if str(_models_made) == os.environ.get("FAKE_TORCH_DIE_AT_MODEL"):
        os._exit(9)  # as a kill would: nothing is flushed or cleaned up
    return _ResNet50()


class _Models:
    resnet50 = staticmethod(_resnet50)


models = _Models()
