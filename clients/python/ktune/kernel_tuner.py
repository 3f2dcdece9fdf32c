"""ktune.kernel_tuner — `tune_kernel` with Kernel Tuner's argument names (issue 27, section 4).

    import ktune as kernel_tuner                 # instead of: import kernel_tuner
    results, env = kernel_tuner.tune_kernel("vadd", source, n, [c, a, b, np.int32(n)],
                                            {"BLOCK": [1, 2, 4]}, answer=[c_ref, None, None, None])

The call builds a kernel spec (kernels/README.md) from the C function and the arguments, registers it
with POST /v1/kernels, waits for its validation, tunes it with POST /v1/tune on a device of the
server (`cpu`), waits for the job and returns Kernel Tuner's (results, env). build_spec() is the first
step alone (no server). The arrays' data and `answer`'s travel with the kernel (POST /v1/kernels
"data", at most DATA_CAP bytes in all); what is not carried over is said in tune_kernel's docstring
and clients/python/README.md."""
import array
import base64
import collections
import itertools
import keyword
import math
import numbers
import os
import re
import sys
import warnings

# The server's cap on a kernel's data files, decoded (catalog/kernel_data.h: KDATA_MAX_BYTES; the
# request body is at most 1 MiB and base64 takes 4/3)
DATA_CAP = 512 * 1024
DTYPE_SIZES = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "u8": 1}


class Buffer(collections.namedtuple("Buffer", "data dtype")):
    """A buffer argument without numpy: raw little-endian bytes (bytes, bytearray, memoryview) and
    their ktune dtype ("f32", "f64", "i32", ...): ktune.Buffer(struct.pack("<4f", ...), "f32")."""

# numpy dtype names (str(a.dtype)) and array.array typecodes -> the spec's dtypes
NUMPY_DTYPES = {"float16": "f16", "float32": "f32", "float64": "f64", "int8": "i8", "int16": "i16",
                "int32": "i32", "int64": "i64", "uint8": "u8"}
# scalars: the spec has f32, f64, i32, i64 (a smaller integer is an i32: C promotes it anyway)
NUMPY_SCALARS = {"float32": "f32", "float64": "f64", "int8": "i32", "int16": "i32", "int32": "i32",
                 "int64": "i64", "uint8": "i32", "uint16": "i32"}
# Kernel Tuner's strategy names -> ktune's (ktune's own names pass unchanged)
STRATEGIES = {"brute_force": "exhaustive", "random_sample": "random", "simulated_annealing": "anneal",
              "genetic_algorithm": "genetic", "greedy_ils": "greedy_ils", "bayes_opt": "bo"}
PROBLEM_NAMES = ("size_x", "size_y", "size_z")
I32 = (-(1 << 31), (1 << 31) - 1)
I64 = (-(1 << 63), (1 << 63) - 1)
MAX_DEFAULT_SCAN = 1 << 20
IN_OUT_HINT = ("the default configuration's output did not verify; a kernel that reads a buffer it "
               "writes (y = a*x + y) finds NaN there, as ktune fills each output with NaN before a "
               "checked run: pass verify=\"none\" (or no answer), or write the result to a buffer "
               "of its own")
ANSWER_HINT = ("the default configuration's output differs from answer: check the answer (its dtype, "
               "order and values); a kernel that reads a buffer it writes (y = a*x + y) finds NaN "
               "there, as ktune fills each output with NaN before a checked run: pass verify=\"none\", "
               "or write the result to a buffer of its own")
# configurations tried when looking for a valid default


def _array_dtype(a):
    """The spec dtype of a buffer argument, or None when a is not an array."""
    if isinstance(a, Buffer):
        if a.dtype not in DTYPE_SIZES:
            raise TypeError("Buffer dtype %r is not one of %s" % (a.dtype, ", ".join(DTYPE_SIZES)))
        if len(memoryview(a.data).cast("B")) % DTYPE_SIZES[a.dtype]:
            raise ValueError("Buffer of %d bytes is not a whole number of %s elements"
                             % (len(memoryview(a.data).cast("B")), a.dtype))
        return a.dtype
    if isinstance(a, array.array):
        code = a.typecode
        if code == "f":
            return "f32"
        if code == "d":
            return "f64"
        if code == "B":
            return "u8"
        if code in "bhilq":
            return {1: "i8", 2: "i16", 4: "i32", 8: "i64"}[a.itemsize]
        raise TypeError("array.array of typecode %r has no ktune dtype" % code)
    dtype = getattr(a, "dtype", None)
    if dtype is not None and getattr(a, "ndim", 0) >= 1:
        name = str(dtype)
        if name not in NUMPY_DTYPES:
            raise TypeError("a numpy array of dtype %s has no ktune dtype (%s)"
                            % (name, ", ".join(sorted(NUMPY_DTYPES))))
        return NUMPY_DTYPES[name]
    return None


def _scalar(v, where):
    """(type, value) of a scalar argument: numpy scalars by their dtype, Python int -> i32 (i64 when
    out of i32's range), Python float -> f64 (C double)."""
    dtype = getattr(v, "dtype", None)
    if dtype is not None and getattr(v, "ndim", 0) == 0:
        name = str(dtype)
        if name not in NUMPY_SCALARS:
            raise TypeError("%s: a numpy scalar of dtype %s cannot be a kernel argument (%s)"
                            % (where, name, ", ".join(sorted(NUMPY_SCALARS))))
        t = NUMPY_SCALARS[name]
        v = v.item()
    elif isinstance(v, bool) or not isinstance(v, (numbers.Integral, numbers.Real)):
        raise TypeError("%s: %r is neither an array nor a number" % (where, v))
    elif isinstance(v, numbers.Integral):
        v = int(v)
        t = "i32" if I32[0] <= v <= I32[1] else "i64"
    else:
        t = "f64"
    if t.startswith("i"):
        lo, hi = I32 if t == "i32" else I64
        if not lo <= int(v) <= hi:
            raise ValueError("%s: %d does not fit %s" % (where, v, t))
        return t, int(v)
    v = float(v)
    if not math.isfinite(v):
        raise ValueError("%s: %r is not a finite number" % (where, v))
    return t, v


def _array_bytes(a):
    """The raw little-endian bytes of a buffer argument (numpy: C order)."""
    if isinstance(a, Buffer):
        return bytes(memoryview(a.data).cast("B"))
    if isinstance(a, array.array):
        if sys.byteorder == "little":
            return a.tobytes()
        b = array.array(a.typecode, a)
        b.byteswap()
        return b.tobytes()
    dtype = a.dtype
    if dtype.byteorder == ">" or (dtype.byteorder == "=" and sys.byteorder == "big"):
        a = a.astype(dtype.newbyteorder("<"))
    return a.tobytes(order="C")


def _array_size(a):
    if isinstance(a, Buffer):
        return len(memoryview(a.data).cast("B")) // DTYPE_SIZES[a.dtype]
    size = getattr(a, "size", None)
    return len(a) if size is None else int(size)


def _data_entry(a, dtype):
    return {"dtype": dtype, "encoding": "base64",
            "data": base64.b64encode(_array_bytes(a)).decode("ascii")}


def _strip_comments(src):
    src = re.sub(r"/\*.*?\*/", " ", src, flags=re.S)
    return re.sub(r"//[^\n]*", " ", src)


def parse_signature(source, name):
    """The parameters of C function `name`'s definition: a list of (name, reads_only) where reads_only
    is True for a pointer to const (`const float *a`, `float const *a`); None when the definition
    is not found."""
    m = re.search(r"\b%s\s*\(([^()]*)\)\s*\{" % re.escape(name), _strip_comments(source))
    if not m:
        return None
    params = []
    text = m.group(1).strip()
    if text in ("", "void"):
        return params
    for p in text.split(","):
        p = re.sub(r"([A-Za-z_]\w*)\s*\[[^\]]*\]", r"* \1", p.strip())  # float a[]: a pointer
        ident = re.search(r"([A-Za-z_]\w*)\s*$", p)
        if not ident:
            return None
        pointee = p[:p.rfind("*")] if "*" in p else ""
        params.append((ident.group(1), "*" in p and re.search(r"\bconst\b", pointee) is not None))
    return params


def _usable_name(n, taken):
    return (re.fullmatch(r"[A-Za-z_]\w{0,30}", n or "") is not None and not keyword.iskeyword(n)
            and n not in taken and n != "time_ms")


def _init_of(a, dtype):
    """A buffer's init kind that mirrors the caller's array: zeros, constant, iota, else uniform in
    its [min, max] (floating: rounded outward to whole numbers). The data itself is not uploaded
    (see tune_kernel)."""
    if isinstance(a, Buffer):
        a = memoryview(a.data).cast("B").cast({"f32": "f", "f64": "d", "i8": "b", "i16": "h",
                                                "i32": "i", "i64": "q", "u8": "B"}.get(dtype, "B"))
    values = a.tolist() if hasattr(a, "tolist") else list(a)
    if hasattr(values, "__len__") and values and isinstance(values[0], list):
        values = list(itertools.chain.from_iterable(values))  # a 2-D array: its elements in order
    if not values:
        return None
    lo, hi = min(values), max(values)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return None
    if lo == hi:
        return {"kind": "zeros"} if lo == 0 else {"kind": "constant", "value": lo}
    if lo == 0 and hi == len(values) - 1 and all(v == i for i, v in enumerate(values)):
        return {"kind": "iota"}
    if dtype.startswith("f"):
        # whole bounds: random data (np.random.randn) keeps one range, so one kernel version, run
        # after run
        lo, hi = math.floor(lo), math.ceil(hi)
    return {"kind": "uniform", "min": lo, "max": hi}


def _restriction_ok(exprs, env):
    """Python's reading of Kernel Tuner restrictions for a configuration; a name it cannot see (a
    device limit like `cores`) counts as satisfied: the server checks the default again."""
    for e in exprs:
        try:
            if not eval(e, {"__builtins__": {}}, dict(env)):  # the caller's own expressions
                return False
        except NameError:
            continue
    return True


def _default_config(tune_params, restrictions, problem):
    names = list(tune_params)
    for n, values in enumerate(itertools.product(*(tune_params[k] for k in names))):
        if n >= MAX_DEFAULT_SCAN:
            break
        config = dict(zip(names, values))
        if _restriction_ok(restrictions, dict(problem, **config)):
            return config
    raise ValueError("no configuration of tune_params satisfies the restrictions "
                     "(tried the first %d)" % min(n + 1, MAX_DEFAULT_SCAN))


def _count_configs(tune_params, restrictions, problem, cap):
    names, count = list(tune_params), 0
    for values in itertools.product(*(tune_params[k] for k in names)):
        if _restriction_ok(restrictions, dict(problem, **dict(zip(names, values)))):
            count += 1
            if count >= cap:
                break
    return count


def _plain(v):
    return v.tolist() if hasattr(v, "tolist") else v


def _metric_ident(name, taken):
    ident = re.sub(r"\W", "_", name)
    if not ident or ident[0].isdigit():
        ident = "m_" + ident
    ident = ident[:31]
    while ident in taken or keyword.iskeyword(ident):
        ident = (ident + "_")[-31:]
    return ident


def _metric_expr(expr, scalars):
    """A Kernel Tuner metric string as the server reads it: `time` (ms) is time_ms and a scalar
    argument's name its value."""
    def sub(m):
        word = m.group(0)
        if word == "time":
            return "time_ms"
        if word in scalars:
            return repr(scalars[word])
        return word
    return re.sub(r"\b[A-Za-z_]\w*\b", sub, expr)


def build_spec(kernel_name, kernel_source, problem_size, arguments, tune_params, restrictions=None,
               answer=None, metrics=None, verify=None, atol=None, default=None, upload=None):
    """The kernel spec (the object of spec.json, kernels/README.md) and files of a tune_kernel call,
    and what it decided: (spec, files, notes) with notes["verify"], notes["names"] (each argument's
    name in the spec), notes["problem"], notes["metric_names"] (spec name -> the caller's),
    notes["data"] (the data files to upload, POST /v1/kernels "data"; {} when none) and
    notes["uploaded"] (whether the arrays' data travels). upload: True sends the input arrays and
    answer's arrays, False draws inputs like them instead (below), None (default) uploads when they
    take at most DATA_CAP bytes together."""
    if not re.fullmatch(r"[A-Za-z_]\w*", kernel_name or ""):
        raise ValueError("kernel_name must be the C function's name, not %r" % (kernel_name,))
    if isinstance(kernel_source, str) and "\n" not in kernel_source and os.path.isfile(kernel_source):
        with open(kernel_source, encoding="utf-8") as f:  # Kernel Tuner takes a file name too
            kernel_source = f.read()
    if not isinstance(kernel_source, str):
        raise TypeError("kernel_source must be the C source text or a file name")
    # problem_size -> the problem arguments (names size_x, size_y, size_z), fixed at the given values
    sizes = list(problem_size) if isinstance(problem_size, (tuple, list)) else [problem_size]
    if not 1 <= len(sizes) <= 3:
        raise ValueError("problem_size must be an int or a tuple of 1 to 3 ints")
    problem = {}
    for name, s in zip(PROBLEM_NAMES, sizes):
        s = _plain(s)
        if isinstance(s, bool) or not isinstance(s, int) or s < 1:
            raise ValueError("problem_size: %r is not a positive int (ktune takes numbers only)" % (s,))
        problem[name] = s
    # the arguments: names from the C signature where it can be read, else arg0, arg1, ...
    arguments = list(arguments)
    params = parse_signature(kernel_source, kernel_name)
    if params is not None and len(params) != len(arguments):
        raise ValueError("%s takes %d parameters in the source but %d arguments were given"
                         % (kernel_name, len(params), len(arguments)))
    if answer is not None and len(answer) != len(arguments):
        raise ValueError("answer must have one entry per argument (None where there is nothing to "
                         "compare), %d for %d arguments" % (len(answer), len(arguments)))
    taken = set(problem) | set(tune_params)
    names = []
    for i in range(len(arguments)):
        n = params[i][0] if params else None
        if not _usable_name(n, taken):
            n = "arg%d" % i
            while n in taken:
                n += "_"
        taken.add(n)
        names.append(n)
    if verify is not None and verify not in ("answer", "default", "none"):
        raise ValueError("verify must be 'answer' (against answer's arrays), 'default' (against the "
                         "default configuration's outputs) or 'none', not %r" % (verify,))
    if verify == "answer" and answer is None:
        raise ValueError("verify='answer' needs answer=[...]")
    # the data that would travel: every input array, and answer's arrays (for verify answer)
    want_answer = answer is not None and verify in (None, "answer")
    total = 0
    for i, a in enumerate(arguments):
        dtype = _array_dtype(a)
        if dtype is None:
            continue
        if answer is None or answer[i] is None:
            total += _array_size(a) * DTYPE_SIZES[dtype]
        elif want_answer and _array_dtype(answer[i]) is not None:  # else refused below
            total += _array_size(answer[i]) * DTYPE_SIZES[_array_dtype(answer[i]) or dtype]
    if upload is None:
        upload = total <= DATA_CAP
        if not upload:
            warnings.warn("ktune.tune_kernel: the arrays take %d bytes, more than the %d a kernel's "
                          "data may (DATA_CAP): inputs are drawn to resemble them%s" %
                          (total, DATA_CAP, ", outputs verified against the default "
                           "configuration's" if answer is not None else ""), stacklevel=3)
    if verify is None:
        verify = ("answer" if upload else "default") if answer is not None else "none"
    if verify == "answer" and not upload:
        raise ValueError("verify='answer' needs the answer's data uploaded (upload=True)")
    data = {}
    buffers, scalars, scalar_values = [], [], {}
    for i, (a, n) in enumerate(zip(arguments, names)):
        where = "arguments[%d] (%s)" % (i, n)
        dtype = _array_dtype(a)
        if dtype is None:
            if answer is not None and answer[i] is not None:
                raise ValueError("answer[%d]: %s is a scalar; its answer must be None" % (i, n))
            t, v = _scalar(a, where)
            scalars.append({"name": n, "type": t, "value": repr(v)})
            scalar_values[n] = v
            continue
        size = _array_size(a)
        if size < 1:
            raise ValueError("%s: an empty array" % where)
        if answer is not None:
            output = answer[i] is not None
        elif params is not None:
            output = not params[i][1]
        else:
            output = False
        buf = {"name": n, "elements": str(size), "role": "output" if output else "input",
               "dtype": dtype}
        if not output and upload:
            data[n + ".bin"] = _data_entry(a, dtype)
            buf["init"] = {"kind": "data", "file": n + ".bin"}
        elif not output:
            init = _init_of(a, dtype)
            if init is not None:
                buf["init"] = init
        if output and verify == "answer":
            ans = answer[i]
            adtype = _array_dtype(ans)
            if adtype is None:
                raise TypeError("answer[%d]: must be an array (or None), not %r" % (i, type(ans)))
            if adtype != dtype or _array_size(ans) != size:
                raise ValueError("answer[%d]: %d %s elements for argument %s of %d %s elements"
                                 % (i, _array_size(ans), adtype, n, size, dtype))
            data[n + ".answer.bin"] = _data_entry(ans, dtype)
        buffers.append(buf)
    if not any(b["role"] == "output" for b in buffers):
        raise ValueError("no argument is an output buffer: declare the kernel's inputs `const` "
                         "(`const float *a`) or pass answer with an array for each output and None "
                         "for the other arguments")
    # the space
    if not isinstance(tune_params, dict) or not tune_params:
        raise TypeError("tune_params must be a dict of parameter name -> list of values")
    space = {k: [_plain(x) for x in v] for k, v in tune_params.items()}
    restr = [] if restrictions is None else ([restrictions] if isinstance(restrictions, str)
                                             else list(restrictions))
    for i, r in enumerate(restr):
        if not isinstance(r, str):
            raise TypeError("restrictions[%d]: ktune takes restrictions as strings (Python "
                            "expressions of the parameters), not %s" % (i, type(r).__name__))
    if default is None:
        default = _default_config(space, restr, problem)
    spec = {"name": kernel_name,
            "summary": "registered by ktune.tune_kernel",
            "problem": [{"name": k, "min": v, "max": v, "default": v} for k, v in problem.items()],
            "buffers": buffers,
            "flops": "0",
            "tolerance": {"rtol": 1e-5, "atol": 1e-6 if atol is None else float(atol)},
            "verify": {"kind": verify},  # "answer": its buffers below
            "variants": {"cpu": {"source": "kernel.c", "entry": kernel_name, "arguments": names,
                                 "parameters": [{"name": k, "values": v} for k, v in space.items()],
                                 "restrictions": restr, "default": default}}}
    if verify == "answer":
        spec["verify"]["buffers"] = {b["name"]: {"file": b["name"] + ".answer.bin"}
                                     for b in buffers if b["role"] == "output"}
    if scalars:
        spec["scalars"] = scalars
    metric_names = {}
    if metrics:
        spec["metrics"] = []
        for mname, expr in metrics.items():
            if callable(expr):
                raise TypeError("metrics[%r]: ktune computes metrics on the server and takes them as "
                                "string expressions of time (ms), the problem and the scalar "
                                "arguments, e.g. \"2*n/(time*1e6)\"; a function cannot travel" % mname)
            if not isinstance(expr, str):
                raise TypeError("metrics[%r] must be a string expression" % mname)
            ident = _metric_ident(mname, set(metric_names) | taken)
            metric_names[ident] = mname
            spec["metrics"].append({"name": ident, "value": _metric_expr(expr, scalar_values)})
    notes = {"verify": verify, "names": names, "problem": problem, "metric_names": metric_names,
             "data": data, "uploaded": bool(upload)}
    return spec, {"kernel.c": kernel_source}, notes


def tune_kernel(kernel_name, kernel_source, problem_size, arguments, tune_params, restrictions=None,
                answer=None, lang="C", strategy=None, strategy_options=None, metrics=None,
                device="cpu", client=None, verify=None, atol=None, default=None, seed=None,
                quiet=True, verbose=False, timeout=600.0, upload=None, **ignored):
    """Kernel Tuner's tune_kernel on a ktune server: registers the C function `kernel_name` of
    `kernel_source` (the text, or a file name) as a kernel (POST /v1/kernels), waits until a worker
    validated it, tunes it on the server's `device` (cpu) and returns (results, env).

    - arguments: in the order of the C function's parameters. numpy arrays are buffers of their dtype
      (float16 f16, float32 f32, float64 f64, int8/16/32/64 i8/16/32/64, uint8 u8; array.array works
      without numpy); numpy scalars are scalars of theirs (a smaller integer is an int32); a Python
      int is an int32 (int64 beyond its range), a Python float a double (Kernel Tuner asks for numpy
      types); ktune.Buffer(bytes, "f32") is a buffer of raw little-endian bytes. The C function is
      called with its natural signature (ktune generates the call).
    - What travels: each input array's data (POST /v1/kernels "data", base64; part of the kernel's
      version: other data, another version), so the kernel sees exactly the caller's inputs. The
      data fixes the problem size: the kernel is registered for problem_size only. The arrays and
      answer's together may take at most DATA_CAP bytes (512 KiB; the server's cap): beyond it (or
      with upload=False) an input is instead filled by the server like the caller's (zeros, a
      constant, 0, 1, 2, ..., else uniform in the array's [min, max], rounded outward to whole
      numbers for floating arrays), with a warning. Outputs: the arrays whose `answer` entry is not
      None, or, without answer, the pointers the signature does not declare const; their data does
      not travel: an output is filled with NaN (integers 0xA5 bytes) before each checked run, so a
      buffer the kernel reads and writes starts so (verified, such a kernel is invalid, and the
      error's hint says why: tune it with verify="none").
    - answer: one entry per argument, None where nothing is compared (Kernel Tuner's list): each
      output's expected values are uploaded and every configuration's output is compared with them
      within atol (default 1e-6) + 1e-5 relative (Kernel Tuner's np.allclose); a configuration whose
      output differs is a wrong_result trial (env["failed"]), and a default configuration that
      differs makes the kernel invalid (KtuneError). Without answer nothing is verified, as in
      Kernel Tuner. verify="answer", "default" (against the default configuration's outputs, no
      answer data uploaded) or "none" chooses explicitly.
    - problem_size: an int or a tuple of up to 3: the problem arguments size_x, size_y, size_z (the key
      under which /v1/best finds the results).
    - tune_params {name: [values]} and restrictions (a list of strings: Python expressions of the
      parameters; lambdas are refused) are the space; the default configuration is the first valid one
      in tune_params' order unless default= names it.
    - strategy: Kernel Tuner's name (brute_force, random_sample, simulated_annealing,
      genetic_algorithm, greedy_ils, bayes_opt) or ktune's; strategy_options: max_fevals is the budget
      in evaluations, time_limit the budget in seconds, the others go to the strategy. Without
      max_fevals and strategy the whole space is measured (brute force).
    - metrics {name: "expression"}: of `time` (ms), the problem arguments and the scalar arguments,
      computed by the server for each trial; a function (lambda) is refused with TypeError.
    - lang: "C" only (NotImplementedError for the others).
    - client: a ktune.Client (default: KTUNE_SERVER, KTUNE_TOKEN as the CLI).

    results: one dict per configuration measured: its parameters, "time" (ms, the median), and the
    metrics by the caller's names. env: kernel_name, kernel_version, device, device_class, job_id,
    strategy, budget, verify, uploaded (whether the arrays' data travelled), best ({config,
    time_ms}), failed (trials that did not run or did not verify), server.
    Errors: a spec or compile error raises KtuneError with the server's message or log."""
    from .client import Client
    from .errors import KtuneError
    if str(lang).lower() != "c":
        raise NotImplementedError("ktune.tune_kernel tunes C functions only (lang='C'); %s kernels "
                                  "are not supported yet: register them with POST /v1/kernels or "
                                  "measure them with your own harness (Client.tune_external)" % lang)
    known_ignored = {"iterations", "block_size_names", "cache", "simulation_mode", "observers",
                     "objective", "objective_higher_is_better", "compiler_options", "log"}
    unknown = sorted(set(ignored) - known_ignored)
    if unknown:
        raise TypeError("tune_kernel: ktune does not support %s (GPU launch options do not apply to "
                        "C kernels)" % ", ".join(unknown))
    if ignored:
        warnings.warn("ktune.tune_kernel ignores %s" % ", ".join(sorted(ignored)), stacklevel=2)
    spec, files, notes = build_spec(kernel_name, kernel_source, problem_size, arguments, tune_params,
                                    restrictions, answer, metrics, verify, atol, default, upload)
    client = client or Client()
    say = (lambda *a: print(*a)) if (verbose or not quiet) else (lambda *a: None)
    reg = client.register_kernel(spec, files, notes["data"])
    version = reg["version"]
    say("ktune: %s version %s %s" % (kernel_name, version, reg.get("status")))
    try:
        client.wait_kernel(kernel_name, version, timeout=timeout)
    except KtuneError as e:
        if e.code == "kernel_invalid" and "wrong_result" in (e.message or ""):
            raise KtuneError(e.status, e.code, e.message,
                             ANSWER_HINT if notes["verify"] == "answer" else IN_OUT_HINT) from None
        raise

    options = dict(strategy_options or {})
    max_fevals = options.pop("max_fevals", None)
    time_limit = options.pop("time_limit", None)
    space = {p["name"]: p["values"] for p in spec["variants"]["cpu"]["parameters"]}
    if strategy is None:
        strategy = "auto" if max_fevals else "exhaustive"
    strategy = STRATEGIES.get(strategy, strategy)
    budget = {}
    if max_fevals is not None:
        budget["evaluations"] = int(max_fevals)
    if time_limit is not None:
        budget["seconds"] = float(time_limit)
    if not budget:
        budget["evaluations"] = max(1, _count_configs(space, spec["variants"]["cpu"]["restrictions"],
                                                      notes["problem"], 1 << 20))
    job = client.tune(kernel_name, device=device, problem=notes["problem"], strategy=strategy,
                      budget=budget, kernel_version=version, options=options or None, seed=seed)
    say("ktune: job %s on %s" % (job["id"], device))
    done = client.wait_job(job["id"], timeout=timeout)
    if done.get("status") != "succeeded":
        err = done.get("error") or {}
        raise KtuneError(0, err.get("code") or "job_" + str(done.get("status")),
                         "job %s %s: %s" % (job["id"], done.get("status"),
                                            err.get("message") or done.get("status")),
                         err.get("hint"))
    results, failed = [], 0
    for t in client.trials(job["id"]):
        if t.get("final_round") is not None:
            continue  # the final pick's re-measurements of configurations already listed
        if t.get("status") != "ok":
            failed += 1
            continue
        r = dict(t.get("config") or {})
        r["time"] = t.get("time_ms")
        for k, v in ((t.get("extras") or {}).get("metrics") or {}).items():
            r[notes["metric_names"].get(k, k)] = v
        results.append(r)
    env = {"kernel_name": kernel_name, "kernel_version": version, "device": device,
           "device_class": done.get("device_class"), "job_id": job["id"], "strategy": strategy,
           "budget": budget, "verify": notes["verify"], "uploaded": notes["uploaded"],
           "best": done.get("best"), "failed": failed,
           "problem": notes["problem"], "server": client.server}
    say("ktune: best %s" % (done.get("best"),))
    return results, env
