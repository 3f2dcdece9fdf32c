#!/usr/bin/env python3
"""tools/check_banned.py can fail: on a fake tree that calls banned functions it exits 1 naming each
file:line and the replacement; names that only contain a banned one (snprintf, strtok_r, my_atoi),
members (p->atol), comments and string literals pass; a clean tree exits 0. Run by ctest as
tools_check_banned."""
import os
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = os.path.join(REPO, "tools", "check_banned.py")

CLEAN = (
    '#include <stdio.h>\n'
    '/* atoi(x) in a comment, sprintf(buf) too */\n'
    'static int my_atoi(const char *s) { return s[0]; }\n'
    'int f(char *b, struct s *p, char *save) {\n'
    '    snprintf(b, 4, "%s", "strcpy(a, b)");\n'
    '    char *t = strtok_r(b, " ", &save);\n'
    '    return my_atoi(t) + (int)p->atol;\n'
    '}\n'
)
BAD = (
    'int g(char *d, const char *s) {\n'
    '    strcpy(d, s);\n'
    '    int n = atoi(s);\n'
    '    sprintf(d, "%d", n);\n'
    '    return n;\n'
    '}\n'
)


def run(tree):
    with tempfile.TemporaryDirectory() as root:
        for rel, text in tree.items():
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        p = subprocess.run([sys.executable, CHECK, root], capture_output=True, text=True)
        return p.returncode, p.stdout + p.stderr


class CheckBanned(unittest.TestCase):
    def test_clean_tree_passes(self):
        rc, out = run({"service/core/a.c": CLEAN, "tests/unit/t.c": CLEAN})
        self.assertEqual(rc, 0, out)

    def test_each_banned_call_is_named(self):
        rc, out = run({"service/core/a.c": CLEAN, "service/store/b.c": BAD})
        self.assertEqual(rc, 1, out)
        for line, name in ((2, "strcpy"), (3, "atoi"), (4, "sprintf")):
            self.assertIn("service/store/b.c:%d" % line, out)
            self.assertIn(name, out)
        self.assertNotIn("service/core/a.c", out)

    def test_kernels_and_tests_are_checked_too(self):
        rc, out = run({"kernels/k/cpu.c": BAD, "tests/unit/t.c": BAD})
        self.assertEqual(rc, 1, out)
        self.assertIn("kernels/k/cpu.c:2", out)
        self.assertIn("tests/unit/t.c:3", out)


if __name__ == "__main__":
    unittest.main()
