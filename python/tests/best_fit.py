"""The best fit of docs/python.md, kept here so the tests replay the text the guide shows."""
import bisect

import allocsim


class BestFit(allocsim.Policy):
    """Best fit over one region of all free device memory, splitting and coalescing (as bestfit)."""

    def __init__(self):
        self.region = None
        self.free = []     # (size, addr) of every free range, sorted: the best fit is a bisect away
        self.by_addr = {}  # addr -> size of each free range
        self.by_end = {}   # end -> addr of each free range, to merge with the one before

    def allocate(self, request):
        if self.region is None:  # the first request takes everything free, as TensorFlow's BFC does
            page = max(256, self.device.granularity)
            size = self.device.available // page * page
            self.region = self.device.malloc(size) if size else None
            if self.region is None:
                return None
            self._add(self.region.addr, self.region.bytes)
        size = -(-max(request.bytes, 1) // 256) * 256
        i = bisect.bisect_left(self.free, (size, 0))
        if i == len(self.free):
            return None  # an OOM
        free_size, addr = self.free[i]
        self._remove(addr)
        if free_size > size:
            self._add(addr + size, free_size - size)
        return allocsim.Block(addr, size, request)

    def deallocate(self, block):
        addr, size = block.addr, block.size
        if addr + size in self.by_addr:  # merge with the free range after it
            size += self._remove(addr + size)
        if addr in self.by_end:  # and with the one before
            addr = self.by_end[addr]
            size += self._remove(addr)
        self._add(addr, size)

    def release_cached(self):
        if self.region and self.by_addr.get(self.region.addr) == self.region.bytes:
            self._remove(self.region.addr)
            self.device.free(self.region)
            self.region = None

    def _add(self, addr, size):
        bisect.insort(self.free, (size, addr))
        self.by_addr[addr] = size
        self.by_end[addr + size] = addr

    def _remove(self, addr):
        size = self.by_addr.pop(addr)
        del self.by_end[addr + size]
        self.free.pop(bisect.bisect_left(self.free, (size, addr)))
        return size
