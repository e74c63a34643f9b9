#!/usr/bin/env python3
"""Runs every family's golden script (models/<family>/testdata/make_golden.py).

    python3 models/blocks/testdata/make_goldens.py [FAMILY ...]

Each family writes its fixtures and make_golden.log into its own testdata
folder; see goldenlib.py for what they hold. Exits non-zero when any
configuration failed (the others are still written).
"""
import importlib.util
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.normpath(os.path.join(HERE, "..", ".."))
FAMILIES = ["gemma3", "llama", "qwen3", "olmo3", "cohere2"]


def main():
    fams = sys.argv[1:] or FAMILIES
    failed = []
    for fam in fams:
        path = os.path.join(MODELS, fam, "testdata", "make_golden.py")
        spec = importlib.util.spec_from_file_location(f"make_golden_{fam}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        t0 = time.time()
        print(f"== {fam}", flush=True)
        saved = sys.argv
        sys.argv = [path]
        try:
            rc = mod.goldenlib.main(mod.SPECS, os.path.dirname(path))
        finally:
            sys.argv = saved
        print(f"== {fam}: {'ok' if rc == 0 else 'FAILED'} in {time.time() - t0:.1f}s", flush=True)
        if rc:
            failed.append(fam)
    if failed:
        print("families with failures:", ", ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
