#!/usr/bin/env python3
"""Room rules of service/: fails when a file includes a header of a room its room may not use, or
writes a service include in any other style than "room/file.h" (from service/).

The rules come from CMakeLists.txt (kt_room(<room> USES ...)), written at configure time to
<build>/room_rules.txt, one line per room: "room: dep dep ...". A room may include headers of its own
room and of the rooms it declares (direct uses; what those use is not inherited). Files at the top of
service/ (ktuned's main and wiring) are the room "ktuned".

Also checks the two room tables against the same rules (issue 28: one source, checked views):
ARCHITECTURE.md's "room | owns | may use | never touches" table lists every declared room once, its
"may use" naming exactly the declared uses (what is in parentheses is libraries or detail), and
service/README.md's "room | owns" table lists every room.

Scanned: every .c and .h under service/ (rules and style), and under tests/ and kernels/ (style only:
an include that resolves to a file of service/ must be written "room/file.h"; local helpers such as
"search_test_util.h" are not service files and are left alone).

An include "x" in file F resolves as the compiler does: F's folder first, then service/ (the one
include directory). Output: one line per violation, exit 1; clean: one summary line, exit 0.

  python3 tools/check_rooms.py --rules build/room_rules.txt [--root .] [--print-uses]
"""
import argparse
import os
import re
import sys

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
SOURCE_EXTS = (".c", ".h")
RULED_DIR = "service"
STYLE_ONLY_DIRS = ("tests", "kernels")
TOP_ROOM = "ktuned"


def read_rules(path):
    """{room: set of rooms it may use} from room_rules.txt."""
    rules = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            if ":" not in line:
                raise ValueError(f"{path}:{n}: expected 'room: dep dep ...', got {line!r}")
            room, deps = line.split(":", 1)
            rules[room.strip()] = set(deps.split())
    return rules


def room_of(service_rel):
    """Room of a path relative to service/ ('store/db.h' -> 'store', 'service.h' -> 'ktuned')."""
    parts = service_rel.split("/")
    return parts[0] if len(parts) > 1 else TOP_ROOM


def source_files(root, top):
    base = os.path.join(root, top)
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.endswith(SOURCE_EXTS):
                yield os.path.join(dirpath, name)


def includes(path):
    """(line number, included text, start, end of the text in the line) of each #include "..."."""
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            m = INCLUDE_RE.match(line)
            if m:
                yield n, m.group(1), line, m.start(1), m.end(1)


def resolve(root, path, text):
    """The service/-relative path of the file an include names, or None when it is not a file of
    service/ (a local test helper, a system header written with quotes, a generated file)."""
    service = os.path.realpath(os.path.join(root, RULED_DIR))
    for base in (os.path.dirname(path), service):
        cand = os.path.realpath(os.path.join(base, text))
        if os.path.isfile(cand):
            rel = os.path.relpath(cand, service)
            if rel.startswith(".." + os.sep) or rel == "..":
                return None
            return rel.replace(os.sep, "/")
    return None


def check(root, rules):
    """(violations as (file, line, message), uses {room: set of rooms it includes}, counts)."""
    out = []
    uses = {}
    counts = {"files": 0, "includes": 0, "room": 0, "style": 0, "norule": 0}
    unruled = set()
    tops = [(RULED_DIR, True)] + [(d, False) for d in STYLE_ONLY_DIRS]
    for top, ruled in tops:
        for path in source_files(root, top):
            counts["files"] += 1
            rel_file = os.path.relpath(path, root).replace(os.sep, "/")
            room = room_of(os.path.relpath(path, os.path.join(root, RULED_DIR)).replace(os.sep, "/"))
            for n, text, _line, _s, _e in includes(path):
                target = resolve(root, path, text)
                if target is None:
                    continue
                counts["includes"] += 1
                if text != target:
                    counts["style"] += 1
                    out.append((rel_file, n, f'write "{target}"'))
                if not ruled:
                    continue
                troom = room_of(target)
                if troom == room:
                    continue
                uses.setdefault(room, set()).add(troom)
                if room not in rules:
                    counts["norule"] += 1
                    if room not in unruled:
                        unruled.add(room)
                        out.append((rel_file, n, f"room {room} has no rule in room_rules.txt "
                                    f"(declare it: kt_room({room} USES ...) in CMakeLists.txt)"))
                    continue
                if troom not in rules[room]:
                    counts["room"] += 1
                    allowed = " ".join(sorted(rules[room])) or "nothing"
                    out.append((rel_file, n, f"includes {target}, but room {room} may use: {allowed}"))
    out.sort()
    return out, uses, counts


ROOM_CELL_RE = re.compile(r"^`([a-z_]+)/`$")
ARCH_DOC = "ARCHITECTURE.md"
ROOMS_DOC = "service/README.md"


def table_rooms(path, header_cells):
    """{room: (line number, cells)} of the table in a markdown file whose header row starts with
    header_cells, rooms written `room/` in its first column; None when no such table is found."""
    rows = None
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else None
            if rows is None:
                if cells and cells[:len(header_cells)] == header_cells:
                    rows = {}
                continue
            if cells is None:
                break
            m = ROOM_CELL_RE.match(cells[0])
            if m:
                rows[m.group(1)] = (n, cells)
    return rows


def may_use_rooms(cell):
    """The rooms a "may use" cell names: "core, space, worker (wake, stats)" -> {core, space, worker};
    what is in parentheses is libraries or what is used; "nothing" is no room."""
    depth, plain = 0, []
    for ch in cell:
        depth += ch == "("
        if depth == 0:
            plain.append(ch)
        depth -= ch == ")" and depth > 0
    rooms = set()
    for part in "".join(plain).replace("`", "").split(","):
        words = part.split()
        if words and words[0] != "nothing":
            rooms.add(words[0].rstrip("/"))
    return rooms


def check_docs(root, rules):
    """Violations of the two room tables against the rules (CMake's declarations, the one source):
    ARCHITECTURE.md's "room | owns | may use" table must list every room once with exactly its
    declared uses; service/README.md's "room | owns" table every room."""
    out = []
    rooms = set(rules) - {TOP_ROOM}
    for doc, header, with_uses in ((ARCH_DOC, ["room", "owns", "may use"], True),
                                   (ROOMS_DOC, ["room", "owns"], False)):
        path = os.path.join(root, doc)
        if not os.path.isfile(path):
            out.append((doc, 0, "missing (it carries the room table)"))
            continue
        rows = table_rooms(path, header)
        if rows is None:
            out.append((doc, 0, f"no table with the header | {' | '.join(header)} |"))
            continue
        for room in sorted(rooms - set(rows)):
            out.append((doc, 0, f"room {room} (declared in CMakeLists.txt) has no row"))
        for room in sorted(set(rows) - rooms):
            out.append((doc, rows[room][0], f"row for room {room}, which CMakeLists.txt does not declare"))
        if not with_uses:
            continue
        for room in sorted(rooms & set(rows)):
            n, cells = rows[room]
            said = may_use_rooms(cells[2]) if len(cells) > 2 else set()
            if said != rules[room]:
                missing, extra = sorted(rules[room] - said), sorted(said - rules[room])
                out.append((doc, n, f"room {room}: \"may use\" says {', '.join(sorted(said)) or 'nothing'}; "
                            f"CMakeLists.txt declares {', '.join(sorted(rules[room])) or 'nothing'}"
                            + (f" (missing: {', '.join(missing)})" if missing else "")
                            + (f" (not declared: {', '.join(extra)})" if extra else "")))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rules", required=True, help="room_rules.txt written by CMake")
    ap.add_argument("--root", default=".", help="source tree (holds service/)")
    ap.add_argument("--print-uses", action="store_true",
                    help="also print, per room, the rooms it really includes against its rule")
    args = ap.parse_args(argv)
    try:
        rules = read_rules(args.rules)
    except (OSError, ValueError) as e:
        print(f"check_rooms: {e}", file=sys.stderr)
        return 2
    if not os.path.isdir(os.path.join(args.root, RULED_DIR)):
        print(f"check_rooms: no {RULED_DIR}/ under {args.root}", file=sys.stderr)
        return 2
    violations, uses, counts = check(args.root, rules)
    doc_violations = check_docs(args.root, rules)
    violations += doc_violations
    for f, n, msg in violations:
        print(f"{f}:{n}: {msg}" if n else f"{f}: {msg}")
    if args.print_uses:
        for room in sorted(set(rules) | set(uses)):
            used = uses.get(room, set())
            declared = rules.get(room, set())
            extra = sorted(declared - used)
            print(f"uses {room}: {' '.join(sorted(used))}"
                  + (f"   (declared, not included: {' '.join(extra)})" if extra else ""))
    if violations:
        print(f"check_rooms: {len(violations)} violations ({counts['room']} room, {counts['style']} "
              f"style, {counts['norule']} in rooms without a rule, {len(doc_violations)} in the room "
              f"tables of {ARCH_DOC} and {ROOMS_DOC}); fix the style with tools/fix_includes.py, declare "
              f"uses with kt_room(... USES ...), and keep the tables as CMakeLists.txt declares",
              file=sys.stderr)
        return 1
    print(f"check_rooms: clean ({counts['files']} files, {counts['includes']} service includes, "
          f"{len(rules)} rooms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
