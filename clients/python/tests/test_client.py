"""ktune.Client and friends without a server: configuration from the environment as the CLI's,
an unreachable server as KtuneError, the query and space encodings, tell's checks, the decorator's
key and name, tune_kernel's plain refusal. (Answers of a real ktuned: tests/integration/
test_client_python.py.)"""
import os
import socket
import unittest
from unittest import mock

import ktune
from ktune.autotune import autotune, kernel_name_of
from ktune.client import Trial, _query_value, space_body
from ktune.http import Connection


class ConfigTest(unittest.TestCase):
    def test_defaults_and_environment(self):
        with mock.patch.dict(os.environ, {}, clear=True):
            c = Connection()
            self.assertEqual((c.server, c.token, c.timeout), ("http://127.0.0.1:8080", None, 60.0))
        env = {"KTUNE_SERVER": "http://example.test:9000/", "KTUNE_TOKEN": "t0k", "KTUNE_TIMEOUT": "5"}
        with mock.patch.dict(os.environ, env, clear=True):
            c = Connection()
            self.assertEqual((c.server, c.token, c.timeout), ("http://example.test:9000", "t0k", 5.0))
            # An argument wins over its variable.
            c = Connection("https://other.test", "x", 2)
            self.assertEqual((c.server, c.token, c.timeout), ("https://other.test", "x", 2.0))
        for bad in ("ftp://x", "127.0.0.1:8080", "http://"):
            with self.assertRaises(ValueError):
                Connection(bad)
        with self.assertRaises(ValueError):
            Connection("http://x.test", "two\nlines")
        with mock.patch.dict(os.environ, {"KTUNE_TIMEOUT": "soon"}, clear=True):
            with self.assertRaises(ValueError):
                Connection()

    def test_unreachable(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()  # nothing listens there now
        client = ktune.Client("http://127.0.0.1:%d" % port, timeout=5)
        with self.assertRaises(ktune.KtuneError) as cm:
            client.best("gemm", device="cpu")
        e = cm.exception
        self.assertEqual((e.status, e.code), (0, "unreachable"))
        self.assertIn("KTUNE_SERVER", e.hint)
        self.assertIn("127.0.0.1:%d" % port, str(e))


class EncodingTest(unittest.TestCase):
    def test_query_values(self):
        self.assertEqual(_query_value([4096, 4096]), "4096,4096")
        self.assertEqual(_query_value(True), "true")
        self.assertEqual(_query_value(0.1), "0.1")
        self.assertEqual(_query_value((1, 2.5)), "1,2.5")
        self.assertEqual(_query_value("x"), "x")

    def test_space(self):
        self.assertEqual(space_body({"a": [1, 2], "b": (3,)}, "a <= b", {"a": 1, "b": 3}),
                         {"parameters": [{"name": "a", "values": [1, 2]}, {"name": "b", "values": [3]}],
                          "restrictions": ["a <= b"], "default": {"a": 1, "b": 3}})
        full = {"parameters": [{"name": "a", "values": [1]}], "restrictions": ["a > 0"]}
        self.assertEqual(space_body(full), full)
        with self.assertRaises(TypeError):
            space_body([("a", [1])])

    def test_accept_checked(self):
        c = ktune.Client("http://127.0.0.1:9")
        with self.assertRaises(ValueError):
            c.best("k", device_class="c", accept=("guessed",))
        with self.assertRaises(ValueError):
            c.best("k", device_class="c", accept=())


class TellTest(unittest.TestCase):
    def test_checks_before_sending(self):
        sent = []

        class Session:
            def _tell(self, items):
                sent.extend(items)
                return ["recorded"] * len(items)

        t = Trial(Session(), {"id": 7, "seq": 1, "config": {"a": 1}})
        for bad in (dict(), dict(time_ms=0), dict(time_ms=-1), dict(time_ms=float("nan")),
                    dict(time_ms=float("inf")), dict(time_ms=1, status="fine")):
            with self.assertRaises(ValueError):
                t.tell(**bad)
        self.assertEqual(sent, [])
        self.assertEqual(t.tell(1.5), "recorded")
        self.assertEqual(t.tell(status="compile_error"), "recorded")
        self.assertEqual(t.tell(2, metrics={"gflops": 3}), "recorded")
        self.assertEqual(sent, [{"id": 7, "status": "ok", "time_ms": 1.5},
                                {"id": 7, "status": "compile_error"},
                                {"id": 7, "status": "ok", "time_ms": 2.0, "metrics": {"gflops": 3.0}}])


class Shape:
    shape = (3, 4)


class AutotuneTest(unittest.TestCase):
    def test_key_and_name(self):
        def outer():
            @autotune(space={"block": [1, 2]}, key=["n", "x"], client=ktune.Client("http://127.0.0.1:9"),
                      device_class="cpu:X:256")
            def f(x, n, scale=2.0, block=1):
                return block
            return f

        f = outer()
        self.assertEqual(f.kernel, "AutotuneTest.test_key_and_name._locals_.outer._locals_.f")
        self.assertEqual(f.problem_of((3,), {"n": 5}), {"n": 5, "x": 3})
        self.assertEqual(f.problem_of((True, 2.5), {}), {"n": 2.5, "x": 1})
        for bad in ([1, 2], "s", Shape()):
            with self.assertRaises(TypeError):
                f.problem_of((bad,), {"n": 5})
        # A configuration kept in memory is used without a request (the server here is unreachable).
        f.cache['{"n": 5, "x": 3}'] = {"block": 2}
        self.assertEqual(f(3, n=5), 2)
        self.assertEqual(kernel_name_of(len), "len")


class TuneKernelTest(unittest.TestCase):
    def test_not_yet(self):
        with self.assertRaises(NotImplementedError) as cm:
            ktune.tune_kernel("vadd", "void vadd(float *c) {}", 1024, [], {"block": [1]})
        self.assertIn("POST /v1/kernels", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
