#!/usr/bin/env python3
"""tools/test_summary.py on fake ctest logs: the skip list holds every whole-test skip with its
"SKIP: <reason>" line, every test ctest did not run, and every partial skip (KT_SKIP's "SKIP:
<case>: <reason>" folded with cmocka's "[  SKIPPED ] <case>", a bare cmocka skip flagged as having
no reason, Python unittest's "... skipped 'reason'" on one line or after a docstring line), and
nothing for a test that only says "skipped" in its output; the timing table has each test's time
per build, slowest first, and the totals; a JUnit file's statuses win over the log's; a missing
build folder or one never tested is said so; a build's two ctest runs of make test (build/side/
Testing/Temporary beside the build's own) read as one; the exit status is 0 even when tests failed. Run by
ctest as tools_test_summary."""
import os
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(REPO, "tools", "test_summary.py")


def block(i, n, name, output, seconds, result="Passed", not_found=None):
    head = "Unable to find executable: %s\n" % not_found if not_found else ""
    return (
        "%s%d/%d Testing: %s\n%d/%d Test: %s\nCommand: \"/b/%s\"\nDirectory: /b\n"
        "\"%s\" start time: Nov 28 22:42 UTC\nOutput:\n"
        "----------------------------------------------------------\n%s<end of output>\n"
        "Test time =   %s sec\n----------------------------------------------------------\n"
        "Test %s.\n\"%s\" end time: Nov 28 22:42 UTC\n\"%s\" time elapsed: 00:00:03\n"
        "----------------------------------------------------------\n\n"
        % (head, i, n, name, i, n, name, name, name, "".join(l + "\n" for l in output), seconds,
           result, name, name))


FAST = [
    # a whole unit test skipped (kt_skip_all: exit 77; ctest 3.25 logs it as "Test Passed.")
    block(1, 6, "test_runner_cuda", ["SKIP: no CUDA driver (libcuda.so.1 not found)"], "0.02"),
    # partial skips in cmocka: KT_SKIP's line, then cmocka's; and a bare skip() with no reason
    block(2, 6, "test_http_units", [
        "[==========] Running 3 test(s).",
        "[ RUN      ] parses_targets", "[       OK ] parses_targets",
        "[ RUN      ] ipv6_loopback_serves",
        "SKIP: ipv6_loopback_serves: no IPv6 loopback on this machine: [::1]:0 does not listen",
        "[  SKIPPED ] ipv6_loopback_serves",
        "[ RUN      ] bare_case", "[  SKIPPED ] bare_case",
        "[==========] 3 test(s) run.", "[  PASSED  ] 1 test(s).", "[  SKIPPED ] 2 test(s), listed below:",
        "[  SKIPPED ] ipv6_loopback_serves", "[  SKIPPED ] bare_case"], "12.5"),
    # partial skips in unittest (verbosity 2), one after a docstring line
    block(3, 6, "integration_test_security_pg", [
        "test_a_roles (__main__.SecurityPgTest.test_a_roles) ... ok",
        "test_b_root (__main__.SecurityPgTest.test_b_root) ... skipped 'needs root for runuser'",
        "test_c_cert (__main__.SecurityPgTest.test_c_cert)",
        "The server's certificate. ... skipped 'no openssl binary on PATH'",
        "test_d_outage (__main__.SecurityPgTest.test_d_outage) ... ",
        "SKIP: test_d_outage: /v1/best during the outage not checked: no lookup cache",
        "ok",
        "Ran 3 tests in 4.0s", "OK (skipped=2)"], "61.25"),
    # a failure, and a test that only mentions skipping: neither is a skip
    block(4, 6, "test_bench_mcache", ["a bad line in the middle is skipped", "[  FAILED  ] 1 test(s)"],
          "0.75", result="Failed"),
    # ctest could not run it
    block(5, 6, "test_gone", [], "0.00", not_found="/b/test_gone"),
    # every case of a Python file skipped: run_tests exits 77
    block(6, 6, "integration_test_multihost", [
        "setUpClass (__main__.MultiHostTest) ... skipped 'needs root for ip netns and runuser'",
        "SKIP: every case of test_multihost.py was skipped"], "0.5"),
]
ASAN = [
    block(1, 2, "test_http_units", ["[ RUN      ] parses_targets", "[       OK ] parses_targets"], "40.0"),
    block(2, 2, "test_runner_cuda", ["SKIP: no CUDA driver (libcuda.so.1 not found)"], "0.1"),
]
JUNIT = """<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="x" tests="2" failures="0" disabled="0" skipped="1" time="1">
  <testcase name="test_http_units" classname="test_http_units" time="40.0" status="run"/>
  <testcase name="test_runner_cuda" classname="test_runner_cuda" time="0.1" status="notrun">
    <skipped message="SKIP_RETURN_CODE=77"/>
  </testcase>
</testsuite>
"""


def write_build(root, name, blocks, failed=(), junit=None):
    tmp = os.path.join(root, name, "Testing", "Temporary")
    os.makedirs(tmp)
    with open(os.path.join(tmp, "LastTest.log"), "w") as f:
        f.write("Start testing: Nov 28 22:42 UTC\n" + "-" * 58 + "\n" + "".join(blocks)
                + "End testing: Nov 28 22:43 UTC\n")
    with open(os.path.join(tmp, "LastTestsFailed.log"), "w") as f:
        f.write("".join("%d:%s\n" % (i, n) for i, n in failed))
    if junit:
        with open(os.path.join(tmp, "junit.xml"), "w") as f:
            f.write(junit)
    return os.path.join(root, name)


class TestSummaryTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="kt-test-summary-")
        fast = write_build(cls.root, "build", FAST, failed=[(4, "test_bench_mcache"), (5, "test_gone")])
        asan = write_build(cls.root, "build-asan", ASAN, junit=JUNIT)
        os.makedirs(os.path.join(cls.root, "build-fresh"))  # configured, never tested
        cls.p = subprocess.run([sys.executable, TOOL, fast, asan, os.path.join(cls.root, "nope"),
                                os.path.join(cls.root, "build-fresh")],
                               capture_output=True, text=True, timeout=60)
        cls.out = cls.p.stdout
        print(cls.out)
        skips, _, cls.timing = cls.out.partition("== Wall time per test (s), slowest first ==")
        sections = skips.split("\n\n")
        cls.fast = next(s for s in sections if s.startswith(fast + ":"))
        cls.asan = next(s for s in sections if s.startswith(asan + ":"))

    @classmethod
    def tearDownClass(cls):
        subprocess.run(["rm", "-rf", cls.root], check=False)  # our own mkdtemp folder

    def test_exit_status_is_zero_with_failures(self):
        self.assertEqual(self.p.returncode, 0, self.p.stderr)
        self.assertEqual(self.p.stderr, "")

    def test_whole_test_skips_and_not_run(self):
        self.assertIn("6 tests: 1 failed, 1 not run, 2 passed, 2 skipped", self.fast)
        self.assertIn("SKIPPED  test_runner_cuda: no CUDA driver (libcuda.so.1 not found)", self.fast)
        self.assertIn("SKIPPED  integration_test_multihost: every case of test_multihost.py was skipped",
                      self.fast)
        self.assertIn("NOT RUN  test_gone: executable not found: /b/test_gone", self.fast)
        # a whole skip lists its cases' reasons under it
        self.assertIn("SKIPPED  integration_test_multihost: every case of test_multihost.py was skipped\n"
                      "           integration_test_multihost / setUpClass (__main__.MultiHostTest): needs root"
                      " for ip netns and runuser", self.fast)

    def test_partial_skips(self):
        self.assertIn("partial  test_http_units / ipv6_loopback_serves: no IPv6 loopback on this machine:"
                      " [::1]:0 does not listen", self.fast)
        self.assertEqual(self.fast.count("ipv6_loopback_serves"), 1, "cmocka's lines folded into KT_SKIP's")
        self.assertIn("partial  test_http_units / bare_case: (no reason printed: use KT_SKIP)", self.fast)
        self.assertIn("partial  integration_test_security_pg / test_b_root (__main__.SecurityPgTest.test_b_root):"
                      " needs root for runuser", self.fast)
        self.assertIn("partial  integration_test_security_pg / test_c_cert (__main__.SecurityPgTest.test_c_cert):"
                      " no openssl binary on PATH", self.fast)
        self.assertIn("partial  integration_test_security_pg / test_d_outage: /v1/best during the outage"
                      " not checked: no lookup cache", self.fast)
        self.assertNotIn("test_bench_mcache", self.fast.split("\n", 2)[2])  # "skipped" in prose only
        self.assertNotIn("parses_targets", self.fast)

    def test_junit_statuses_win(self):
        self.assertIn("(statuses from ", self.asan)
        self.assertIn("2 tests: 1 passed, 1 skipped", self.asan)
        self.assertIn("SKIPPED  test_runner_cuda: no CUDA driver", self.asan)

    def test_missing_and_untested_builds_are_said(self):
        self.assertIn(os.path.join(self.root, "nope") + ": (no such build folder)", self.out)
        self.assertIn(os.path.join(self.root, "build-fresh") + ": (no ctest log (", self.out)
        self.assertIn("not tested yet", self.out)

    def test_timing_table(self):
        rows = [l.split() for l in self.timing.strip().splitlines()]
        header, body = rows[0], rows[1:]
        self.assertEqual(header[1:], [os.path.join(self.root, "build"), os.path.join(self.root, "build-asan")])
        table = {r[0]: r[1:] for r in body if len(r) == 3}
        self.assertEqual(table["test_http_units"], ["12.50", "40.00"])
        self.assertEqual(table["integration_test_security_pg"], ["61.25", "-"])
        self.assertEqual(table["test_runner_cuda"], ["0.02", "0.10"])
        self.assertEqual(table["test_gone"], ["0.00", "-"])
        self.assertEqual(table["total"], ["%.2f" % (0.02 + 12.5 + 61.25 + 0.75 + 0 + 0.5), "40.10"])
        order = [r[0] for r in body if len(r) == 3 and r[0] != "total"]
        self.assertEqual(order[:3], ["integration_test_security_pg", "test_http_units", "test_bench_mcache"])
        self.assertEqual(len(order), 6)

    def test_two_part_run_reads_both_parts(self):
        """make test's two ctest runs of a build: the side-by-side run's records in build/side/
        Testing/Temporary, the serial run's in the build's own; one column, both runs' tests, each
        run's statuses."""
        build = write_build(self.root, "build-split", [
            block(1, 1, "test_http_edges", ["[ RUN      ] edge", "[       OK ] edge"], "9.5")])
        side = write_build(os.path.join(self.root, "build-split"), "side", [
            block(1, 3, "test_catalog", [], "20.0", result="Failed"),
            block(2, 3, "test_runner_cuda", ["SKIP: no CUDA driver (libcuda.so.1 not found)"], "0.1"),
            block(3, 3, "test_search_bo", [], "7.0")], failed=[(1, "test_catalog")],
            junit=JUNIT.replace("test_http_units", "test_search_bo").replace("40.0", "7.0"))
        tmp = os.path.join(side, "Testing", "Temporary")
        p = subprocess.run([sys.executable, TOOL, build], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("with %s" % os.path.join(tmp, "LastTest.log"), p.stdout)
        self.assertIn("statuses from %s" % os.path.join(tmp, "junit.xml"), p.stdout)
        self.assertIn("4 tests: 1 failed, 2 passed, 1 skipped", p.stdout)
        self.assertIn("SKIPPED  test_runner_cuda: no CUDA driver", p.stdout)
        table = {r.split()[0]: r.split()[1:] for r in p.stdout.partition("slowest first ==")[2].splitlines()
                 if len(r.split()) == 2}
        self.assertEqual(table["test_catalog"], ["20.00"])
        self.assertEqual(table["test_http_edges"], ["9.50"])
        self.assertEqual(table["total"], ["36.60"])

if __name__ == "__main__":
    unittest.main(verbosity=2)
