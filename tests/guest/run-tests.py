#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Run the qemu-rnic guest tests (tests/guest/test_*.py) and print TAP.

  tests/guest/run-tests.py                  all tests
  tests/guest/run-tests.py device-visible   tests by name (fnmatch patterns)
  tests/guest/run-tests.py --list

Builds the guest image first (scripts/guest/build-image.sh, a no-op when up
to date). Guest cases boot --jobs guests at once. A test whose QEMU device is
missing from the binary is reported as "ok N - name # SKIP ...". Exit status 1
if any test failed. Failure details go to stdout as TAP comments ("# ...").
"""

import argparse
import fnmatch
import importlib
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import List, Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import guesttest  # noqa: E402  pylint: disable=C0413
from guesttest import Guest, GuestCase, Procedure, Skip, run_guests  # noqa: E402  pylint: disable=C0413


def comment(text: str) -> None:
    for line in text.rstrip().splitlines():
        print(f"# {line}")


class Tap:
    def __init__(self, total: int):
        self.number = 0
        self.failed = 0
        print(f"1..{total}", flush=True)

    def result(self, name: str, ok: bool, detail: str = "",
               skip: Optional[str] = None) -> None:
        self.number += 1
        if skip:
            print(f"ok {self.number} - {name} # SKIP {skip}", flush=True)
            return
        if not ok:
            self.failed += 1
            comment(detail)
        print(f"{'ok' if ok else 'not ok'} {self.number} - {name}", flush=True)


def load_tests() -> List[object]:
    for path in sorted(HERE.glob("test_*.py")):
        importlib.import_module(path.stem)
    return guesttest.TESTS


def check_case(test: GuestCase, guest: Guest) -> str:
    """'' if the case passed, else what went wrong ("SKIP: why" if skipped)."""
    result = guest.finish()
    if not result.ok:
        return result.report()
    try:
        test.check(result)
    except Skip as why:
        return f"SKIP: {why}"
    except Exception:  # pylint: disable=broad-except
        return (traceback.format_exc(limit=-1) +
                f"--- guest output ---\n{result.output}")
    return ""


def run_cases(cases: List[GuestCase], qemu: str, jobs: int, timeout_scale: float):
    """Yield (case, failure text) in order, booting up to JOBS guests at once."""
    for first in range(0, len(cases), jobs):
        batch = cases[first:first + jobs]
        guests = [Guest(test.script(), name=test.name, args=test.args, qemu=qemu,
                        initrd=test.initrd() if test.initrd else None,
                        append=test.append,
                        timeout=test.timeout * timeout_scale) for test in batch]
        start = time.monotonic()
        run_guests(guests)
        print(f"# {', '.join(t.name for t in batch)}: {time.monotonic() - start:.1f} s",
              flush=True)
        for test, guest in zip(batch, guests):
            yield test, check_case(test, guest)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("patterns", nargs="*", help="test names (fnmatch patterns)")
    parser.add_argument("--qemu", default=os.environ.get(
        "RNIC_QEMU", str(guesttest.DEFAULT_QEMU)))
    parser.add_argument("-j", "--jobs", type=int, default=2,
                        help="guests booted at once (default 2)")
    parser.add_argument("--timeout-scale", type=float, default=1.0,
                        help="multiply every test's timeout (slow hosts, sanitizers)")
    parser.add_argument("--no-build", action="store_true",
                        help="do not run scripts/guest/build-image.sh first")
    parser.add_argument("--list", action="store_true", help="list the tests")
    opts = parser.parse_args()

    tests = [t for t in load_tests()
             if not opts.patterns or any(fnmatch.fnmatch(t.name, p) for p in opts.patterns)]
    if opts.list:
        for test in tests:
            print(test.name)
        return 0

    if not opts.no_build:
        start = time.monotonic()
        build = subprocess.run([str(guesttest.TOP / "scripts/guest/build-image.sh")],
                               capture_output=True, text=True, check=False)
        if build.returncode != 0:
            print(f"Bail out! guest image build failed\n"
                  f"{build.stdout}{build.stderr}".replace("\n", "\n# "))
            return 1
        print(f"# guest image: {time.monotonic() - start:.1f} s", flush=True)
    if not Path(opts.qemu).exists():
        print(f"Bail out! no QEMU binary {opts.qemu} (scripts/build-qemu.sh)")
        return 1

    available = set(guesttest.qemu_devices(opts.qemu))
    tap = Tap(len(tests))

    def missing(test) -> Optional[str]:
        absent = [d for d in test.requires if d not in available]
        return f"QEMU has no device {', '.join(absent)}" if absent else None

    # Guest cases first (booted in batches), in order; then procedures.
    runnable = [t for t in tests if isinstance(t, GuestCase) and not missing(t)]
    results = run_cases(runnable, opts.qemu, max(1, opts.jobs), opts.timeout_scale)
    for test in tests:
        if isinstance(test, GuestCase):
            if missing(test):
                tap.result(test.name, True, skip=missing(test))
                continue
            done, failure = next(results)
            assert done is test
            if failure.startswith("SKIP: "):
                tap.result(test.name, True, skip=failure[6:])
            else:
                tap.result(test.name, not failure, failure)
    for test in tests:
        if isinstance(test, Procedure):
            if missing(test):
                tap.result(test.name, True, skip=missing(test))
                continue
            start = time.monotonic()
            try:
                test.run(opts.qemu)
                tap.result(test.name, True)
            except Skip as why:
                tap.result(test.name, True, skip=str(why))
            except Exception:  # pylint: disable=broad-except
                tap.result(test.name, False, traceback.format_exc())
            print(f"# {test.name}: {time.monotonic() - start:.1f} s", flush=True)
    return 1 if tap.failed else 0


if __name__ == "__main__":
    sys.exit(main())
