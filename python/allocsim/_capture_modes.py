"""The machinery allocsim.capture() installs for the length of its block, all undone on exit:
the fake and recording modes, module hooks, the optimizer's and autograd's markers, and the
torch.cuda shims (docs/capture.md lists them)."""
import contextlib
import functools

from . import _core
from ._capture import DataRead, _nbytes, _script_line

# Tensor methods that read values and that fake tensors refuse with a message of their own;
# .item() and bool() reach the recording mode as _local_scalar_dense, which knows constants.
_VALUE_READS = ("tolist", "numpy", "__array__")


def _data_read_message(what):
    return (f"{_script_line()}: {what} reads a tensor's values, but a capture holds no data (fake tensors); "
            "keep that code outside `with allocsim.capture()` or skip it with `if not allocsim.capturing():`")


def _is_cuda(device):
    if device is None:
        return False
    if isinstance(device, int) and not isinstance(device, bool):
        return True  # .to(0), device=0: a CUDA ordinal
    import torch
    try:
        return torch.device(device).type == "cuda"
    except (TypeError, RuntimeError):
        return False


def _tensors(value):
    import torch
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [item for item in value if isinstance(item, torch.Tensor)]
    return []


def enter(cap, torch, undo):
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    state = {"to_device": False}  # a move to the device is running
    from ._capture_autocast import AutocastCasts
    autocast = AutocastCasts(torch, lambda cast: cap._retag(cast, "weight"))
    clear_cache = torch.clear_autocast_cache

    def clear_autocast_cache():
        clear_cache()
        autocast.clear()

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            cap._poll_if_dirty()
            name = func.overloadpacket.__name__
            if name == "_local_scalar_dense":
                source = args[0]
                if cap._phase == "optimizer" and source.numel() == 1 and getattr(source, "constant", None) is None:
                    # 1.13's Adam and AdamW read their step counter (step_t.item()) for the bias
                    # correction, a Python float that sizes nothing: the step it would be
                    return float(cap.steps + 1) if source.is_floating_point() else cap.steps + 1
                if getattr(source, "constant", None) is None:
                    raise DataRead(_data_read_message(".item() (or a tensor in an `if`, bool(), float(), int())"))
            real = [t for t in _tensors(list(args)) + _tensors(list(kwargs.values())) if not isinstance(t, FakeTensor)]
            if real and not name.startswith("lift"):
                # Tensors made before the capture (a data set, a pretrained state): faked by shape.
                converted = {id(t): fake.from_tensor(t) for t in real}
                args = tuple(converted.get(id(a), a) if isinstance(a, torch.Tensor) else a for a in args)
            if kwargs.get("device") is not None and _is_cuda(kwargs["device"]):
                kwargs = dict(kwargs, device=torch.device("cpu"))
            on_device = state["to_device"] or any(cap._is_device(t) for t in _tensors(list(args)))
            op = name
            if on_device:
                cap._before_op(name, args, kwargs)
            try:
                if name == "convolution_backward":
                    out = _CONV_BACKWARD(*args)
                elif name.startswith("_foreach_"):
                    out = _FOREACH(name, args)
                else:
                    out = func(*args, **kwargs)
            except DataRead:
                raise
            except Exception as error:  # noqa: BLE001 (retold in one line, naming the op and module)
                text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
                text = text.split(". This could be")[0]  # the dispatcher's first sentence says it
                if type(error).__name__ in ("DataDependentOutputException", "DynamicOutputShapeException"):
                    raise DataRead(_data_read_message(f"aten.{name} (its output's shape depends on values)")) from None
                raise RuntimeError(f"{_script_line()}: aten.{name} in module '{cap._module() or '(outside modules)'}' "
                                   f"cannot run on fake tensors in PyTorch {torch.__version__}: {text}") from None
            outputs = _tensors(out if isinstance(out, (tuple, list)) else [out])
            if on_device and cap.workspaces and name == "convolution":
                cap._conv_forward(args, outputs[0])
            if on_device and cap.workspaces and name == "convolution_backward":
                _conv_backward(cap, args, out, outputs)
            else:
                cap._record_outputs(outputs, op, on_device, moved=state["to_device"])
            return out

    def _conv_backward(cap, args, out, outputs):
        grad_output, input, weight = args[0], args[1], args[2]
        mask = args[-1]
        grad_input = out[0]
        if weight.dim() >= 3:
            kernel = weight.shape[2]
            if mask[0]:
                cap._benchmark_trial(1, input, weight, grad_output)
                cap._extra(_core._conv_workspace_bytes(kernel, _nbytes(input), _nbytes(grad_output), 1), "workspace",
                           "cudnn_workspace")
                cap._record_outputs([grad_input], "convolution_backward", True)
            cap._benchmark_trial(2, input, weight, grad_output)
            cap._extra(_core._conv_workspace_bytes(kernel, _nbytes(input), _nbytes(grad_output), 2), "workspace",
                       "cudnn_workspace")
        cap._record_outputs(outputs, "convolution_backward", True)

    class DeviceMap(TorchFunctionMode):
        """cuda -> cpu in the calls that name a device; moves to cuda are marked as such."""

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            name = getattr(func, "__name__", "")
            if torch.is_autocast_enabled():
                args, kwargs = autocast.cast_arguments(name, args, kwargs)
            if name in _VALUE_READS:
                raise DataRead(_data_read_message(f".{name}()"))
            if func is torch.Tensor.cuda:
                return _move(args[0], kwargs.get("non_blocking", False))
            if func is torch.Tensor.to:
                device, dtype, non_blocking, memory_format = torch._C._nn._parse_to(*args[1:], **kwargs)
                if _is_cuda(device):
                    tensor = args[0]
                    options = dict(dtype=dtype or tensor.dtype, non_blocking=non_blocking,
                                   memory_format=memory_format or torch.preserve_format)
                    if cap._is_device(tensor):
                        return func(tensor, **options)
                    with _moving():
                        return func(tensor, "cpu", copy=True, **options)
            if "device" in kwargs and _is_cuda(kwargs["device"]):
                kwargs = dict(kwargs, device="cpu")
                with _moving():
                    return func(*args, **kwargs)
            return func(*args, **kwargs)

    @contextlib.contextmanager
    def _moving():
        before = state["to_device"]
        state["to_device"] = True
        try:
            yield
        finally:
            state["to_device"] = before

    def _move(tensor, non_blocking=False):
        if cap._is_device(tensor):
            return tensor
        with _moving():
            return torch.Tensor.to(tensor, "cpu", copy=True, non_blocking=non_blocking)

    # A module built before the capture and moved inside it: Module._apply would set each real
    # parameter's .data to the fake copy (a real Parameter over a meta storage); told the types
    # differ, it puts Parameter(fake copy) in its place instead, a fake parameter.
    compatible = torch._has_compatible_shallow_copy_type
    _patch(undo, torch, "_has_compatible_shallow_copy_type",
           lambda a, b: compatible(a, b) and isinstance(a, FakeTensor) == isinstance(b, FakeTensor))
    # torch.autocast's exit from the outermost block drops CUDA's weight cache, and ours
    _patch(undo, torch, "clear_autocast_cache", clear_autocast_cache)
    undo.callback(autocast.clear)
    fake = FakeTensorMode(allow_fallback_kernels=False)
    undo.enter_context(fake)
    undo.enter_context(Recorder())
    undo.enter_context(DeviceMap())

    _install_hooks(cap, torch, undo)
    _install_markers(cap, torch, undo)
    from ._capture_cuda import install_cuda_shims
    install_cuda_shims(cap, torch, undo)


def _CONV_BACKWARD(grad_output, input, weight, bias_sizes, *rest):
    """convolution_backward's outputs by shape (1.13 has no fake kernel for it): the input's
    gradient like the input, the weight's like the weight, the bias's one per out channel."""
    import torch
    mask = rest[-1]
    grad_input = torch.empty_like(input) if mask[0] else None
    grad_weight = torch.empty_like(weight) if mask[1] else None
    grad_bias = weight.new_empty((weight.shape[0],)) if mask[2] else None
    return grad_input, grad_weight, grad_bias


def _FOREACH(name, args):
    """The _foreach_ ops by shape (1.13 has no fake kernels for them): an in-place one changes
    values only; an out-of-place one makes a tensor like each of its first list's (a 0-dim one
    per tensor for _foreach_norm)."""
    if name.endswith("_"):
        return None
    first = args[0]
    if name == "_foreach_norm":
        return [tensor.new_empty(()) for tensor in first]
    return [tensor.new_empty(tensor.shape) for tensor in first]


def _patch(undo, owner, name, value):
    before = getattr(owner, name)
    setattr(owner, name, value)
    undo.callback(setattr, owner, name, before)


def _install_hooks(cap, torch, undo):
    from torch.nn.modules import module as module_file

    def pre(module, inputs):
        if module not in cap._names:
            for name, child in module.named_modules():
                cap._names.setdefault(child, name)
        cap._modules.add(module)
        cap._module_stack.append(cap._names.get(module, ""))

    def post(module, inputs, output):
        if cap._module_stack:
            cap._module_stack.pop()
        if cap._phase == "forward" and torch.is_grad_enabled() and not any(True for _ in module.children()):
            name = cap._names.get(module, "")
            for tensor in _tensors(output if isinstance(output, (tuple, list)) else [output]):
                if tensor.requires_grad:
                    tensor.register_hook(functools.partial(_entering_backward_of, cap, name))
        return None

    undo.callback(module_file.register_module_forward_pre_hook(pre).remove)
    undo.callback(module_file.register_module_forward_hook(post).remove)


def _entering_backward_of(cap, name, grad):
    cap._backward_module = name
    return None


def _install_markers(cap, torch, undo):
    import torch.autograd.profiler as profiler

    class Marker(contextlib.ContextDecorator):
        """record_function, which 1.13's optimizers call and which fails under FakeTensorMode:
        here it marks the optimizer's step."""

        def __init__(self, name, args=None):
            self.name = name
            self.before = None

        def __enter__(self):
            if self.name.startswith("Optimizer.step#"):
                cap._poll()
                cap._classify()
                self.before = cap._phase
                cap._phase = "optimizer"
            return self

        def __exit__(self, *error):
            if self.before is not None:
                cap._phase = self.before
                cap._classify()
                if error[0] is None:
                    cap.step()
            return False

    _patch(undo, profiler, "record_function", Marker)
    _patch(undo, torch.autograd, "record_function", Marker) if hasattr(torch.autograd, "record_function") else None

    original_init = torch.optim.Optimizer.__init__

    def optimizer_init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        cap._optimizers.add(self)

    _patch(undo, torch.optim.Optimizer, "__init__", optimizer_init)

    original_backward = torch.autograd.backward

    def backward(*args, **kwargs):
        cap._poll()
        cap._classify()
        before = cap._phase
        cap._phase = "backward"
        cap._backward_module = None
        try:
            return original_backward(*args, **kwargs)
        finally:
            cap._phase = before
            cap._backward_module = None
            cap._poll()
            cap._classify()

    _patch(undo, torch.autograd, "backward", backward)
