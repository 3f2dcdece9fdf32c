"""Process trees from /proc, for the benches that count what ktuned's processes cost (standard
library only; not a bench itself: `make bench` runs tests/bench/bench_*.py).

table() reads every process's parent and CPU times once; descendants() walks a tree in it. The
embedded PostgreSQL's postmaster is no descendant of ktuned (pg_ctl starts it detached): callers
name both roots."""
import os


class Proc:
    __slots__ = ("own_s", "reaped_s")

    def __init__(self, own_s, reaped_s):
        self.own_s = own_s        # user + system CPU seconds of the process itself
        self.reaped_s = reaped_s  # of the children it reaped (its cutime + cstime)


def table():
    """(kids, procs): kids maps a pid to its live children's pids, procs a pid to its Proc; None
    without /proc. A process that ends while it is read is left out."""
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return None
    tck = os.sysconf("SC_CLK_TCK")
    kids, procs = {}, {}
    for pid in pids:
        try:
            with open("/proc/%d/stat" % pid) as f:
                stat = f.read()
        except OSError:
            continue
        rest = stat[stat.rindex(")") + 2:].split()  # the command may hold spaces and parentheses
        kids.setdefault(int(rest[1]), []).append(pid)
        procs[pid] = Proc((int(rest[11]) + int(rest[12])) / tck, (int(rest[13]) + int(rest[14])) / tck)
    return kids, procs


def descendants(kids, *roots):
    """The pids of roots (falsy ones skipped) and every process below them, each once."""
    seen, todo = set(), [r for r in roots if r]
    while todo:
        pid = todo.pop()
        if pid not in seen:
            seen.add(pid)
            todo += kids.get(pid, [])
    return seen
