#!/usr/bin/env python3
"""Regenerates networks/data/fashion-mnist-small/ from Debian's dataset-fashion-mnist: the first
1000 training and 500 test images and labels of the package's gzip'd IDX files, in the same format
(headers rewritten with the new counts; gzip with mtime 0, so the output is reproducible).

Run: python3 tools/make_fashion_small.py [--src /usr/share/datasets/fashion-mnist]
                                         [--out networks/data/fashion-mnist-small]
"""
import argparse
import gzip
import os
import struct
import sys

SPLITS = {"train": 1000, "t10k": 500}
IMAGES_MAGIC = 0x00000803
LABELS_MAGIC = 0x00000801


def read_head(path, magic, dims, count):
    """Returns (header fields, first count records as bytes), checking the magic."""
    with gzip.open(path, "rb") as f:
        head = f.read(4 * (1 + dims))
        fields = struct.unpack(">%dI" % (1 + dims), head)
        if fields[0] != magic:
            sys.exit("%s: magic 0x%08x, expected 0x%08x" % (path, fields[0], magic))
        if fields[1] < count:
            sys.exit("%s: only %d records, %d wanted" % (path, fields[1], count))
        size = 1
        for d in fields[2:]:
            size *= d
        body = f.read(size * count)
        if len(body) != size * count:
            sys.exit("%s: truncated" % path)
    return fields, body


def write(path, fields, count, body):
    head = struct.pack(">%dI" % len(fields), fields[0], count, *fields[2:])
    with open(path, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as f:
            f.write(head + body)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", default="/usr/share/datasets/fashion-mnist")
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--out", default=os.path.join(here, "networks/data/fashion-mnist-small"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for stem, count in SPLITS.items():
        for kind, magic, dims in (("images-idx3", IMAGES_MAGIC, 3), ("labels-idx1", LABELS_MAGIC, 1)):
            name = "%s-%s-ubyte.gz" % (stem, kind)
            fields, body = read_head(os.path.join(args.src, name), magic, dims, count)
            write(os.path.join(args.out, name), fields, count, body)
            print("%s: %d of %d records" % (name, count, fields[1]))


if __name__ == "__main__":
    main()
