"""ktune.autotune — a decorator like Triton's @autotune, persistent and shared through ktuned.

    @ktune.autotune(space={"block": [64, 128, 256], "unroll": [1, 2, 4]}, key=["n"], budget=12)
    def saxpy(x, y, a, n, block=64, unroll=1): ...

    saxpy(x, y, 2.0, n=len(x))   # the configuration goes in as keyword arguments

The first call with a new value of the key arguments asks GET /v1/best (kernel: the function's
qualified name unless `kernel=` names it; device_class: this machine's ktune.device_class() unless
given; problem: the key arguments' values). On a miss it tunes on the spot through ask/tell: each
trial calls the wrapped function `warmup` times, then times `repeats` calls (time.perf_counter) and
tells the median; a call that raises is told as `runtime_error`. It then uses the job's best. Later
calls with that key use the configuration kept in memory without a request; other processes and
hosts of the same class find it in /v1/best. Calls made for timing run the function for real (as
Triton's do): a function that mutates its arguments sees that many more calls.

Key values must be numbers (the problem arguments of an ask/tell job are numbers; a boolean counts
as 0 or 1): pass the sizes that matter (n=len(x), rows=a.shape[0]) as arguments of their own."""
import functools
import inspect
import re
import statistics
import threading
import time

from .errors import KtuneError


def _key_value(v):
    """A key argument as a problem argument: a number (ask/tell jobs take numbers only; a boolean is
    0 or 1, a numpy scalar its value)."""
    if hasattr(v, "tolist") and not hasattr(v, "__len__"):
        v = v.tolist()
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, (int, float)):
        return v
    raise TypeError("ktune.autotune: a key argument must be a number (ask/tell problems are numbers), "
                    "not %s; pass a size such as n=len(x) or x.shape[0] as its own argument"
                    % type(v).__name__)


def kernel_name_of(fn):
    """The function's qualified name made a kernel name: characters other than letters, digits, '_',
    '.' and '-' become '_' ("outer.<locals>.f" → "outer._locals_.f")."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", getattr(fn, "__qualname__", fn.__name__))


class Autotuned:
    def __init__(self, fn, space, key, budget, warmup, repeats, kernel, device_class, client,
                 strategy, restrictions, default, accept, kernel_version):
        self.fn = fn
        self.space = space
        self.key = list(key)
        self.budget = budget
        self.warmup = int(warmup)
        self.repeats = max(1, int(repeats))
        self.kernel = kernel or kernel_name_of(fn)
        self._device_class = device_class
        self._client = client
        self.strategy = strategy
        self.restrictions = restrictions
        self.default = default
        self.accept = accept
        self.kernel_version = kernel_version
        self.cache = {}       # key values (JSON text) -> configuration
        self.jobs = {}        # key values -> the id of the job that tuned them here
        self._lock = threading.Lock()
        self._sig = inspect.signature(fn)
        functools.update_wrapper(self, fn)

    @property
    def client(self):
        if self._client is None:
            from .client import Client
            self._client = Client()
        return self._client

    @property
    def device_class(self):
        if self._device_class is None:
            from .device import device_class
            self._device_class = device_class()
        return self._device_class

    def problem_of(self, args, kwargs):
        bound = self._sig.bind_partial(*args, **kwargs)
        bound.apply_defaults()
        problem = {}
        for k in self.key:
            if k not in bound.arguments:
                raise TypeError("ktune.autotune: key argument %r was not passed to %s" % (k, self.kernel))
            problem[k] = _key_value(bound.arguments[k])
        return problem

    def _time_call(self, args, kwargs, config):
        for _ in range(self.warmup):
            self.fn(*args, **kwargs, **config)
        times = []
        for _ in range(self.repeats):
            start = time.perf_counter()
            self.fn(*args, **kwargs, **config)
            times.append((time.perf_counter() - start) * 1000.0)
        return statistics.median(times)

    def tune(self, problem, args, kwargs):
        """Tunes the problem through ask/tell with these arguments; the best configuration."""
        run = self.client.tune_external(self.kernel, self.space, problem=problem,
                                        device_class=self.device_class, strategy=self.strategy,
                                        budget=self.budget, restrictions=self.restrictions,
                                        default=self.default, kernel_version=self.kernel_version)
        for trial in run:
            try:
                ms = self._time_call(args, kwargs, trial.config)
            except Exception:  # the configuration fails: the search learns it, the tuning goes on
                trial.tell(status="runtime_error")
                continue
            trial.tell(max(ms, 1e-6))
        self.jobs[_json_key(problem)] = run.job_id
        best = run.best
        if not best or not best.get("config"):
            found = self.client.best(self.kernel, device_class=self.device_class, problem=problem,
                                     kernel_version=self.kernel_version)
            if found is None:
                raise KtuneError(404, "no_best", "ktune.autotune: job %d of %s measured no valid "
                                 "configuration" % (run.job_id, self.kernel))
            return found.config
        return best["config"]

    def config_for(self, args, kwargs):
        problem = self.problem_of(args, kwargs)
        k = _json_key(problem)
        config = self.cache.get(k)
        if config is not None:
            return config
        with self._lock:  # one tuning per key at a time in this process
            config = self.cache.get(k)
            if config is None:
                found = self.client.best(self.kernel, device_class=self.device_class, problem=problem,
                                         accept=self.accept, kernel_version=self.kernel_version)
                config = found.config if found is not None else self.tune(problem, args, kwargs)
                self.cache[k] = config
        return config

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs, **self.config_for(args, kwargs))


def _json_key(problem):
    import json
    return json.dumps(problem, sort_keys=True)


def autotune(space, key=(), budget=20, warmup=1, repeats=5, kernel=None, device_class=None,
             client=None, strategy="auto", restrictions=None, default=None, accept=("measured",),
             kernel_version=None):
    """The decorator (see the module's text). kernel_version: the version the results are kept under
    (e.g. a hash of the code); left out, ktuned's default for an external kernel, and lookups take the
    newest version with a result."""
    def wrap(fn):
        return Autotuned(fn, space, key, budget, warmup, repeats, kernel, device_class, client,
                         strategy, restrictions, default, accept, kernel_version)
    return wrap
