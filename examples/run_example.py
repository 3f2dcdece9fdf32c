"""Runs one example of examples/ against a real ktuned (ctest's example_* tests): starts ktuned with
its embedded PostgreSQL in a throw-away folder (tests/integration/ktuned_fixture.py), runs the
example's command with KTUNE_SERVER set to it and clients/python on PYTHONPATH, prints what the
example printed, and exits with the example's status (77: skipped, the example said why).

  python3 examples/run_example.py --ktuned build/ktuned --source-dir . -- CMD ARGS..."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
from ktuned_fixture import Ktuned, parse_args  # noqa: E402


def main():
    args = parse_args()
    cmd = sys.argv[1:]
    if cmd[:1] == ["--"]:
        cmd = cmd[1:]
    if not cmd:
        print("run_example: a command is required after --", file=sys.stderr)
        return 2
    k = Ktuned(args.ktuned, args.source_dir,
               extra=["--workers", "1", "--kernels", os.path.join(args.source_dir, "kernels")])
    k.start()
    rc = 1
    try:
        env = dict(os.environ, KTUNE_SERVER="http://" + k.address,
                   KTUNE_CLI=os.path.join(os.path.dirname(os.path.abspath(args.ktuned)), "ktune"),
                   PYTHONPATH=os.path.join(args.source_dir, "clients", "python"))
        env.pop("KTUNE_TOKEN", None)
        p = subprocess.run(cmd, env=env, cwd=args.source_dir, timeout=600)
        rc = p.returncode
    finally:
        stop_rc = k.stop()
        k.cleanup()
    if stop_rc != 0:
        print("run_example: ktuned exited with %s on SIGTERM" % stop_rc, file=sys.stderr)
        return 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
