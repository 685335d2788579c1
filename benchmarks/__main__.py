"""`make bench`: run every benchmarks/bench_*.py module's main() in one process, side by side.

Each module prints its own figures and ratios; this runner only discovers and times them.
Select some with `python -m benchmarks NAME ...` (NAME without the bench_ prefix).
"""
import importlib
import pkgutil
import sys
import time

import benchmarks


def main(argv):
    wanted = set(argv)
    names = sorted(m.name for m in pkgutil.iter_modules(benchmarks.__path__) if m.name.startswith("bench_"))
    failed = []
    for name in names:
        if wanted and name[len("bench_"):] not in wanted:
            continue
        print("=" * 78)
        print("benchmark %s" % name)
        print("=" * 78, flush=True)
        started = time.perf_counter()
        try:
            importlib.import_module("benchmarks.%s" % name).main()
        except Exception as exc:  # one broken benchmark must not hide the others' figures
            failed.append(name)
            print("FAILED: %s: %r" % (name, exc))
        print("(%s took %.1f s)" % (name, time.perf_counter() - started), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
