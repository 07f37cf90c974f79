"""python3 -m allocsim capture SCRIPT [--steps N] [--out PATH] [--device NAME] [-- ARGS...]

Runs a training script under allocsim.capture() (docs/capture.md): its own code, unchanged,
with its data loading run for real on the CPU; stops it after N optimizer steps and writes the
trace (.atrace or .csv) for `allocsim run --workload PATH`. Bad input is one line and exit 2; a
script that stops before N steps keeps what it captured, says so, and exits 1.
"""
import argparse
import os
import runpy
import sys


def _capture_command(arguments):
    parser = argparse.ArgumentParser(prog="python3 -m allocsim capture",
                                     description="Capture a PyTorch training script's device memory on fake tensors.")
    parser.add_argument("script", help="the training script (run as __main__)")
    parser.add_argument("--steps", type=int, default=2, help="optimizer steps to capture (default 2)")
    parser.add_argument("--out", default="capture.atrace", help="the trace to write: .atrace or .csv")
    parser.add_argument("--device", default="a100-80gb", help="the device preset (allocsim devices)")
    if "--" in arguments:
        cut = arguments.index("--")
        arguments, script_args = arguments[:cut], arguments[cut + 1:]
    else:
        script_args = []
    options = parser.parse_args(arguments)
    if options.steps < 1:
        parser.error(f"--steps: {options.steps}; give 1 or more")
    if not os.path.isfile(options.script):
        print(f"capture: {options.script}: no such file", file=sys.stderr)
        return 2
    if not options.out.endswith((".atrace", ".csv")):
        print(f"capture: --out {options.out}: name a .atrace or .csv file", file=sys.stderr)
        return 2

    import allocsim
    try:
        cap = allocsim.capture(device=options.device, name=os.path.basename(options.script),
                               max_steps=options.steps)
    except (ImportError, ValueError) as error:
        print(f"capture: {error}", file=sys.stderr)
        return 2
    status = 0
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [options.script] + script_args
    sys.path.insert(0, os.path.dirname(os.path.abspath(options.script)))
    try:
        with cap:
            runpy.run_path(options.script, run_name="__main__")
    except SystemExit as exit:
        if exit.code not in (None, 0):
            print(f"capture: {options.script} exited with {exit.code}", file=sys.stderr)
            status = 1
    except allocsim._capture.DataRead as error:  # the script reads what a capture does not hold
        print(f"capture: {error}", file=sys.stderr)
        status = 2
    except Exception as error:  # the script's own failure: what ran before it is kept
        print(f"capture: {options.script} stopped: {type(error).__name__}: {error}", file=sys.stderr)
        status = 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    if cap.steps < options.steps:
        print(f"capture: {options.script} made {cap.steps} optimizer steps of the {options.steps} asked; "
              f"the trace keeps what it captured", file=sys.stderr)
        status = status or 1
    if not cap.allocations:
        print(f"capture: {options.script} put nothing on the device (no .cuda() / .to('cuda') / device='cuda'); "
              "nothing written", file=sys.stderr)
        return status or 1
    try:
        cap.save(options.out, overwrite=True)
    except ValueError as error:
        print(f"capture: {error}", file=sys.stderr)
        return 2
    print(f"capture: {len(cap.allocations)} allocations over {cap.steps} steps written to {options.out}")
    print(cap.summary())
    return status


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] != "capture":
        print("usage: python3 -m allocsim capture SCRIPT [--steps N] [--out PATH] [--device NAME] [-- ARGS...]",
              file=sys.stderr)
        return 2
    return _capture_command(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
