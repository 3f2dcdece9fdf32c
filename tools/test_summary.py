#!/usr/bin/env python3
"""What the last ctest run of one or more build folders skipped, and how long each test took.

    python3 tools/test_summary.py build build-asan

For each build folder it reads ctest's own records of the last run (Testing/Temporary/):
LastTest.log (every test's output, time and result), LastTestsFailed.log (failed and not run) and,
when ctest wrote one, a JUnit file (`ctest --output-junit FILE`, relative to the build folder: the
file named by --junit, else Testing/Temporary/junit.xml) whose statuses are then authoritative;
and, where make test ran a build's tests in two ctest runs, the side-by-side run's own records
(side/Testing/Temporary/ in the build folder: the same files). It prints:

(a) the skip list, per build: every test skipped as a whole (exit status 77, SKIP_RETURN_CODE in
    CMakeLists.txt; its reason is the "SKIP: <reason>" line it printed), every test ctest did not
    run (with ctest's reason), and every partial skip inside a test that ran: cmocka cases
    ("SKIP: <case>: <reason>" from tests/unit/skip_test_util.h, and cmocka's "[  SKIPPED ] <case>"
    lines, folded together) and Python unittest cases ("test_x (module.Class...) ... skipped
    'reason'", ktuned_fixture.run_tests' verbosity 2; a check skipped inside a case that goes on
    prints "SKIP: test_x: <reason>");
(b) a timing table: each test's wall time in each build, slowest first, with the totals.

It reports; it does not judge: the exit status is 0 whatever the tests did (make test's own ctest
runs fail the build). A build folder without a ctest log is said so and left out.
"""
import argparse
import os
import re
import sys
import xml.etree.ElementTree as ET

# LastTest.log, one block per test:
#   7/127 Testing: test_x          ...  Output: ------ <lines> <end of output>
#   Test time =   3.04 sec         ...  Test Passed. | Test Failed. | ...
START = re.compile(r"^(\d+)/(\d+) Testing: (.+?)\s*$")
TIME = re.compile(r"^Test time =\s*([0-9.]+) sec")
RESULT = re.compile(r"^Test (Passed|Failed|Skipped|Not Run)\b\.?")
NOT_FOUND = re.compile(r"^Unable to find (?:executable|required file): (.*)$")
# The skip lines of the output
SKIP_LINE = re.compile(r"^SKIP: (.*)$")
CMOCKA_RUN = re.compile(r"^\[ RUN      \] (\S+)")
CMOCKA_SKIPPED = re.compile(r"^\[  SKIPPED \] (\S+)\s*$")
UNITTEST_SKIP = re.compile(r"^(\w+) \(([^)]*)\)(?: \S.*)? \.\.\. skipped '(.*)'\s*$")
UNITTEST_SKIP_MULTI = re.compile(r"^(\w+) \(([^)]*)\)\s*$")  # docstring on the next line
UNITTEST_CASE = re.compile(r"^(test\w*) \([\w.]+\)")
SKIPPED_TAIL = re.compile(r"\.\.\. skipped '(.*)'\s*$")


class Test:
    def __init__(self, name):
        self.name = name
        self.output = []
        self.seconds = None
        self.result = None        # Passed, Failed, Skipped, Not Run (as the log says)
        self.not_found = None     # ctest's "Unable to find executable: ..." before the block
        self.junit = None         # (status, message) from a JUnit file

    def status(self, failed):
        """passed, failed, skipped or not run: JUnit first, then the log and the failed list."""
        if self.junit:
            status, message = self.junit
            if status == "notrun":
                return "skipped" if message.startswith("SKIP_RETURN_CODE") else "not run"
            if status == "fail":
                return "failed"
            if status == "disabled":
                return "not run"
            return "passed"
        if self.not_found is not None or self.result == "Not Run":
            return "not run"
        if self.result == "Skipped":
            return "skipped"
        if self.name in failed or self.result == "Failed":
            return "failed"
        # ctest (3.25) logs "Test Passed." for a test that exited with its SKIP_RETURN_CODE: the
        # convention's "SKIP: <reason>" line that names no case of the test says it was skipped.
        # (It is among the last lines: kt_skip_all and run_tests exit right after printing it.)
        tail = [l for l in self.output if l.strip()][-3:]
        reason = self.whole_skip_reason()
        if reason is not None and "SKIP: " + reason in tail:
            return "skipped"
        return "passed"

    def cases(self):
        """The cases the output names: cmocka's ("[ RUN      ] x", "[  SKIPPED ] x") and the
        unittest methods ("test_x (...) ..."), whose part skips print "SKIP: test_x: reason"."""
        return {m.group(1) for line in self.output
                for m in (CMOCKA_RUN.match(line), CMOCKA_SKIPPED.match(line),
                          UNITTEST_CASE.match(line)) if m}

    def whole_skip_reason(self):
        """The reason of the last "SKIP: <reason>" line that is not a case's, else None."""
        cases, reason = self.cases(), None
        for line in self.output:
            m = SKIP_LINE.match(line)
            if m and m.group(1).split(": ", 1)[0] not in cases:
                reason = m.group(1)
        return reason

    def partial_skips(self):
        """[(case, reason)] of the cases skipped inside the test, in output order."""
        cases, out, seen = self.cases(), [], {}
        lines = self.output
        for i, line in enumerate(lines):
            m = SKIP_LINE.match(line)
            if m:
                case, _, reason = m.group(1).partition(": ")
                if case in cases and reason:
                    seen[case] = len(out)
                    out.append((case, reason))
                continue
            m = CMOCKA_SKIPPED.match(line)
            if m:
                if m.group(1) not in seen:  # skipped without the KT_SKIP line: no reason given
                    seen[m.group(1)] = len(out)
                    out.append((m.group(1), "(no reason printed: use KT_SKIP)"))
                continue
            m = UNITTEST_SKIP.match(line)
            if m:
                out.append(("%s (%s)" % (m.group(1), m.group(2)), m.group(3)))
                continue
            m = UNITTEST_SKIP_MULTI.match(line)
            if m and i + 1 < len(lines):
                t = SKIPPED_TAIL.search(lines[i + 1])
                if t:
                    out.append(("%s (%s)" % (m.group(1), m.group(2)), t.group(1)))
        return out


def parse_log(path):
    """The tests of a LastTest.log, in the order the log has them."""
    tests, cur, in_output, pending_not_found = [], None, False, None
    with open(path, encoding="utf-8", errors="replace") as f:
        for raw in f:
            line = raw.rstrip("\n")
            if in_output:
                if line == "<end of output>":
                    in_output = False
                else:
                    cur.output.append(line)
                continue
            m = START.match(line)
            if m:
                cur = Test(m.group(3))
                cur.not_found, pending_not_found = pending_not_found, None
                tests.append(cur)
                continue
            m = NOT_FOUND.match(line)
            if m:
                pending_not_found = m.group(1)
                continue
            if cur is None:
                continue
            if line == "Output:":
                in_output = None  # the dashes line comes next
                continue
            if in_output is None and line.startswith("-----"):
                in_output = True
                continue
            m = TIME.match(line)
            if m:
                cur.seconds = float(m.group(1))
                continue
            m = RESULT.match(line)
            if m:
                cur.result = m.group(1)
    return tests


def read_failed(path):
    names = set()
    if os.path.exists(path):
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                _, _, name = line.strip().partition(":")
                if name:
                    names.add(name)
    return names


def read_junit(path, tests):
    """Adds the JUnit statuses (and times, where the log has none) to tests; False when path is
    not a readable JUnit file."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return False
    by_name = {t.name: t for t in tests}
    for case in root.iter("testcase"):
        t = by_name.get(case.get("name"))
        if t is None:
            continue
        skipped = case.find("skipped")
        t.junit = (case.get("status") or "run", skipped.get("message", "") if skipped is not None else "")
        if t.seconds is None and case.get("time"):
            t.seconds = float(case.get("time"))
    return True


def load_build(build, junit_name):
    """(tests, failed names, notes) of a build folder; tests None when it has no ctest log.
    make test runs a build's tests in two ctest runs: the side-by-side ones from build/side (its
    own Testing/Temporary), the serial ones from the build folder; the side run's tests come first."""
    tmp = os.path.join(build, "Testing", "Temporary")
    side = os.path.join(build, "side", "Testing", "Temporary")
    if not os.path.isdir(build):
        return None, set(), ["no such build folder"]
    parts = [(d, root) for d, root in ((side, os.path.join(build, "side")), (tmp, build))
             if os.path.exists(os.path.join(d, "LastTest.log"))]
    if not parts:
        return None, set(), ["no ctest log (%s): not tested yet" % os.path.join(tmp, "LastTest.log")]
    tests, failed, notes = [], set(), []
    for d, root in parts:
        part = parse_log(os.path.join(d, "LastTest.log"))
        failed |= read_failed(os.path.join(d, "LastTestsFailed.log"))
        if d == side:
            notes.append("with %s" % os.path.join(d, "LastTest.log"))
        junit = os.path.join(root, junit_name) if junit_name else os.path.join(d, "junit.xml")
        if os.path.exists(junit):
            if read_junit(junit, part):
                notes.append("statuses from %s" % junit)
            else:
                notes.append("%s is not a JUnit file: statuses from the log" % junit)
        tests.extend(part)
    return tests, failed, notes


def fmt_s(x):
    return "-" if x is None else "%.2f" % x


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("builds", nargs="*", default=["build"], help="build folders (default: build)")
    ap.add_argument("--junit", help="a JUnit file of ctest --output-junit, relative to each build")
    ap.add_argument("--top", type=int, default=0, help="only the N slowest tests in the timing table")
    args = ap.parse_args(argv)

    loaded = []
    print("== Skips ==")
    for build in args.builds:
        tests, failed, notes = load_build(build, args.junit)
        print("\n%s:%s" % (build, "".join(" (%s)" % n for n in notes)))
        if tests is None:
            continue
        loaded.append((build, tests, failed))
        counts = {}
        lines = []
        for t in tests:
            st = t.status(failed)
            counts[st] = counts.get(st, 0) + 1
            if st == "skipped":
                lines.append("  SKIPPED  %s: %s" % (t.name, t.whole_skip_reason() or "(no SKIP: line printed)"))
                for case, reason in t.partial_skips():  # the cases' own reasons, when it names them
                    lines.append("           %s / %s: %s" % (t.name, case, reason))
            elif st == "not run":
                lines.append("  NOT RUN  %s: %s" % (t.name, "executable not found: " + t.not_found
                                                    if t.not_found else "(ctest did not run it)"))
            if st in ("passed", "failed"):
                for case, reason in t.partial_skips():
                    lines.append("  partial  %s / %s: %s" % (t.name, case, reason))
        print("  %d tests: %s" % (len(tests), ", ".join("%d %s" % (n, s) for s, n in sorted(counts.items()))))
        print("\n".join(lines) if lines else "  nothing skipped")

    print("\n== Wall time per test (s), slowest first ==")
    if not loaded:
        print("no build folder with a ctest log")
        return 0
    names = []
    for _, tests, _ in loaded:
        for t in tests:
            if t.name not in names:
                names.append(t.name)
    times = {b: {t.name: t.seconds for t in tests} for b, tests, _ in loaded}
    key = lambda n: -max((times[b].get(n) or 0.0) for b, _, _ in loaded)
    rows = sorted(names, key=key)
    if args.top > 0:
        rows = rows[:args.top]
    width = max([len("test"), len("total")] + [len(n) for n in rows])
    cols = [b for b, _, _ in loaded]
    cw = [max(10, len(b)) for b in cols]
    print("%-*s  %s" % (width, "test", "  ".join("%*s" % (w, b) for w, b in zip(cw, cols))))
    for n in rows:
        print("%-*s  %s" % (width, n, "  ".join("%*s" % (w, fmt_s(times[b].get(n))) for w, b in zip(cw, cols))))
    totals = [sum(x for x in times[b].values() if x is not None) for b in cols]
    print("%-*s  %s" % (width, "total", "  ".join("%*s" % (w, fmt_s(x)) for w, x in zip(cw, totals))))
    print("(%s; the sum of the tests' own times, not the run's wall time when ctest ran them in parallel)"
          % ", ".join("%s: %d tests" % (b, len(tests)) for b, tests, _ in loaded))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        sys.exit(0)
