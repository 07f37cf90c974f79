#!/usr/bin/env bash
# The GPU machine has glibc and none of Debian's other shared libraries: run the portable
# binary where only the loader, libc and libm exist (plus glibc's own libpthread, libdl and
# librt, if the binary names them) and check that `allocsim validate --backend host` works.
#   real_gpu/tests/glibc_only.sh [BIN]   (default build/release/portable/allocsim)
# Exit 77 (ctest's skip) when BIN is not built: `real_gpu/validate.sh --build-only` builds it.
# Every library ldd resolves must be glibc's (that check holds anywhere); then the binary runs
# in a root made of those files alone, with chroot where it is allowed (root), else through
# the copied loader with only the copied folder on its path and no cache (the loader still
# falls back to the system's folders then, so there the ldd check is the guard).
set -uo pipefail
root_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)"
bin="${1:-$root_dir/build/release/portable/allocsim}"
if [[ ! -x "$bin" ]]; then
  echo "glibc_only: SKIPPED: no $bin (build it with real_gpu/validate.sh --build-only)"
  exit 77
fi

jail="$(mktemp -d "${TMPDIR:-/tmp}/allocsim-glibc-only.XXXXXX")"
trap 'rm -rf "$jail"' EXIT
mkdir -p "$jail/lib" "$jail/tmp" "$jail/bin"
cp "$bin" "$jail/bin/allocsim"

# What the loader resolves, each checked to be glibc's: anything else is a portability bug.
loader=""
while read -r name path; do
  case "$(basename "$name")" in
    libc.so.6 | libm.so.6 | libpthread.so.0 | libdl.so.2 | librt.so.1) ;;
    ld-linux*) loader="$path" ;;
    *)
      echo "glibc_only: FAILED: $bin needs $name, which the GPU machine does not have" >&2
      exit 1
      ;;
  esac
  mkdir -p "$jail$(dirname "$path")"
  cp -L "$path" "$jail$path"
  cp -L "$path" "$jail/lib/$(basename "$path")"
done < <(ldd "$bin" | awk '/=>/ && $3 ~ /^\// { print $1, $3 } $1 ~ /^\/.*ld-linux/ { print $1, $1 }')
[[ -n "$loader" ]] || { echo "glibc_only: FAILED: ldd names no loader for $bin" >&2; exit 1; }

command=(/bin/allocsim validate --backend host --workload resnet50_b8 --policy caching --out /tmp/validation)
chroot_bin="$(command -v chroot || true)"
status=0
if [[ -n "$chroot_bin" ]] && "$chroot_bin" "$jail" /bin/allocsim --help >/dev/null 2>&1; then
  how=chroot
  output="$(env -i "$chroot_bin" "$jail" "${command[@]}" 2>&1)" || status=$?
else
  how="the loader with --inhibit-cache --library-path (chroot is not allowed here)"
  command[0]="$jail/bin/allocsim"
  command[${#command[@]} - 1]="$jail/tmp/validation"
  output="$(env -i "$jail/lib/$(basename "$loader")" --inhibit-cache --library-path "$jail/lib" "${command[@]}" 2>&1)" ||
    status=$?
fi
echo "$output"
echo "glibc_only: exit status $status"
((status == 0)) && grep -q "informative exact metrics agree" <<<"$output" || {
  echo "glibc_only: FAILED: validate did not finish in a glibc-only root ($how)" >&2
  exit 1
}
echo "glibc_only: allocsim validate --backend host ran with glibc alone ($how)"
