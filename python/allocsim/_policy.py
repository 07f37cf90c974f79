"""Policy: the base of allocator policies written in Python, replayed by the C++ engine.

Subclass it and implement ``allocate(request) -> Block | None`` (None is an OOM) and
``deallocate(block)``; optionally ``stats()`` (a dict with ``largest_free`` and
``limit`` in bytes, for the OOM classification) and ``release_cached()`` (empty_cache()).
``self.device`` is the simulated device while a run lasts: ``malloc(bytes) -> Segment |
None``, ``free(segment)``, and the VMM calls ``reserve_addresses``, ``create_physical``,
``map``, ``unmap``, ``release_physical``, ``release_addresses``. The engine checks every
block: 256-byte aligned, at least the request's bytes, inside a segment (or mapped range)
the policy holds, overlapping no live block; otherwise the run stops with PolicyError.
"""
from . import _core

PolicyError = _core.PolicyError


class Policy:
    """Subclass with allocate(request) and deallocate(block); see the module's doc."""

    device = None

    #: The name results show for it (default: "py:" and the class name).
    name = None

    def allocate(self, request):
        raise NotImplementedError("a Policy implements allocate(request) -> Block | None")

    def deallocate(self, block):
        raise NotImplementedError("a Policy implements deallocate(block)")

    def stats(self):
        """None: the engine counts allocated and reserved bytes itself."""
        return None

    def release_cached(self):
        """torch.cuda.empty_cache(): give back the segments no live block uses (default: nothing)."""


def policy_name(policy):
    cls = policy if isinstance(policy, type) else type(policy)
    return getattr(policy, "name", None) or "py:" + cls.__name__


def is_python_policy(policy):
    return (isinstance(policy, type) and issubclass(policy, Policy)) or isinstance(policy, Policy)
