#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Sum TAP results of every suite into one 'N passed, N failed, N skipped'.

Inputs: meson testlog.json files (each test's TAP stdout) and plain TAP
files. A test program that did not finish its plan (crash, bail out,
timeout) counts as one more failure, so nothing is lost silently.

  tap-summary.py [--json testlog.json]... [--tap file.tap]...
Prints per-suite lines, then the total line; exits 1 on any failure.
"""
import argparse
import json
import os
import re
import sys

OK = re.compile(r'^ok\b')
NOT_OK = re.compile(r'^not ok\b')
SKIP = re.compile(r'#\s*skip', re.I)
PLAN = re.compile(r'^1\.\.(\d+)')


def count_tap(text):
    """Return (passed, failed, skipped, complete) of one TAP stream."""
    passed = failed = skipped = seen = 0
    plan = None
    for line in text.splitlines():
        line = line.strip()
        m = PLAN.match(line)
        if m:
            plan = int(m.group(1))
            continue
        if NOT_OK.match(line):
            seen += 1
            if re.search(r'#\s*todo', line, re.I):
                skipped += 1
            else:
                failed += 1
        elif OK.match(line):
            seen += 1
            if SKIP.search(line):
                skipped += 1
            else:
                passed += 1
        elif line.startswith('Bail out!'):
            return passed, failed, skipped, False
    return passed, failed, skipped, plan is not None and seen == plan


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--json', action='append', default=[])
    ap.add_argument('--tap', action='append', default=[])
    args = ap.parse_args()

    total = [0, 0, 0]
    for path in args.json:
        try:
            lines = open(path).read().splitlines()
        except OSError:
            print(f'{path}: missing (suite did not run)')
            total[1] += 1
            continue
        for raw in lines:
            t = json.loads(raw)
            p, f, s, complete = count_tap(t.get('stdout') or '')
            if t.get('result') == 'SKIP':
                s, complete = max(s, 1), True
            if not complete or (t.get('result') not in ('OK', 'SKIP') and f == 0):
                f += 1
            suite = os.path.basename(path).rsplit('.', 1)[0]
            print(f"  {suite}: {t['name']}: {p} passed, {f} failed, {s} skipped")
            for i, v in enumerate((p, f, s)):
                total[i] += v
    for path in args.tap:
        try:
            text = open(path).read()
        except OSError:
            text = ''
        p, f, s, complete = count_tap(text)
        if not complete:
            f += 1
        print(f'  {path}: {p} passed, {f} failed, {s} skipped')
        for i, v in enumerate((p, f, s)):
            total[i] += v
    print(f'{total[0]} passed, {total[1]} failed, {total[2]} skipped')
    return 1 if total[1] else 0


if __name__ == '__main__':
    sys.exit(main())
