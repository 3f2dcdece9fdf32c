"""ktune.client — the service's API for a framework: best configurations, ask/tell tuning with the
caller's own harness, and the deploy-time table.

    c = ktune.Client()                      # KTUNE_SERVER, KTUNE_TOKEN, KTUNE_TIMEOUT as the CLI
    best = c.best("gemm", device_class=ktune.device_class(), problem={"M": 512, "N": 512, "K": 512})
    for trial in c.tune_external("my_kernel", {"BLOCK": [32, 64, 128]}, problem={"n": 1 << 20},
                                 device_class="cuda:NVIDIA_H200:sm_90", budget=20):
        trial.tell(measure(trial.config))   # milliseconds, or trial.tell(status="runtime_error")
    c.export_table("best.tsv")              # then ktune.Table.load("best.tsv").lookup(...)
"""
import json
import time
import urllib.parse

from .errors import KtuneError
from .http import Connection
from .table import write_table

SOURCES = ("measured", "imported", "predicted", "nearest")
# Not a source: "weak" in `accept` takes a weak model's prediction too (GET /v1/best?accept=weak).
ACCEPT_FLAGS = ("weak",)
TRIAL_STATUSES = ("ok", "invalid", "compile_error", "runtime_error", "timeout", "wrong_result")
ENTRIES_PAGE = 1000  # GET /v1/best/entries answers at most 1000 entries a request
VALIDATING_RETRY_S = 5.0  # tune: how long a 409 kernel_validating is retried


def _query_value(v):
    """A problem value as GET /v1/best takes it: lists comma-separated, booleans true/false."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return ",".join(_query_value(x) for x in v)
    if hasattr(v, "tolist"):  # numpy scalars and arrays, without importing numpy
        return _query_value(v.tolist())
    if isinstance(v, float):
        return repr(v)
    return str(v)


def space_body(space, restrictions=None, default=None):
    """POST /v1/tune's inline "space": a dict {"parameters": [...], ...} as it is, or Kernel Tuner's
    tune_params ({name: [values]}) turned into one."""
    if isinstance(space, dict) and "parameters" in space:
        body = dict(space)
    elif isinstance(space, dict):
        body = {"parameters": [{"name": k, "values": list(v)} for k, v in space.items()]}
    else:
        raise TypeError("space must be a dict of parameter values or {'parameters': [...]}")
    if restrictions is not None:
        body["restrictions"] = [restrictions] if isinstance(restrictions, str) else list(restrictions)
    if default is not None:
        body["default"] = dict(default)
    return body


class Best:
    """An answer of GET /v1/best: `config`, `source` (measured, imported, predicted, nearest),
    `time_ms` (None for a prediction), `kernel_hash`, `device_class`, `problem`, and `raw` (the reply).
    A prediction has `confidence` (the model's trained and held-out problems, held-out accuracy,
    distance to the nearest trained problem) and `weak` (True: below the server's minimum, taken
    only with "weak" in `accept`); `measured` is True for a measurement or a trusted import."""

    def __init__(self, reply):
        self.raw = reply
        self.config = reply.get("config")
        self.source = reply.get("source")
        self.origin = reply.get("origin")
        self.time_ms = reply.get("time_ms")
        self.kernel_hash = reply.get("kernel_hash")
        self.kernel_version = reply.get("kernel_version", self.kernel_hash)
        self.device_class = reply.get("device_class")
        self.problem = reply.get("problem")
        self.nearest = reply.get("nearest")
        self.confidence = reply.get("confidence")
        self.weak = bool((self.confidence or {}).get("weak"))
        self.measured = self.source == "measured"

    def __repr__(self):
        return "Best(%s, source=%s, time_ms=%s)" % (json.dumps(self.config, sort_keys=True),
                                                    self.source, self.time_ms)


class Trial:
    """A leased configuration of an ask/tell job. Tell its result once with `tell`."""

    def __init__(self, session, item):
        self._session = session
        self.id = item["id"]
        self.seq = item.get("seq")
        self.config = item["config"]
        self.lease_s = item.get("lease_s")
        self.lease_expires_at = item.get("lease_expires_at")
        self.outcome = None

    def tell(self, time_ms=None, status="ok", metrics=None):
        """Reports the measurement: tell(1.25) or tell(time_ms=1.25), or tell(status="runtime_error").
        Returns the server's outcome: recorded; duplicate (the trial was told already, by this harness
        or by another that took it over after its lease ended: tells are idempotent); lost (the job no
        longer runs: nothing recorded). A tell after the lease ended is still recorded when no one else
        told the trial first."""
        if status not in TRIAL_STATUSES:
            raise ValueError("status must be one of %s, not %r" % (", ".join(TRIAL_STATUSES), status))
        item = {"id": self.id, "status": status}
        if status == "ok":
            if time_ms is None:
                raise ValueError("an ok trial needs time_ms")
            time_ms = float(time_ms)
            if not time_ms > 0 or time_ms != time_ms or time_ms == float("inf"):
                raise ValueError("time_ms must be a positive finite number of milliseconds")
        if time_ms is not None:
            item["time_ms"] = float(time_ms)
        if metrics:
            item["metrics"] = {k: float(v) for k, v in metrics.items()}
        self.outcome = self._session._tell([item])[0]
        return self.outcome

    def __repr__(self):
        return "Trial(%s, %s)" % (self.id, json.dumps(self.config, sort_keys=True))


class ExternalTuning:
    """An ask/tell job: iterate over it for trials; `job_id`; `best` (the job's best once done, a dict
    with config and time_ms, or None); `job()` the job as GET /v1/jobs/{id} shows it.

    While iterating, the tell of the last untold trial of a batch also asks for the next batch (the
    tell's "ask": one request per round instead of two); the loop then yields what that tell brought.
    A loop left after telling a whole batch has leased the next one: its leases run out (lease_s) and
    the job offers those configurations again."""

    def __init__(self, client, job, n, lease_s, wait_s):
        self.client = client
        self.job_id = job["id"]
        self.created = job
        self.n = n
        self.lease_s = lease_s
        self.wait_s = wait_s
        self.done = False
        self.status = job.get("status")
        self._best = None
        self._iterating = False
        self._untold = set()  # ids of the iterator's batch not told yet
        self._next = None  # the trials a tell's "ask" leased, for the iterator

    def ask(self, n=None):
        reply = self.client._conn.call("POST", "/v1/jobs/%d/ask" % self.job_id,
                                       {"n": n or self.n, "lease_s": self.lease_s, "wait_s": self.wait_s},
                                       timeout=self.client._conn.timeout + self.wait_s)
        self.status = reply.get("job_status", self.status)
        self.done = bool(reply.get("done"))
        return [Trial(self, t) for t in reply.get("trials") or []]

    def _tell(self, items):
        body = {"trials": items}
        ids = {i["id"] for i in items}
        timeout = None
        # The batch's last result: ask for the next batch in the same request.
        if self._iterating and self._untold and self._untold <= ids:
            body["ask"] = {"n": self.n, "lease_s": self.lease_s, "wait_s": self.wait_s}
            timeout = self.client._conn.timeout + self.wait_s
        self._untold -= ids
        reply = self.client._conn.call("POST", "/v1/jobs/%d/tell" % self.job_id, body, timeout=timeout)
        self.status = reply.get("job_status", self.status)
        if "ask" in body:
            asked = reply.get("ask") or {}
            self.status = asked.get("job_status", self.status)
            self.done = bool(asked.get("done"))
            self._next = [Trial(self, t) for t in asked.get("trials") or []]
        outcomes = {r.get("id"): r.get("outcome") for r in reply.get("results") or []}
        return [outcomes.get(i["id"]) for i in items]

    def __iter__(self):
        self._iterating = True
        try:
            while not self.done or self._next:
                trials, self._next = (self._next, None) if self._next is not None else (self.ask(), None)
                self._untold = {t.id for t in trials}
                for t in trials:
                    yield t
                if not trials and not self.done and self.status in ("failed", "cancelled", "succeeded"):
                    break
        finally:
            self._iterating = False
            self._untold = set()

    def job(self):
        return self.client._conn.call("GET", "/v1/jobs/%d" % self.job_id)

    @property
    def best(self):
        if self._best is None:
            self._best = self.job().get("best")
        return self._best


class Client:
    def __init__(self, server=None, token=None, timeout=None):
        self._conn = Connection(server, token, timeout)

    @property
    def server(self):
        return self._conn.server

    def request(self, method, path, body=None, query=None):
        """Any API call: the reply's JSON, or KtuneError."""
        return self._conn.call(method, path, body, query)

    # --- GET /v1/best --------------------------------------------------------------------------
    def best(self, kernel, device_class=None, problem=None, device=None, accept=("measured",),
             kernel_version=None):
        """The best known configuration, or None on a miss (404 no_best).

        `accept` names the answers taken: "measured" (also a trusted import, which the server vouches
        for as measured), "imported" (an untrusted import), "predicted" (a model's answer for a problem
        never tuned), "nearest" (the nearest tuned problem: asks with fallback=nearest). Any other
        answer is a miss: None. "weak" with "predicted" also takes a weak model's prediction (one the
        server does not serve by default: trained on too few problems, or a low or unknown held-out
        accuracy; `Best.weak` says so). Without `device`, the lookup is by class (`device=external` and
        `device_class`, default this machine's ktune.device_class()); `kernel_version` names the
        version of an external kernel (left out: the newest with a result for the problem)."""
        accept = tuple(accept)
        bad = [a for a in accept if a not in SOURCES + ACCEPT_FLAGS]
        if bad or not set(accept) & set(SOURCES):
            raise ValueError("accept must name some of %s (and optionally weak), not %r"
                             % (", ".join(SOURCES), accept))
        if device is None:
            if device_class is None:
                from .device import device_class as this_class
                device_class = this_class()
            device = "external"
        query = [("kernel", kernel), ("device", device)]
        if device_class is not None:
            query.append(("device_class", device_class))
        if kernel_version is not None:
            query.append(("kernel_version", kernel_version))
        measured_only = not ({"predicted", "nearest", "imported"} & set(accept))
        if measured_only:
            query.append(("source", "measured"))
        elif "nearest" in accept:
            query.append(("fallback", "nearest"))
        if "weak" in accept and "predicted" in accept:
            query.append(("accept", "weak"))
        for k, v in (problem or {}).items():
            query.append((k, _query_value(v)))
        try:
            reply = self._conn.call("GET", "/v1/best", query=query)
        except KtuneError as e:
            if e.status == 404 and e.code == "no_best":
                return None
            raise
        source = reply.get("source")
        if measured_only or source in accept:
            return Best(reply)
        return None

    # --- ask/tell ------------------------------------------------------------------------------
    def tune_external(self, kernel, space, problem=None, device_class=None, strategy="auto",
                      budget=20, n=1, kernel_version=None, restrictions=None, default=None, seed=None,
                      lease_s=60, wait_s=5, options=None, objective=None):
        """Queues a job on the `external` device (the caller measures) and returns an ExternalTuning:
        `for trial in client.tune_external(...): trial.tell(measure(trial.config))`. `space`: Kernel
        Tuner's tune_params ({name: [values]}) or {"parameters": [{"name", "values"}], "restrictions",
        "default"}; `budget`: evaluations (an int) or POST /v1/tune's budget object; `n`: trials per ask;
        `objective`: {"metric": name, "goal": "max"|"min"} to optimise a metric the harness tells
        (`trial.tell(t, metrics={name: value})`) instead of the time."""
        if device_class is None:
            from .device import device_class as this_class
            device_class = this_class()
        body = {"kernel": kernel, "device": "external", "device_class": device_class,
                "space": space_body(space, restrictions, default), "problem": dict(problem or {}),
                "strategy": strategy,
                "budget": {"evaluations": int(budget)} if isinstance(budget, int) else dict(budget)}
        if kernel_version is not None:
            body["kernel_version"] = kernel_version
        if seed is not None:
            body["seed"] = int(seed)
        if options:
            body["strategy_options"] = dict(options)
        if objective:
            body["objective"] = dict(objective)
        job = self._conn.call("POST", "/v1/tune", json.loads(json.dumps(body, default=_plain_default)))
        if "id" not in job and "job_id" in job:
            job = dict(job, id=job["job_id"])
        return ExternalTuning(self, job, max(1, int(n)), lease_s, wait_s)

    def attach(self, job_id, n=1, lease_s=60, wait_s=5):
        """An ExternalTuning for an ask/tell job made earlier (by this process or another): a harness
        that went away comes back and goes on. Trials it had leased and not told are offered again once
        their lease ends."""
        job = self._conn.call("GET", "/v1/jobs/%d" % int(job_id))
        if job.get("device") != "external":
            raise ValueError("job %d runs on %s, not on the external device" % (job_id, job.get("device")))
        return ExternalTuning(self, job, max(1, int(n)), lease_s, wait_s)

    # --- kernels over HTTP and server-side jobs ------------------------------------------------
    def register_kernel(self, spec, files, data=None):
        """POST /v1/kernels: registers a kernel (spec.json's object and its files, name -> text; data:
        its data files, name -> {"dtype", "encoding": "base64", "data"}, kernels/README.md) and
        returns the reply (name, version, status: validating, or the status of the same bytes posted
        before). A spec, file or data error raises KtuneError naming its field path."""
        body = {"spec": spec, "files": dict(files)}
        if data:
            body["data"] = dict(data)
        return self._conn.call("POST", "/v1/kernels", body)

    def kernel_versions(self, name):
        """GET /v1/kernels/{name}: its versions, newest first (version, status, log, spec, ...)."""
        return self._conn.call("GET", "/v1/kernels/" + urllib.parse.quote(name, safe="")).get(
            "versions") or []

    def wait_kernel(self, name, version, timeout=120.0, poll_s=0.1):
        """Waits until a registered version is validated: returns its entry when ready; raises
        KtuneError (code kernel_invalid, the validation log as the message) when invalid, and
        TimeoutError when it is still validating after timeout seconds."""
        deadline = time.monotonic() + timeout
        while True:
            entry = next((v for v in self.kernel_versions(name) if v.get("version") == version), None)
            status = entry.get("status") if entry else None
            if status == "ready":
                return entry
            if status == "invalid":
                raise KtuneError(400, "kernel_invalid",
                                 "kernel %s version %s is invalid: %s" % (name, version,
                                                                          entry.get("log") or "(no log)"),
                                 "fix the source or the spec and register it again")
            if time.monotonic() > deadline:
                raise TimeoutError("kernel %s version %s is still %s after %gs"
                                   % (name, version, status or "unlisted", timeout))
            time.sleep(poll_s)

    def tune(self, kernel, device="cpu", problem=None, strategy="auto", budget=20, kernel_version=None,
             options=None, seed=None, **fields):
        """POST /v1/tune on a device of the server (cpu, cuda:0, replay:...): the job as queued (id,
        kernel_hash, ...). `budget`: evaluations (an int) or the budget object; other POST /v1/tune
        fields (final_remeasure, ...) as keywords."""
        body = {"kernel": kernel, "device": device, "strategy": strategy,
                "budget": {"evaluations": int(budget)} if isinstance(budget, int) else dict(budget)}
        if problem:
            body["problem"] = dict(problem)
        if kernel_version is not None:
            body["kernel_version"] = kernel_version
        if options:
            body["strategy_options"] = dict(options)
        if seed is not None:
            body["seed"] = int(seed)
        body.update(fields)
        body = json.loads(json.dumps(body, default=_plain_default))
        # A version GET /v1/kernels shows ready may still be validating for /v1/tune for a moment
        # (the server re-reads a stored kernel at most every 500 ms): 409 kernel_validating is retried.
        deadline = time.monotonic() + VALIDATING_RETRY_S
        while True:
            try:
                return self._conn.call("POST", "/v1/tune", body)
            except KtuneError as e:
                if e.code != "kernel_validating" or time.monotonic() > deadline:
                    raise
            time.sleep(0.2)

    def wait_job(self, job_id, timeout=600.0, poll_s=0.1):
        """GET /v1/jobs/{id} until the job is succeeded, failed or cancelled; the job. TimeoutError
        when it is still running after timeout seconds."""
        deadline = time.monotonic() + timeout
        while True:
            job = self._conn.call("GET", "/v1/jobs/%d" % int(job_id))
            if job.get("status") in ("succeeded", "failed", "cancelled"):
                return job
            if time.monotonic() > deadline:
                raise TimeoutError("job %d is still %s after %gs" % (job_id, job.get("status"), timeout))
            time.sleep(poll_s)

    def trials(self, job_id):
        """Every trial of a job (GET /v1/jobs/{id}/trials, page by page), in order."""
        trials, after = [], 0
        while True:
            page = self._conn.call("GET", "/v1/jobs/%d/trials" % int(job_id),
                                   query=[("after", after), ("limit", 1000)])
            got = page.get("trials") or []
            trials += got
            if not got or page.get("next_after") is None:
                return trials
            after = page["next_after"]

    # --- deploy table --------------------------------------------------------------------------
    def best_entries(self, kernel=None, device_class=None):
        """Every entry of the best table (GET /v1/best/entries, page by page), newest first."""
        entries, seen, offset = [], set(), 0
        while True:
            query = [("limit", ENTRIES_PAGE), ("offset", offset)]
            if kernel:
                query.append(("kernel", kernel))
            if device_class:
                query.append(("device_class", device_class))
            page = self._conn.call("GET", "/v1/best/entries", query=query).get("best") or []
            for e in page:
                key = (e.get("kernel"), e.get("device_class"), e.get("kernel_hash"), e.get("toolchain"),
                       json.dumps(e.get("problem"), sort_keys=True))
                if key not in seen:  # an entry improved while paging moves to the front: once
                    seen.add(key)
                    entries.append(e)
            if len(page) < ENTRIES_PAGE:
                return entries
            offset += len(page)

    def export_table(self, path, kernel=None, device_class=None):
        """Writes the deploy table (ktune.table's format) of the best entries to path; returns how many
        rows it holds. Load it with ktune.Table.load(path)."""
        return write_table(path, self.best_entries(kernel, device_class))


def _plain_default(v):
    if hasattr(v, "tolist"):
        return v.tolist()
    if isinstance(v, tuple):
        return list(v)
    raise TypeError("%r cannot travel as JSON" % (v,))
