"""ktune.Client and friends without a server: configuration from the environment as the CLI's,
an unreachable server as KtuneError, the query and space encodings, tell's checks, the decorator's
key and name, the kernel spec tune_kernel builds and its refusals. (Answers of a real ktuned:
tests/integration/test_client_python.py.)"""
import array
import base64
import os
import socket
import struct
import unittest
from unittest import mock

import ktune
from ktune.autotune import autotune, kernel_name_of
from ktune.client import Trial, _query_value, space_body
from ktune.kernel_tuner import Buffer, build_spec, parse_signature
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
    """build_spec: the kernel spec a tune_kernel call registers (array.array stands for numpy here:
    the package never imports numpy)."""
    SRC = "/* c = a + s*b */\nvoid vadd(float *c, const float *a, float const *b, double s, int n)\n{ }\n"

    def spec(self, **kw):
        args = kw.pop("arguments", [array.array("f", [0.0] * 8), array.array("f", range(8)),
                                    array.array("f", [2.0] * 8), 0.5, 8])
        return build_spec("vadd", self.SRC, kw.pop("problem_size", 8), args,
                          kw.pop("tune_params", {"B": [1, 2, 4]}), **kw)

    def test_arguments_become_buffers_and_scalars(self):
        spec, files, notes = self.spec(restrictions=["B > 1"])
        self.assertEqual(files, {"kernel.c": self.SRC})
        self.assertEqual(notes["names"], ["c", "a", "b", "s", "n"])
        self.assertEqual([(b["name"], b["role"], b["dtype"], b["elements"]) for b in spec["buffers"]],
                         [("c", "output", "f32", "8"), ("a", "input", "f32", "8"),
                          ("b", "input", "f32", "8")])
        # the inputs' data travels: each input names its uploaded file, raw little-endian values
        self.assertEqual(spec["buffers"][1]["init"], {"kind": "data", "file": "a.bin"})
        self.assertEqual(sorted(notes["data"]), ["a.bin", "b.bin"])
        self.assertEqual(notes["data"]["a.bin"]["dtype"], "f32")
        self.assertEqual(base64.b64decode(notes["data"]["b.bin"]["data"]), struct.pack("<8f", *[2.0] * 8))
        self.assertTrue(notes["uploaded"])
        # not uploaded: the server draws inputs like them
        drawn, _, dnotes = self.spec(restrictions=["B > 1"], upload=False)
        self.assertEqual(drawn["buffers"][1]["init"], {"kind": "iota"})
        self.assertEqual(drawn["buffers"][2]["init"], {"kind": "constant", "value": 2.0})
        self.assertEqual((dnotes["data"], dnotes["uploaded"]), ({}, False))
        self.assertEqual(spec["scalars"], [{"name": "s", "type": "f64", "value": "0.5"},
                                           {"name": "n", "type": "i32", "value": "8"}])
        cpu = spec["variants"]["cpu"]
        self.assertEqual((cpu["entry"], cpu["arguments"]), ("vadd", ["c", "a", "b", "s", "n"]))
        self.assertEqual(cpu["default"], {"B": 2})  # the first configuration the restriction allows
        self.assertEqual(spec["problem"], [{"name": "size_x", "min": 8, "max": 8, "default": 8}])
        self.assertEqual(spec["verify"], {"kind": "none"})  # no answer: nothing compared, as Kernel Tuner

    def test_answer_names_outputs_and_verifies_against_it(self):
        spec, _, notes = self.spec(answer=[None, array.array("f", [1.0] * 8), None, None, None],
                                   atol=1e-3)
        self.assertEqual([b["role"] for b in spec["buffers"]], ["input", "output", "input"])
        self.assertEqual((spec["verify"], spec["tolerance"]["atol"]),
                         ({"kind": "answer", "buffers": {"a": {"file": "a.answer.bin"}}}, 1e-3))
        self.assertEqual(base64.b64decode(notes["data"]["a.answer.bin"]["data"]),
                         struct.pack("<8f", *[1.0] * 8))
        self.assertEqual(sorted(notes["data"]), ["a.answer.bin", "b.bin", "c.bin"])  # inputs too
        spec, _, notes = self.spec(answer=[None, array.array("f", [1.0] * 8), None, None, None],
                                   verify="default")
        self.assertEqual((spec["verify"], sorted(notes["data"])), ({"kind": "default"}, ["b.bin", "c.bin"]))
        with self.assertRaises(ValueError):  # an answer of another size than its argument
            self.spec(answer=[None, array.array("f", [1.0] * 7), None, None, None])
        # without numpy: raw bytes with their dtype
        spec, _, notes = self.spec(arguments=[array.array("f", [0.0] * 2), Buffer(struct.pack("<2f", 1, 2), "f32"),
                                              Buffer(bytes(8), "f32"), 0.5, 2], problem_size=2)
        self.assertEqual(spec["buffers"][1]["elements"], "2")
        self.assertEqual(base64.b64decode(notes["data"]["a.bin"]["data"]), struct.pack("<2f", 1, 2))
        with self.assertRaises(ValueError):
            self.spec(arguments=[array.array("f", [0.0] * 2), Buffer(bytes(7), "f32"),
                                 Buffer(bytes(8), "f32"), 0.5, 2], problem_size=2)
        with self.assertRaises(ValueError):
            self.spec(answer=[None, None, None, 1.0, None])  # a scalar's answer
        with self.assertRaises(ValueError):
            self.spec(answer=[None])

    def test_dtypes_and_uniform_init(self):
        args = [array.array("d", [0.0] * 4), array.array("i", [3, -2, 7, 0]), array.array("b", [1] * 4),
                2**40, 1.0]
        src = "void vadd(double *c, const int *a, const signed char *b, long long s, double n) { }"
        spec, _, _ = build_spec("vadd", src, (2, 2), args, {"B": [1]}, upload=False)
        self.assertEqual([b["dtype"] for b in spec["buffers"]], ["f64", "i32", "i8"])
        self.assertEqual(spec["buffers"][1]["init"], {"kind": "uniform", "min": -2, "max": 7})
        self.assertEqual([s["type"] for s in spec["scalars"]], ["i64", "f64"])
        self.assertEqual([p["name"] for p in spec["problem"]], ["size_x", "size_y"])
        spec, _, _ = build_spec("vadd", src, 4, [array.array("d", [0.0] * 4),
                                                 array.array("i", [0] * 4), array.array("b", [1] * 4),
                                                 2, 1.0], {"B": [1]}, upload=False)
        self.assertEqual(spec["buffers"][1]["init"], {"kind": "zeros"})
        spec, _, _ = build_spec("vadd", src.replace("double *c", "const double *c")
                                .replace("const int *a", "int *a"),
                                4, [array.array("d", [-0.25, 1.5, 0.5, 0.1])] + args[1:], {"B": [1]},
                                upload=False)
        self.assertEqual(spec["buffers"][0]["init"], {"kind": "uniform", "min": -1, "max": 2})

    def test_refusals_say_what_to_do(self):
        with self.assertRaises(ValueError) as cm:
            self.spec(arguments=[1, 2])
        self.assertIn("takes 5 parameters", str(cm.exception))
        with self.assertRaises(ValueError) as cm:  # no output: every pointer const, no answer
            build_spec("f", "void f(const float *a) { }", 4, [array.array("f", [0.0] * 4)], {"B": [1]})
        self.assertIn("const", str(cm.exception))
        with self.assertRaises(TypeError) as cm:
            self.spec(metrics={"GFLOP/s": lambda p: 1})
        self.assertIn("string", str(cm.exception))
        with self.assertRaises(TypeError):
            self.spec(restrictions=[lambda p: True])
        with self.assertRaises(ValueError):
            self.spec(restrictions=["B > 8"])  # no valid configuration
        with self.assertRaises(ValueError):
            self.spec(verify="answer")
        with self.assertRaises(NotImplementedError) as cm:
            ktune.tune_kernel("vadd", self.SRC, 8, [], {"B": [1]}, lang="CUDA")
        self.assertIn("C functions only", str(cm.exception))
        with self.assertRaises(TypeError) as cm:
            ktune.tune_kernel("vadd", self.SRC, 8, [], {"B": [1]}, grid_div_x=["B"])
        self.assertIn("grid_div_x", str(cm.exception))

    def test_metrics_as_the_server_reads_them(self):
        spec, _, notes = self.spec(metrics={"GFLOP/s": "2*n/(time*1e6)", "time x": "time"})
        self.assertEqual(spec["metrics"], [{"name": "GFLOP_s", "value": "2*8/(time_ms*1e6)"},
                                           {"name": "time_x", "value": "time_ms"}])
        self.assertEqual(notes["metric_names"], {"GFLOP_s": "GFLOP/s", "time_x": "time x"})

    def test_signature_parsing(self):
        self.assertEqual(parse_signature("int f(float a[], const double *restrict b, int n) {", "f"),
                         [("a", False), ("b", True), ("n", False)])
        self.assertEqual(parse_signature("void f(float *const c) {}", "f"), [("c", False)])
        self.assertIsNone(parse_signature("void g(int x) {}", "f"))

if __name__ == "__main__":
    unittest.main()
