"""ktune.Table: the deploy table's format (written, parsed, refused) and its lookups — exact, nearest
by the server's distance, the newest version first, a kernel hash asked for."""
import math
import os
import tempfile
import unittest

from ktune.table import COLUMNS, FORMAT_LINE, Table, TableError, format_row, problem_distance, write_table


def entry(problem, config, time_ms, kernel="gemm", klass="cpu:X:256", khash="new1", origin="measured"):
    return {"kernel": kernel, "device_class": klass, "kernel_hash": khash, "toolchain": "gcc 12.2.0",
            "origin": origin, "time_ms": time_ms, "problem": problem, "config": config,
            "measured_at": "2026-11-22T04:21:10+00:00", "job_id": 1}


ENTRIES = [  # newest first, as GET /v1/best/entries
    entry({"M": 64, "N": 64, "K": 64}, {"MR": 6, "LOOP": True, "name": "caf\u00e9\t"}, 0.5),
    entry({"M": 256, "N": 256, "K": 256}, {"MR": 8}, 4.25),
    entry({"M": 128, "N": 128, "K": 128}, {"MR": 4}, 9.0, khash="old0"),
    entry({"problem_size": [1024, 4096]}, {"bx": 32}, 2.5, kernel="conv", klass="replay:A"),
    entry({"kind": "fast", "n": 10}, {"V": 1}, 1.0, kernel="mode", klass="c"),
]


class TableTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ktune-table-")
        self.path = os.path.join(self.dir, "best.tsv")
        self.assertEqual(write_table(self.path, ENTRIES), 5)
        self.table = Table.load(self.path)

    def tearDown(self):
        for name in os.listdir(self.dir):
            os.unlink(os.path.join(self.dir, name))
        os.rmdir(self.dir)

    def test_file_format(self):
        with open(self.path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        self.assertEqual(lines[0], FORMAT_LINE)
        self.assertEqual(lines[1].split("\t"), list(COLUMNS))
        first = lines[2].split("\t")
        self.assertEqual(len(first), len(COLUMNS))
        self.assertEqual(first[6], '{"K":64,"M":64,"N":64}')  # sorted, compact
        self.assertEqual(first[7], '{"LOOP":true,"MR":6,"name":"caf\\u00e9\\t"}')  # escaped: no raw tab
        self.assertEqual(len(self.table), 5)
        self.assertEqual(os.listdir(self.dir), ["best.tsv"])  # the temporary file was renamed

    def test_exact(self):
        r = self.table.lookup("gemm", "cpu:X:256", {"N": 64.0, "M": 64, "K": 64})
        self.assertTrue(r.exact)
        self.assertFalse(r.nearest)
        self.assertEqual((r.config, r.time_ms, r.kernel_hash, r.distance),
                         ({"MR": 6, "LOOP": True, "name": "caf\u00e9\t"}, 0.5, "new1", 0.0))

    def test_nearest_newest_version(self):
        r = self.table.lookup("gemm", "cpu:X:256", {"M": 200, "N": 200, "K": 200})
        self.assertFalse(r.exact)
        self.assertEqual(r.problem, {"M": 256, "N": 256, "K": 256})  # old0's 128 is never offered
        d = math.log1p(200) - math.log1p(256)
        self.assertAlmostEqual(r.distance, math.sqrt(3 * d * d), places=12)
        self.assertIn("nearest problem", repr(r))
        r = self.table.lookup("gemm", "cpu:X:256", {"M": 200, "N": 200, "K": 200}, kernel_hash="old0")
        self.assertEqual((r.config, r.exact), ({"MR": 4}, False))

    def test_lists_strings_misses(self):
        r = self.table.lookup("conv", "replay:A", {"problem_size": (1024, 4096)})
        self.assertTrue(r.exact)
        r = self.table.lookup("conv", "replay:A", {"problem_size": [2048, 4096]})
        self.assertAlmostEqual(r.distance, math.log1p(2048) - math.log1p(1024), places=12)
        self.assertIsNone(self.table.lookup("conv", "replay:A", {"problem_size": [4096]}))
        self.assertIsNone(self.table.lookup("gemm", "cpu:X:256", {"M": 64, "N": 64}))
        self.assertIsNone(self.table.lookup("mode", "c", {"kind": "slow", "n": 10}))
        self.assertFalse(self.table.lookup("mode", "c", {"kind": "fast", "n": 12}).exact)
        self.assertIsNone(self.table.lookup("gemm", "cpu:Y:256", {}))
        # Booleans are not numbers: True does not equal 1.
        self.assertIsNone(problem_distance({"a": True}, {"a": 1}))

    def test_distance_matches_server_formula(self):
        # best_nearest.c: sqrt(sum((s(a) - s(b))^2)), s(x) = sign(x) log1p(|x|).
        a, b = {"x": -3, "y": [1, 2]}, {"x": 5, "y": [4, 2]}
        want = math.sqrt((-math.log1p(3) - math.log1p(5)) ** 2 + (math.log1p(1) - math.log1p(4)) ** 2)
        self.assertAlmostEqual(problem_distance(a, b), want, places=12)

    def test_refusals(self):
        head = FORMAT_LINE + "\n" + "\t".join(COLUMNS) + "\n"
        for text, why in (("", "not a ktune table"), ("# ktune-table 2\n", "not a ktune table"),
                          (FORMAT_LINE + "\nkernel\n", "the columns"),
                          (head + "a\tb\n", ":3: 2 fields"),
                          (head + "a\tb\tc\td\te\tslow\t{}\t{}\tx\n", ":3:"),
                          (head + "a\tb\tc\td\te\t1\t{}\t[1]\tx\n", "JSON objects")):
            with self.assertRaises(TableError) as cm:
                Table.parse(text)
            self.assertIn(why, str(cm.exception))
        self.assertEqual(len(Table.parse(head + "# comment\n")), 0)
        with self.assertRaises(TableError):
            format_row(dict(ENTRIES[0], toolchain="gcc\t12"))


if __name__ == "__main__":
    unittest.main()
