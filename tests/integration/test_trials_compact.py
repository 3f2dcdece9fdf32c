"""Integration: GET /v1/jobs/{id}/trials?format=compact (the dashboard's trials format) against a real
ktuned: the same trials as the default format, row by row; paging with after/next_after; limits; errors."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ktuned_fixture import Ktuned, parse_args, run_tests  # noqa: E402

ARGS = parse_args()
FIELDS = ["seq", "done_seq", "config_id", "status", "time_ms", "compile_ms", "measure_ms", "finished_at", "config",
          "metrics", "final_round", "gflops"]


class TrialsCompactTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.k = Ktuned(ARGS.ktuned, ARGS.source_dir, extra=["--workers", "2"])
        cls.k.start()
        # pnpoly records failures (compile and runtime), so failed rows are part of the comparison.
        status, _, job = cls.k.post("/v1/tune", {"kernel": "pnpoly", "device": "replay:pnpoly_kt-RTX_3090",
                                                 "strategy": "random", "budget": {"evaluations": 400}, "seed": 11})
        assert status == 202, job
        cls.job = cls.k.wait_job(job["id"])
        assert cls.job["status"] == "succeeded", cls.job

    @classmethod
    def tearDownClass(cls):
        rc = cls.k.stop()
        cls.k.cleanup()
        assert rc == 0, "ktuned exited with %s on SIGTERM" % rc

    def compact(self, after=0, limit=None, job_id=None):
        q = "/v1/jobs/%d/trials?format=compact&after=%d" % (job_id or self.job["id"], after)
        if limit is not None:
            q += "&limit=%d" % limit
        return self.k.get(q)

    def test_same_trials_as_the_default_format(self):
        status, headers, page = self.compact(limit=100000)
        self.assertEqual(status, 200, page)
        self.assertTrue(headers["content-type"].startswith("application/json"))
        self.assertEqual(page["format"], "compact")
        self.assertEqual(page["fields"], FIELDS)
        self.assertEqual(page["job_id"], self.job["id"])
        self.assertEqual(page["job_status"], "succeeded")
        objects = self.k.all_trials(self.job["id"])
        self.assertEqual(len(page["rows"]), 400)
        self.assertEqual(len(objects), 400)
        for row, obj in zip(page["rows"], objects):
            r = dict(zip(FIELDS, row))
            for key in ("seq", "done_seq", "config_id", "status", "config"):
                self.assertEqual(r[key], obj[key], (r, obj))
            for key in ("time_ms", "compile_ms", "measure_ms"):
                if obj[key] is None:
                    self.assertIsNone(r[key])
                else:
                    self.assertAlmostEqual(r[key], obj[key], places=9)
            self.assertIsInstance(r["finished_at"], (int, float))
            self.assertEqual(r["metrics"], (obj.get("extras") or {}).get("metrics"))
            self.assertEqual(r["final_round"], obj["final_round"])
            self.assertEqual(r["gflops"], (obj.get("extras") or {}).get("gflops"))
        self.assertEqual(page["next_after"], objects[-1]["done_seq"])
        self.assertTrue(any(r[3] != "ok" and r[4] is None for r in page["rows"]), "failed rows have time_ms null")

    def test_paging_with_after(self):
        rows, after = [], 0
        while True:
            status, _, page = self.compact(after=after, limit=37)
            self.assertEqual(status, 200, page)
            if not page["rows"]:
                self.assertEqual(page["next_after"], after)
                break
            self.assertLessEqual(len(page["rows"]), 37)
            rows += page["rows"]
            after = page["next_after"]
        done = [r[1] for r in rows]
        self.assertEqual(done, sorted(done))
        self.assertEqual(len(set(done)), 400)

    def test_limits_and_errors(self):
        status, _, page = self.k.get("/v1/jobs/%d/trials?limit=100000" % self.job["id"])
        self.assertEqual((status, page["error"]["code"]), (400, "out_of_range"))
        status, _, page = self.compact(limit=100001)
        self.assertEqual((status, page["error"]["code"]), (400, "out_of_range"))
        status, _, page = self.k.get("/v1/jobs/%d/trials?format=csv" % self.job["id"])
        self.assertEqual((status, page["error"]["code"]), (400, "out_of_range"))
        self.assertIn("compact", page["error"]["hint"])
        status, _, page = self.k.get("/v1/jobs/%d/trials?format=objects&limit=3" % self.job["id"])
        self.assertEqual((status, len(page["trials"])), (200, 3))
        status, _, page = self.compact(job_id=999999)
        self.assertEqual((status, page["error"]["code"]), (404, "not_found"))
        status, _, page = self.compact(after=10**12)
        self.assertEqual((status, page["rows"], page["next_after"]), (200, [], 10**12))


if __name__ == "__main__":
    run_tests()
