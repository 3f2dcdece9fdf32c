"""`pip install ./clients/python` offline: the in-tree build backend (ktune_build.py) needs no index,
no setuptools and no wheel package. Installs into a temporary folder with --no-index and imports
the installed copy in a fresh interpreter."""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class InstallTest(unittest.TestCase):
    def test_pip_install_offline(self):
        with tempfile.TemporaryDirectory(prefix="ktune-pip-") as target:
            env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
            env.pop("PYTHONPATH", None)
            p = subprocess.run([sys.executable, "-m", "pip", "install", "--no-index", "--target", target,
                                HERE], capture_output=True, text=True, env=env, timeout=120, cwd=target)
            self.assertEqual(p.returncode, 0, p.stdout[-2000:] + p.stderr[-2000:])
            code = "import ktune, sys; print(ktune.__file__); print(ktune.__version__)"
            p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(
                env, PYTHONPATH=target), cwd=target, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            path, version = p.stdout.split()
            self.assertTrue(path.startswith(target), path)
            self.assertEqual(version, "0.1.0")
            dist = [d for d in os.listdir(target) if d.endswith(".dist-info")]
            self.assertEqual(dist, ["ktune-0.1.0.dist-info"])
            self.assertIn("RECORD", os.listdir(os.path.join(target, dist[0])))


if __name__ == "__main__":
    unittest.main()
