"""Issue #11, break 4 and the Security section: tokens with scopes, the listen rule, the job cap,
imports that cannot poison /v1/best, and JSON bodies that need their Content-Type.

Before: POST /v1/imports took time_ms 1e-300 for a real device and /v1/best served it as
"source":"measured" for good; with no token a body without Content-Type and a foreign Origin was
accepted (a web page could post cross-site); one token for everything; no cap on queued jobs."""
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from ktuned_fixture import Ktuned, best_query, parse_args, run_tests  # noqa: E402

ARGS = parse_args()
ADMIN = "security-test-admin-token"
PNPOLY = {"kernel": "pnpoly", "device": "replay:pnpoly_kt-RTX_3090"}


def bearer(token):
    return {"Authorization": "Bearer " + token}


class OpenService(unittest.TestCase):
    """No token anywhere: loopback only, and writes from other sites refused."""

    @classmethod
    def setUpClass(cls):
        cls.k = Ktuned(ARGS.ktuned, ARGS.source_dir, product_db=True, extra=["--workers", "1"]).start()

    @classmethod
    def tearDownClass(cls):
        cls.k.cleanup()

    def test_healthz_says_no_token(self):
        status, _, body = self.k.get("/healthz")
        self.assertEqual((status, body["auth"]), (200, "none"), body)
        with open(self.k.log_path) as f:
            self.assertIn("no API token configured: serving on the loopback address", f.read())

    def test_json_body_needs_its_content_type(self):
        body = b'{"kernel": "pnpoly", "device": "replay:pnpoly_kt-RTX_3090", "trials": []}'
        for headers in ({}, {"Content-Type": "text/plain"}, {"Content-Type": "application/x-www-form-urlencoded"}):
            for path in ("/v1/tune", "/v1/imports", "/v1/models"):
                status, _, reply = self.k.request("POST", path, raw=body, headers=headers)
                self.assertEqual(status, 415, (path, headers, reply))
                self.assertEqual(reply["error"]["code"], "unsupported_media_type")

    def test_write_from_another_site_is_refused(self):
        req = dict(PNPOLY, strategy="random", budget={"evaluations": 1})
        host = self.k.address
        for headers in ({"Origin": "http://evil.example"}, {"Origin": "null"},
                        {"Origin": "http://" + host, "Sec-Fetch-Site": "cross-site"}):
            status, _, reply = self.k.post("/v1/tune", req, headers=headers)
            self.assertEqual(status, 403, (headers, reply))
            self.assertEqual(reply["error"]["code"], "forbidden")
        # The dashboard itself (same origin) and clients that send no Origin (curl, ktune) work.
        status, _, job = self.k.post("/v1/tune", req, headers={"Origin": "http://" + host,
                                                              "Sec-Fetch-Site": "same-origin"})
        self.assertEqual(status, 202, job)
        status, _, job = self.k.post("/v1/tune", req)
        self.assertEqual(status, 202, job)
        # Reads stay open to every local caller.
        status, _, _ = self.k.get("/v1/jobs", headers={"Origin": "http://evil.example"})
        self.assertEqual(status, 200)

    def test_non_loopback_listen_needs_a_token(self):
        # On the running service's database (an own embedded cluster would take seconds to make).
        args = [ARGS.ktuned, "--listen", "0.0.0.0:0", "--database-url", self.k.pg_conninfo(),
                "--datasets", os.path.join(ARGS.source_dir, "datasets"), "--kernels", ""]
        out = subprocess.run(args, capture_output=True, text=True, timeout=120)
        self.assertNotEqual(out.returncode, 0, out.stdout)
        self.assertIn("not a loopback address, and no API token exists", out.stderr)
        self.assertIn("--allow-insecure-listen", out.stderr)
        # Asked for explicitly, it is served open, and says so.
        k = Ktuned(ARGS.ktuned, ARGS.source_dir, product_db=True, extra=["--listen", "0.0.0.0:0", "--database-url",
                                                         self.k.pg_conninfo(), "--allow-insecure-listen"])
        try:
            k.start()
            status, _, health = k.get("/healthz")
            self.assertEqual((status, health["auth"]), (200, "none"))
            with open(k.log_path) as f:
                self.assertIn("served without authentication to anyone", f.read())
            self.assertEqual(k.stop(), 0)
        finally:
            k.cleanup()


class TokenService(unittest.TestCase):
    """--api-token (admin) at start-up, tokens made through the API, scopes, the job cap, imports."""

    @classmethod
    def setUpClass(cls):
        cls.k = Ktuned(ARGS.ktuned, ARGS.source_dir, product_db=True,
                       extra=["--workers", "1", "--max-jobs", "1", "--api-token", ADMIN,
                              "--max-queued-jobs-per-token", "2", "--replay-speed", "0"]).start()
        cls.tokens = {}
        for scope in ("read", "tune"):
            status, _, t = cls.k.post("/v1/tokens", {"name": scope + " user", "scope": scope},
                                      headers=bearer(ADMIN))
            assert status == 201, t
            cls.tokens[scope] = t["token"]

    @classmethod
    def tearDownClass(cls):
        cls.k.cleanup()

    def test_a_reads_need_a_token_once_one_exists(self):
        status, _, reply = self.k.get("/v1/jobs", headers={})
        self.assertEqual((status, reply["error"]["code"]), (401, "unauthorized"), reply)
        for token in (self.tokens["read"], self.tokens["tune"], ADMIN):
            status, _, reply = self.k.get("/v1/kernels", headers=bearer(token))
            self.assertEqual(status, 200, reply)
        status, _, reply = self.k.get("/v1/kernels", headers=bearer("ktk_" + "0" * 48))
        self.assertEqual(status, 401, reply)
        # Open: probes, the API description, the dashboard's files.
        status, _, health = self.k.get("/healthz", headers={})
        self.assertEqual((status, health["auth"]), (200, "token"))
        self.assertEqual(self.k.get("/v1/openapi.json", headers={})[0], 200)
        self.assertEqual(self.k.get("/", headers={})[0], 200)

    def test_b_scopes_nest(self):
        req = dict(PNPOLY, strategy="random", budget={"evaluations": 1})
        status, _, reply = self.k.post("/v1/tune", req, headers=bearer(self.tokens["read"]))
        self.assertEqual((status, reply["error"]["code"]), (403, "forbidden"), reply)
        self.assertIn("needs tune", reply["error"]["message"])
        status, _, reply = self.k.post("/v1/models", {"kernel": "pnpoly", "device": PNPOLY["device"]},
                                       headers=bearer(self.tokens["tune"]))
        self.assertEqual(status, 403, reply)
        for token in (self.tokens["read"], self.tokens["tune"]):
            status, _, reply = self.k.get("/v1/tokens", headers=bearer(token))
            self.assertEqual(status, 403, reply)
            status, _, reply = self.k.post("/v1/tokens", {"name": "x", "scope": "admin"}, headers=bearer(token))
            self.assertEqual(status, 403, reply)
        status, _, job = self.k.post("/v1/tune", req, headers=bearer(self.tokens["tune"]))
        self.assertEqual(status, 202, job)
        self.k.wait_job(job["id"])

    def test_c_token_admin_api(self):
        status, _, made = self.k.post("/v1/tokens", {"name": "ci bot", "scope": "read"}, headers=bearer(ADMIN))
        self.assertEqual(status, 201, made)
        self.assertRegex(made["token"], r"^ktk_[0-9a-f]{48}$")
        status, _, listing = self.k.get("/v1/tokens", headers=bearer(ADMIN))
        self.assertEqual(status, 200, listing)
        mine = [t for t in listing["tokens"] if t["id"] == made["id"]]
        self.assertEqual(mine, [{k: made[k] for k in ("id", "name", "scope", "created_at")}])
        self.assertNotIn(made["token"], str(listing))
        # Stored hashed: the secret is nowhere in the database.
        self.assertEqual(self.k.psql("SELECT count(*) FROM api_tokens WHERE secret_hash::text LIKE '%%%s%%'"
                                     % made["token"][4:]), "0")
        self.assertEqual(self.k.get("/v1/jobs", headers=bearer(made["token"]))[0], 200)
        status, _, reply = self.k.request("DELETE", "/v1/tokens/%d" % made["id"], headers=bearer(ADMIN))
        self.assertEqual(status, 200, reply)
        self.assertEqual(self.k.get("/v1/jobs", headers=bearer(made["token"]))[0], 401)
        status, _, reply = self.k.request("DELETE", "/v1/tokens/%d" % made["id"], headers=bearer(ADMIN))
        self.assertEqual(status, 404, reply)
        for bad in ({"name": "x", "scope": "root"}, {"name": "", "scope": "read"},
                    {"name": "x" * 65, "scope": "read"}, {"name": "a;b", "scope": "read"},
                    {"name": "x", "scope": "read", "secret": "mine"}):
            status, _, reply = self.k.post("/v1/tokens", bad, headers=bearer(ADMIN))
            self.assertEqual(status, 400, (bad, reply))

    def test_d_queued_jobs_are_capped_per_token(self):
        req = dict(PNPOLY, strategy="random", budget={"evaluations": 4000}, seed=1)
        tune = bearer(self.tokens["tune"])
        ids = []
        for _ in range(2):
            status, _, job = self.k.post("/v1/tune", req, headers=tune)
            self.assertEqual(status, 202, job)
            ids.append(job["id"])
        status, headers, reply = self.k.post("/v1/tune", req, headers=tune)
        self.assertEqual((status, reply["error"]["code"]), (429, "too_many_requests"), reply)
        self.assertTrue(headers.get("retry-after", "").isdigit(), headers)
        # Another caller has its own count.
        status, _, job = self.k.post("/v1/tune", req, headers=bearer(ADMIN))
        self.assertEqual(status, 202, job)
        ids.append(job["id"])
        for jid in ids:
            self.k.request("DELETE", "/v1/jobs/%d" % jid, headers=bearer(ADMIN))
        for jid in ids:
            self.k.wait_job(jid)
        status, _, job = self.k.post("/v1/tune", dict(req, budget={"evaluations": 1}), headers=tune)
        self.assertEqual(status, 202, job)
        self.k.wait_job(job["id"])

    def test_e_imported_results_never_poison_best(self):
        tune, admin = bearer(self.tokens["tune"]), bearer(ADMIN)
        status, _, job = self.k.post("/v1/tune", dict(PNPOLY, strategy="random", budget={"evaluations": 8},
                                                      seed=5), headers=tune)
        self.assertEqual(status, 202, job)
        measured = self.k.wait_job(job["id"])
        self.assertEqual(measured["status"], "succeeded", measured)
        configs = [t["config"] for t in self.k.all_trials(measured["id"])]

        def imp(time_ms, config, headers=tune, **extra):
            body = dict(PNPOLY, trials=[{"config": config, "status": "ok", "time_ms": time_ms}], **extra)
            return self.k.post("/v1/imports", body, headers=headers)

        def best(until=None):
            # The lookup cache learns of a change by a notification, a moment after the write:
            # a check that expects a change polls until it shows (5 s at most).
            deadline = time.monotonic() + 5
            while True:
                status, _, b = self.k.get(best_query(PNPOLY["kernel"], PNPOLY["device"]))
                self.assertEqual(status, 200, b)
                if until is None or until(b) or time.monotonic() > deadline:
                    return b
                time.sleep(0.05)

        # Bounds: no time below a nanosecond, no subnormal, nothing absurdly large.
        for bad in (1e-300, 5e-324, 1e-7, 0, -1, 1e11):
            status, _, reply = imp(bad, configs[0])
            self.assertEqual((status, reply["error"]["code"]), (400, "out_of_range"), (bad, reply))
        self.assertEqual(best()["source"], "measured")
        # A faster import does not replace this service's measurement...
        status, _, i1 = imp(0.001, configs[1])
        self.assertEqual(status, 201, i1)
        b = best()
        self.assertEqual(b["source"], "measured", b)
        self.assertLessEqual(b["time_ms"], measured["best"]["time_ms"])
        # ...unless an admin asks for it.
        status, _, reply = imp(0.0005, configs[2], replace_measured=True)
        self.assertEqual(status, 403, reply)
        # Counting as a measurement is an admin's word too (issue 26), and an import job that is not
        # trusted never replaces one, even when an admin adds to it.
        status, _, reply = imp(0.0005, configs[2], trusted=True)
        self.assertEqual(status, 403, reply)
        status, _, reply = self.k.post("/v1/imports", {"job": i1["job"]["id"], "replace_measured": True, "trials": [
            {"config": configs[2], "status": "ok", "time_ms": 0.0005}]}, headers=admin)
        self.assertEqual((status, reply["error"]["code"]), (409, "conflict"), reply)
        self.assertIn("not trusted", reply["error"]["message"])
        status, _, i2 = imp(0.0005, configs[2], headers=admin, replace_measured=True)
        self.assertEqual(status, 201, i2)
        b = best(lambda b: b["source"] == "imported")
        self.assertEqual((b["source"], b["job_id"], b["time_ms"]), ("imported", i2["job"]["id"], 0.0005), b)
        # Removing an import (admin) removes its trials and best entry and puts the next best back:
        # a measured one before any imported one.
        path = "/v1/imports/%d" % i2["job"]["id"]
        self.assertEqual(self.k.request("DELETE", path, headers=tune)[0], 403)
        status, _, gone = self.k.request("DELETE", path, headers=admin)
        self.assertEqual(status, 200, gone)
        self.assertEqual((gone["trials"], gone["best_removed"], gone["best_restored"]), (1, 1, 1), gone)
        b = best(lambda b: b["source"] == "measured")
        self.assertEqual(b["source"], "measured", b)
        self.assertLessEqual(b["time_ms"], measured["best"]["time_ms"])  # earlier tests tuned it too
        self.assertNotEqual(b["job_id"], i2["job"]["id"])
        self.assertEqual(self.k.get("/v1/jobs/%d" % i2["job"]["id"])[0], 404)
        status, _, reply = self.k.request("DELETE", "/v1/imports/%d" % measured["id"], headers=admin)
        self.assertEqual((status, reply["error"]["code"]), (409, "conflict"), reply)
        self.assertEqual(self.k.request("DELETE", "/v1/imports/999999", headers=admin)[0], 404)
        # A measurement always replaces an imported entry, even a faster one.
        self.assertEqual(self.k.request("DELETE", "/v1/imports/%d" % i1["job"]["id"], headers=admin)[0], 200)
        self.k.psql("DELETE FROM best WHERE kernel = 'pnpoly'")
        status, _, i3 = imp(0.001, configs[3])
        self.assertEqual((status, best(lambda b: b["source"] == "imported")["source"]), (201, "imported"))
        # An answer says where it came from; an imported one is never a measurement (issue 26).
        self.assertEqual(best()["origin"], "imported")
        status, _, miss = self.k.get(best_query(PNPOLY["kernel"], PNPOLY["device"], source="measured"))
        self.assertEqual((status, miss["error"]["code"]), (404, "no_best"), miss)
        status, _, job = self.k.post("/v1/tune", dict(PNPOLY, strategy="random", budget={"evaluations": 5},
                                                      seed=9), headers=tune)
        self.assertEqual(status, 202, job)
        job = self.k.wait_job(job["id"])
        self.assertGreater(job["best"]["time_ms"], 0.001, job)  # slower than the import, still wins
        b = best(lambda b: b["job_id"] == job["id"])
        self.assertEqual((b["source"], b["job_id"]), ("measured", job["id"]), b)
        # An import at the lower bound is accepted.
        status, _, reply = imp(1e-6, configs[4])
        self.assertEqual(status, 201, reply)


if __name__ == "__main__":
    run_tests()
