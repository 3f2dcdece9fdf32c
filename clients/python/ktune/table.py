"""ktune.table — the deploy-time table: best configurations exported once, looked up without a server.

The file format (written by `Client.export_table` and by `ktune best --all --format table`, read
here and by clients/c/ktune_table.h) is UTF-8 text, one record a line, fields separated by one tab:

    # ktune-table 1
    kernel<TAB>device_class<TAB>kernel_hash<TAB>toolchain<TAB>origin<TAB>time_ms<TAB>problem<TAB>config<TAB>measured_at
    gemm<TAB>cpu:AMD_EPYC:256<TAB>05bece86a2c7f753<TAB>gcc 12.2.0<TAB>measured<TAB>0.3032395<TAB>{"K":256,"M":256,"N":256}<TAB>{"MR":6,...}<TAB>2026-11-22T04:21:10.072261+00:00

The first line names the format and its version, the second the columns. `problem` and `config` are
compact JSON objects (JSON escapes tabs and newlines inside strings, so a field never holds one);
the other text fields may not hold a tab or a line break. Rows are written newest first (the order of
GET /v1/best/entries, most recently improved first). Lines starting with '#' after the header are
comments.

Lookup (`Table.lookup(kernel, device_class, problem)`): the rows of that kernel and class; of those,
the version (kernel_hash and toolchain) of the first such row in the file (the newest), unless
`kernel_hash` is given. An exact match is a row whose problem equals the one asked for (same
argument names, equal values; numbers compare as numbers). Else the nearest: the least distance
sqrt(sum over arguments of (s(a) - s(b))^2) with s(x) = sign(x) * log(1 + |x|), lists compared element
by element, any other value (strings, booleans) required equal, the same argument names required —
the distance GET /v1/best?fallback=nearest uses (service/api/best_nearest.c); ties go to the earlier
row. Unlike the server, the table cannot check that the neighbour's configuration is valid for the
problem asked (it has no space): the result says it is the nearest, and which problem it was tuned for.
"""
import json
import math
import os
import tempfile

FORMAT_LINE = "# ktune-table 1"
COLUMNS = ("kernel", "device_class", "kernel_hash", "toolchain", "origin", "time_ms", "problem",
           "config", "measured_at")


class TableError(ValueError):
    pass


class Lookup:
    """One answer of Table.lookup: `config` (a dict), `exact` (True when tuned for this very problem),
    `problem` (the problem it was tuned for), `distance` (0.0 when exact), `time_ms`, `kernel_hash`,
    `toolchain`, `origin` (measured or imported), `measured_at`."""

    def __init__(self, row, exact, distance):
        self.kernel = row["kernel"]
        self.device_class = row["device_class"]
        self.kernel_hash = row["kernel_hash"]
        self.toolchain = row["toolchain"]
        self.origin = row["origin"]
        self.time_ms = row["time_ms"]
        self.problem = row["problem"]
        self.config = row["config"]
        self.measured_at = row["measured_at"]
        self.exact = exact
        self.distance = distance

    @property
    def nearest(self):
        return not self.exact

    def __repr__(self):
        how = "exact" if self.exact else "nearest problem %s (distance %.4g)" % (
            json.dumps(self.problem, sort_keys=True), self.distance)
        return "Lookup(%s, %s)" % (json.dumps(self.config, sort_keys=True), how)


def _scale(x):
    return math.log1p(x) if x >= 0 else -math.log1p(-x)


def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _add(a, b):
    """The squared distance of two values, None when they are not comparable."""
    if _is_number(a) and _is_number(b):
        return (_scale(a) - _scale(b)) ** 2
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return None
        total = 0.0
        for x, y in zip(a, b):
            d = _add(x, y)
            if d is None:
                return None
            total += d
        return total
    if isinstance(a, bool) or isinstance(b, bool):
        return 0.0 if a is b else None
    return 0.0 if a == b else None


def _same(a, b):
    """Equal values: numbers as numbers, booleans only to booleans, lists element by element."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if _is_number(a) and _is_number(b):
        return float(a) == float(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return set(a) == set(b) and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def problem_distance(a, b):
    """The distance of two problems (see the module's text); None when they are not comparable."""
    if not isinstance(a, dict) or not isinstance(b, dict) or set(a) != set(b):
        return None
    total = 0.0
    for k in a:
        d = _add(a[k], b[k])
        if d is None:
            return None
        total += d
    return math.sqrt(total)


def _plain(problem):
    """A problem's values as JSON would carry them (tuples → lists, numpy scalars → numbers)."""
    return json.loads(json.dumps(problem, default=_json_default))


def _json_default(v):
    if hasattr(v, "tolist"):
        return v.tolist()
    if isinstance(v, tuple):
        return list(v)
    raise TypeError("%r is not a problem value (numbers, strings, booleans or lists)" % (v,))


def _field(value, name):
    text = str(value)
    if "\t" in text or "\n" in text or "\r" in text:
        raise TableError("%s %r holds a tab or line break" % (name, text))
    return text


def format_row(entry):
    """One table line (no newline) of a GET /v1/best/entries entry."""
    fields = []
    for col in COLUMNS:
        v = entry.get(col)
        if col in ("problem", "config"):
            fields.append(json.dumps(v, separators=(",", ":"), sort_keys=True))
        elif col == "time_ms":
            fields.append(repr(float(v)))
        else:
            fields.append(_field("" if v is None else v, col))
    return "\t".join(fields)


def write_table(path, entries):
    """Writes entries (newest first) to path through a temporary file renamed over it."""
    lines = [FORMAT_LINE, "\t".join(COLUMNS)] + [format_row(e) for e in entries]
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".ktune-table-", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return len(entries)


class Table:
    def __init__(self, rows):
        self.rows = rows

    @classmethod
    def load(cls, path):
        with open(path, encoding="utf-8") as f:
            return cls.parse(f.read(), path)

    @classmethod
    def parse(cls, text, origin="<table>"):
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if len(lines) < 2 or lines[0] != FORMAT_LINE:
            raise TableError("%s: not a ktune table (the first line must be %r)" % (origin, FORMAT_LINE))
        if lines[1] != "\t".join(COLUMNS):
            raise TableError("%s:2: the columns must be %s" % (origin, ", ".join(COLUMNS)))
        rows = []
        for n, line in enumerate(lines[2:], start=3):
            if line.startswith("#") or line == "":
                continue
            parts = line.split("\t")
            if len(parts) != len(COLUMNS):
                raise TableError("%s:%d: %d fields, not %d" % (origin, n, len(parts), len(COLUMNS)))
            row = dict(zip(COLUMNS, parts))
            try:
                row["time_ms"] = float(row["time_ms"])
                row["problem"] = json.loads(row["problem"])
                row["config"] = json.loads(row["config"])
            except ValueError as e:
                raise TableError("%s:%d: %s" % (origin, n, e)) from None
            if not isinstance(row["problem"], dict) or not isinstance(row["config"], dict):
                raise TableError("%s:%d: problem and config must be JSON objects" % (origin, n))
            rows.append(row)
        return cls(rows)

    def __len__(self):
        return len(self.rows)

    def lookup(self, kernel, device_class, problem=None, kernel_hash=None):
        """A Lookup (exact, else the nearest problem), or None when the table has nothing comparable."""
        problem = _plain(problem or {})
        rows = [r for r in self.rows if r["kernel"] == kernel and r["device_class"] == device_class
                and (kernel_hash is None or r["kernel_hash"] == kernel_hash)]
        if not rows:
            return None
        version = (rows[0]["kernel_hash"], rows[0]["toolchain"])
        rows = [r for r in rows if (r["kernel_hash"], r["toolchain"]) == version]
        best, best_d = None, None
        for r in rows:
            if _same(problem, r["problem"]):
                return Lookup(r, True, 0.0)
            d = problem_distance(problem, r["problem"])
            if d is None or d <= 0.0:
                continue
            if best_d is None or d < best_d:
                best, best_d = r, d
        return Lookup(best, False, best_d) if best is not None else None
