#!/usr/bin/env python3
"""Rewrites every include of a service header into the one style, "room/file.h" from service/
(`#include "../core/error.h"` and, inside core/, `#include "error.h"` both become
`#include "core/error.h"`), in service/, tests/ and kernels/. Mechanical: only the quoted name
changes, lines keep their order (.clang-format has SortIncludes: false), includes that are not
service files (local test helpers, system headers) are left alone. Changed files are then run through
clang-format when it is installed (--no-format to skip). Idempotent: re-run it after a merge.

  python3 tools/fix_includes.py [--root .] [--dry-run] [--no-format]
"""
import argparse
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_rooms  # noqa: E402


def fix_file(root, path):
    """New text of path with its service includes in the one style, and how many it changed."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    changed = 0
    for i, line in enumerate(lines):
        m = check_rooms.INCLUDE_RE.match(line)
        if not m:
            continue
        target = check_rooms.resolve(root, path, m.group(1))
        if target is None or target == m.group(1):
            continue
        lines[i] = line[: m.start(1)] + target + line[m.end(1):]
        changed += 1
    return "\n".join(lines), changed


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=".", help="source tree (holds service/)")
    ap.add_argument("--dry-run", action="store_true", help="list what would change, write nothing")
    ap.add_argument("--no-format", action="store_true", help="do not run clang-format afterwards")
    args = ap.parse_args(argv)
    changed_files = []
    total = 0
    for top in (check_rooms.RULED_DIR,) + check_rooms.STYLE_ONLY_DIRS:
        for path in check_rooms.source_files(args.root, top):
            text, n = fix_file(args.root, path)
            if not n:
                continue
            total += n
            changed_files.append(path)
            print(f"{os.path.relpath(path, args.root)}: {n} include(s)")
            if not args.dry_run:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
    if changed_files and not args.dry_run and not args.no_format:
        clang_format = shutil.which("clang-format")
        if clang_format:
            subprocess.run([clang_format, "-i"] + changed_files, check=True)
        else:
            print("fix_includes: clang-format not found; run `make format`", file=sys.stderr)
    verb = "would rewrite" if args.dry_run else "rewrote"
    print(f"fix_includes: {verb} {total} includes in {len(changed_files)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
