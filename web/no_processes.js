// Emscripten's C library has no posix_spawnp: a page starts no process. The native build
// reads a snapshot through tools/torch_snapshot.py (workloads/snapshot_import.cpp); here the
// call fails with ENOSYS, which that code reports as its usual one-line error.
mergeInto(LibraryManager.library, {
  posix_spawnp: function () {
    return 52;  // ENOSYS
  },
});
