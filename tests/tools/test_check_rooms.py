#!/usr/bin/env python3
"""tools/check_rooms.py can fail: on a fake tree with a crossed room boundary and the wrong include
styles, or room tables in ARCHITECTURE.md / service/README.md that disagree with the declared rules,
it exits 1 with one line per violation; on a clean fake tree it exits 0. Also checks that
tools/fix_includes.py turns the styles into "room/file.h" (and nothing else). Run by ctest as
tools_check_rooms."""
import os
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = os.path.join(REPO, "tools", "check_rooms.py")
FIX = os.path.join(REPO, "tools", "fix_includes.py")

RULES = "core:\nspace: core\nstore: core\nktuned: core space store\n"

CLEAN = {
    "service/core/error.h": "#pragma once\n",
    "service/core/errors.def": "",
    "service/core/error.c": '#include "core/error.h"\n#include "core/errors.def"\n',
    "service/space/space.h": '#pragma once\n#include "core/error.h"\n',
    "service/space/space.c": '#include "space/space.h"\n\n#include <stdlib.h>\n',
    "service/store/db.h": '#pragma once\n#include "core/error.h"\n',
    "service/store/db.c": '#include "store/db.h"\n#include "stdio_like.h"\n',
    "service/service.h": '#pragma once\n#include "store/db.h"\n',
    "service/ktuned.c": '#include "service.h"\n#include "space/space.h"\n',
    "tests/unit/test_util.h": '#pragma once\n#include "space/space.h"\n',
    "tests/unit/test_space.c": '#include "test_util.h"\n#include "service.h"\n',
    "ARCHITECTURE.md": ("# House\n\n| room | owns | may use | never touches |\n|---|---|---|---|\n"
                        "| `core/` | errors | nothing (jansson, libm) | any other room |\n"
                        "| `space/` | spaces | core | DB |\n"
                        "| `store/` | SQL | `core` (libpq) | HTTP |\n\nAfter the table.\n"),
    "service/README.md": ("# service/\n\n| room | owns |\n|---|---|\n| `core/` | errors |\n"
                          "| `space/` | spaces |\n| `store/` | SQL |\n"),
}


def write_tree(root, files):
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    rules = os.path.join(root, "room_rules.txt")
    with open(rules, "w", encoding="utf-8") as f:
        f.write(RULES)
    return rules


def run(tool, *args):
    return subprocess.run([sys.executable, tool] + list(args), capture_output=True, text=True)


class CheckRooms(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_clean_tree_passes(self):
        rules = write_tree(self.root, CLEAN)
        r = run(CHECK, "--rules", rules, "--root", self.root)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("check_rooms: clean", r.stdout)

    def test_violations_fail_with_one_line_each(self):
        files = dict(CLEAN)
        # store may use core only: a space header is a crossed boundary (line 2).
        files["service/store/db.c"] = '#include "store/db.h"\n#include "space/space.h"\n'
        # ../ style and the bare name inside the room are both the wrong style.
        files["service/space/space.c"] = '#include "../core/error.h"\n#include "space.h"\n'
        # both at once: ../ to a room store may not use.
        files["service/store/bad.c"] = '#include <stdio.h>\n\n#include "../space/space.h"\n'
        # a test including a service header by a relative path.
        files["tests/unit/test_space.c"] = '#include "test_util.h"\n#include "../../service/service.h"\n'
        rules = write_tree(self.root, files)
        r = run(CHECK, "--rules", rules, "--root", self.root)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(r.stdout.splitlines(), [
            'service/space/space.c:1: write "core/error.h"',
            'service/space/space.c:2: write "space/space.h"',
            "service/store/bad.c:3: includes space/space.h, but room store may use: core",
            'service/store/bad.c:3: write "space/space.h"',
            "service/store/db.c:2: includes space/space.h, but room store may use: core",
            'tests/unit/test_space.c:2: write "service.h"',
        ])
        self.assertIn("6 violations (2 room, 4 style", r.stderr)

    def test_room_without_rule_fails(self):
        files = dict(CLEAN)
        files["service/bench/bench.c"] = '#include "core/error.h"\n'
        rules = write_tree(self.root, files)
        r = run(CHECK, "--rules", rules, "--root", self.root)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("service/bench/bench.c:1: room bench has no rule in room_rules.txt", r.stdout)

    def test_top_level_header_needs_a_rule(self):
        files = dict(CLEAN)
        files["service/store/db.c"] = '#include "store/db.h"\n#include "service.h"\n'
        rules = write_tree(self.root, files)
        r = run(CHECK, "--rules", rules, "--root", self.root)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stdout.splitlines(),
                         ["service/store/db.c:2: includes service.h, but room store may use: core"])

    def test_room_tables_follow_the_declarations(self):
        files = dict(CLEAN)
        # space's row forgets nothing but claims store; store's row misses core's use; the service
        # README has no store row and a row for a room nobody declared.
        files["ARCHITECTURE.md"] = CLEAN["ARCHITECTURE.md"].replace(
            "| `space/` | spaces | core | DB |", "| `space/` | spaces | core, store (SQL) | DB |").replace(
            "| `store/` | SQL | `core` (libpq) | HTTP |", "| `store/` | SQL | nothing | HTTP |")
        files["service/README.md"] = CLEAN["service/README.md"].replace("| `store/` | SQL |",
                                                                        "| `model/` | predictors |")
        rules = write_tree(self.root, files)
        r = run(CHECK, "--rules", rules, "--root", self.root)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(r.stdout.splitlines(), [
            'ARCHITECTURE.md:6: room space: "may use" says core, store; CMakeLists.txt declares core '
            "(not declared: store)",
            'ARCHITECTURE.md:7: room store: "may use" says nothing; CMakeLists.txt declares core (missing: core)',
            "service/README.md: room store (declared in CMakeLists.txt) has no row",
            "service/README.md:7: row for room model, which CMakeLists.txt does not declare",
        ])
        self.assertIn("4 in the room tables", r.stderr)
        os.remove(os.path.join(self.root, "service/README.md"))
        r = run(CHECK, "--rules", rules, "--root", self.root)
        self.assertIn("service/README.md: missing (it carries the room table)", r.stdout)

    def test_fix_includes_rewrites_to_the_one_style(self):
        files = dict(CLEAN)
        files["service/space/space.c"] = ('#include "space.h"  /* own header */\n\n#include <stdlib.h>\n'
                                          '\n#include "../core/error.h"\n#include "missing.h"\n')
        files["tests/unit/test_space.c"] = '#include "test_util.h"\n#include "../../service/service.h"\n'
        rules = write_tree(self.root, files)
        r = run(FIX, "--root", self.root, "--no-format")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("rewrote 3 includes in 2 files", r.stdout)
        with open(os.path.join(self.root, "service/space/space.c"), encoding="utf-8") as f:
            self.assertEqual(f.read(), '#include "space/space.h"  /* own header */\n\n#include <stdlib.h>\n'
                                       '\n#include "core/error.h"\n#include "missing.h"\n')
        with open(os.path.join(self.root, "tests/unit/test_space.c"), encoding="utf-8") as f:
            self.assertEqual(f.read(), '#include "test_util.h"\n#include "service.h"\n')
        r = run(CHECK, "--rules", rules, "--root", self.root)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = run(FIX, "--root", self.root, "--no-format")
        self.assertIn("rewrote 0 includes in 0 files", r.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
