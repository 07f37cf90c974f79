"""torch.autocast("cuda") inside allocsim.capture(): the casts CUDA's autocast makes, made by
the capture (the capture's tensors are CPU tensors, which CUDA's autocast leaves alone).

The op lists are CUDA's (PyTorch 1.13, aten/src/ATen/autocast_mode.cpp, the CUDA
registrations), applied where Python calls the op, above autograd as autocast is:
- lower precision (`fp16` / `bf16`, the autocast dtype): floating inputs other than float64
  cast to it; a parameter's cast (a leaf that requires grad) is cached until the outermost
  autocast block exits, as CUDA's weight cache does;
- float32: floating inputs in float16 or bfloat16 cast to float32.
Other ops run in their inputs' dtypes (CUDA's "promote" list widens mixed inputs, which the
ops themselves do as well). Ops are matched by the Python name the call reaches; a model that
reaches CUDA's listed ops through other names gets no casts for them.
"""
LOWER = frozenset({
    "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "conv_tbc", "matmul", "__matmul__", "__rmatmul__", "mm", "mv", "bmm", "addmm", "addmv", "addr",
    "baddbmm", "addbmm", "chain_matmul", "multi_dot", "prelu", "_convolution", "convolution",
})
FLOAT32 = frozenset({
    "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal", "rsqrt",
    "sinh", "tan", "pow", "__pow__", "softplus", "layer_norm", "group_norm", "frobenius_norm", "nuclear_norm",
    "cosine_similarity", "poisson_nll_loss", "cosine_embedding_loss", "nll_loss", "hinge_embedding_loss",
    "kl_div", "l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss", "margin_ranking_loss",
    "multilabel_margin_loss", "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss",
    "binary_cross_entropy_with_logits", "dist", "pdist", "cdist", "renorm", "logsumexp", "prod", "softmax",
    "log_softmax", "cumprod", "cumsum", "sum", "cross_entropy",
})


class AutocastCasts:
    """Casts the arguments of a call as CUDA's autocast would; holds the weight cache."""

    def __init__(self, torch, on_weight_cast):
        self.torch = torch
        self.cache = {}  # id(parameter) -> (parameter, its cast)
        self.on_weight_cast = on_weight_cast  # told of each parameter's cast (tagged weight, as the zoo does)

    def clear(self):
        self.cache.clear()

    def cast_arguments(self, name, args, kwargs):
        torch = self.torch
        if name in LOWER:
            target = torch.get_autocast_gpu_dtype()
            eligible = (torch.float32, torch.float16, torch.bfloat16)
        elif name in FLOAT32:
            target = torch.float32
            eligible = (torch.float16, torch.bfloat16)
        else:
            return args, kwargs
        def cast(value):
            if not isinstance(value, torch.Tensor) or value.dtype not in eligible or value.dtype == target:
                return value
            cacheable = target != torch.float32 and value.is_leaf and value.requires_grad and \
                torch.is_autocast_cache_enabled()
            if cacheable and id(value) in self.cache:
                return self.cache[id(value)][1]
            result = value.to(target)
            if cacheable:
                self.cache[id(value)] = (value, result)
                self.on_weight_cast(result)
            return result
        return tuple(cast(a) for a in args), {k: cast(v) for k, v in kwargs.items()}
