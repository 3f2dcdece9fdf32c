#!/usr/bin/env python3
"""Fails, listing file:line, when a C file under service/, kernels/, tests/ or clients/ calls a banned
function: the unbounded string copies and formats, the unchecked number parsers and the
stateful tokenizer (the list follows curl's checksrc, less what we use deliberately).
Comments and string literals are ignored; a call is a name followed by '(' that is not a
member (x.atol or p->atol) or a longer identifier (snprintf is not sprintf)."""
import os
import re
import sys

BANNED = {
    "atoi": "strtol with end and errno checks",
    "atol": "strtol with end and errno checks",
    "atoll": "strtoll with end and errno checks",
    "atof": "strtod with end and errno checks",
    "sprintf": "snprintf",
    "vsprintf": "vsnprintf",
    "strcpy": "snprintf or memcpy with a length",
    "strcat": "core/strbuf.h or snprintf",
    "strncpy": "snprintf (strncpy may leave no NUL)",
    "strncat": "core/strbuf.h or snprintf",
    "stpcpy": "memcpy with a length",
    "gets": "fgets",
    "strtok": "strtok_r or a scan with strchr",
    "tmpnam": "mkstemp",
    "tempnam": "mkstemp",
    "mktemp": "mkstemp",
}
ROOTS = ("service", "kernels", "tests", "clients")
EXTS = (".c", ".h", ".cu", ".cuh")
SKIP_DIRS = {"node_modules", ".git"}
CALL = re.compile(r"(?<![\w.>])(" + "|".join(sorted(BANNED)) + r")\s*\(")


def strip_code(text):
    """Blanks comments and string/char literals, keeping newlines so line numbers hold."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * (j - i - 2) + (c if j - i >= 2 else ""))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    hits = []
    for top in ROOTS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
            for name in sorted(filenames):
                if not name.endswith(EXTS):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    code = strip_code(f.read())
                for lineno, line in enumerate(code.split("\n"), 1):
                    for m in CALL.finditer(line):
                        rel = os.path.relpath(path, root)
                        hits.append(f"{rel}:{lineno}: {m.group(1)}() is banned; use {BANNED[m.group(1)]}")
    if hits:
        print("\n".join(hits))
        print(f"banned-check: {len(hits)} banned call(s)")
        return 1
    print("banned-check: clean")
    return 0


if __name__ == "__main__":
    sys.exit(main())
