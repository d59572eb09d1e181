#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Run the qemu-rnic guest tests (tests/guest/test_*.py) and print TAP.

  tests/guest/run-tests.py                  all tests
  tests/guest/run-tests.py device-visible   tests by name (fnmatch patterns)
  tests/guest/run-tests.py --list

Builds the guest image first (scripts/guest/build-image.sh, a no-op when up
to date). Tests run side by side, each in a process of its own, as many as
keep the guests they boot within --jobs (a guest case one, a procedure its
own count): the procedures, the guest cases, then the tests marked
alone, one by one; each one's output and result is printed when it ends.
A test whose QEMU device is missing from the binary is reported as
"ok N - name # SKIP ...". Exit status 1 if any test failed. Failure details
go to stdout as TAP comments ("# ...").

Each test runs in a process group of its own, with the QEMUs and tools it
starts: told to stop (SIGTERM, SIGINT, SIGHUP: a CI job's timeout, ^C),
the runner stops every running test's group (SIGTERM, SIGKILL after
STOP_GRACE seconds) and exits with 128 + the signal, leaving no guest
behind.
"""

import argparse
import fnmatch
import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import List, Optional, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import guesttest  # noqa: E402  pylint: disable=C0413
from guesttest import Guest, GuestCase, Procedure, Skip  # noqa: E402  pylint: disable=C0413


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


# seconds a stopped test's group has between SIGTERM and SIGKILL
STOP_GRACE = 10
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class Stopped(BaseException):
    """The runner (or a test's process) was told to stop by a signal."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def raise_stopped(signum, _frame):
    raise Stopped(signum)


def main() -> int:
    for signum in STOP_SIGNALS:
        signal.signal(signum, raise_stopped)
    try:
        return run_main()
    except Stopped as stop:
        print(f"Bail out! stopped by {stop}", flush=True)
        return 128 + stop.signum


def run_main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("patterns", nargs="*", help="test names (fnmatch patterns)")
    parser.add_argument("--qemu", default=os.environ.get(
        "RNIC_QEMU", str(guesttest.DEFAULT_QEMU)))
    parser.add_argument("-j", "--jobs", type=int, default=4,
                        help="guests booted at once by the tests running (default 4)")
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

    built = tempfile.mkdtemp(prefix="rnic-built-")
    os.environ.setdefault(guesttest.BUILT_DIR_ENV, built)
    results = run_tests(tests, opts.qemu, max(1, opts.jobs), opts.timeout_scale, missing)
    try:
        for test, outcome in results:
            status, detail, output, timing = outcome
            if output:
                sys.stdout.write(output if output.endswith("\n") else output + "\n")
            if status == "skip":
                tap.result(test.name, True, skip=detail)
            else:
                tap.result(test.name, status == "ok", detail)
            if timing:
                print(f"# {test.name}: {timing}", flush=True)
    finally:
        results.close()     # a stopped run: its tests' groups end first
        shutil.rmtree(built, ignore_errors=True)
    return 1 if tap.failed else 0


def run_one(test, qemu: str, timeout_scale: float) -> Tuple[str, str]:
    """Run TEST: ("ok" | "skip" | "fail", why)."""
    try:
        if isinstance(test, Procedure):
            test.run(qemu)
            return "ok", ""
        guest = Guest(test.script(), name=test.name, args=test.args, qemu=qemu,
                      initrd=test.initrd() if test.initrd else None, append=test.append,
                      timeout=test.timeout * timeout_scale)
        guest.run()
        failure = check_case(test, guest)
    except Skip as why:
        return "skip", str(why)
    except Exception:  # pylint: disable=broad-except
        return "fail", traceback.format_exc()
    if failure.startswith("SKIP: "):
        return "skip", failure[6:]
    return ("fail", failure) if failure else ("ok", "")


def child(test, qemu: str, timeout_scale: float, out: Path) -> None:
    """In the forked child: run TEST with stdout (ours and its programs')
    into OUT/stdout, its outcome into OUT/result; never returns."""
    code = 1
    try:
        os.setpgid(0, 0)    # the test's group: it, its QEMUs, its tools
        # out of the terminal's foreground group: a read of it would stop us
        fd = os.open(os.devnull, os.O_RDONLY)
        os.dup2(fd, 0)
        os.close(fd)
        fd = os.open(out / "stdout", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.close(fd)
        result = run_one(test, qemu, timeout_scale)
        sys.stdout.flush()
        (out / "result").write_text(json.dumps(result))
        code = 0
    finally:
        os._exit(code)  # pylint: disable=protected-access


def stop_groups(pids) -> None:
    """End the process groups of the tests PIDS: SIGTERM (a test's own
    Python unwinds, stopping what it started; QEMU exits), SIGKILL to what
    is left after STOP_GRACE seconds; the tests' processes reaped. A
    second signal meanwhile is ignored: the cleanup runs to its end."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)

    def signal_groups(signum: int) -> None:
        for pid in pids:
            try:
                os.killpg(pid, signum)
            except ProcessLookupError:
                pass

    def reaped(pid: int, flags: int) -> bool:
        try:
            return os.waitpid(pid, flags)[0] != 0
        except ChildProcessError:
            return True     # reaped already (the signal came just after)

    signal_groups(signal.SIGTERM)
    left = set(pids)
    deadline = time.monotonic() + STOP_GRACE
    while left and time.monotonic() < deadline:
        left = {pid for pid in left if not reaped(pid, os.WNOHANG)}
        time.sleep(0.1)
    signal_groups(signal.SIGKILL)
    for pid in left:
        reaped(pid, 0)


def weight(test) -> int:
    """Guests a test boots at once: a case one, a procedure its own count."""
    return test.guests if isinstance(test, Procedure) else 1


def run_tests(tests: List[object], qemu: str, jobs: int, timeout_scale: float, missing):
    """Yield (test, (status, detail, output, timing)) as each test ends. Each
    runs in a forked process (its own stdout, working state and children),
    as many at once as keep their guests within JOBS (one at least): the
    procedures, then the guest cases, then the alone ones one by one, each
    with nothing beside it."""
    running = {}    # pid -> (test, start, directory); pid = its group

    def reap():
        pid, status, usage = os.wait4(-1, 0)
        if pid not in running:
            return None
        test, start, out = running.pop(pid)
        timing = f"{time.monotonic() - start:.1f} s, cpu {usage.ru_utime + usage.ru_stime:.1f} s"
        output = (out / "stdout").read_text(errors="replace") if (out / "stdout").exists() else ""
        try:
            result = json.loads((out / "result").read_text())
        except (OSError, ValueError):
            result = ("fail", f"the test's process ended with wait status {status} "
                              "and no result")
        shutil.rmtree(out, ignore_errors=True)
        return test, (result[0], result[1], output, timing)

    order = ([t for t in tests if isinstance(t, Procedure) and not t.alone] +
             [t for t in tests if isinstance(t, GuestCase) and not t.alone] +
             [t for t in tests if t.alone])
    try:
        for test in order:
            why = missing(test)
            if why:
                yield test, ("skip", why, "", "")
                continue
            while running and (test.alone or
                               sum(weight(t) for t, _, _ in running.values()) + weight(test) > jobs):
                done = reap()
                if done:
                    yield done
            out = Path(tempfile.mkdtemp(prefix=f"rnic-test-{test.name}-"))
            sys.stdout.flush()
            pid = os.fork()
            if pid == 0:
                child(test, qemu, timeout_scale, out)
            try:
                os.setpgid(pid, pid)    # as the child does: whichever runs first
            except OSError:
                pass                    # it has ended, or set it itself
            running[pid] = (test, time.monotonic(), out)
        while running:
            done = reap()
            if done:
                yield done
    finally:
        if running:     # stopped (Stopped, or the generator closed early)
            stop_groups(list(running))
            for _, _, out in running.values():
                shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
