#!/usr/bin/env python3
"""Debian package records -> table rows for `pith table load`.

Reads the data sets' JSON Lines (`{"key": "package/version", "value":
"<the package's control paragraph>"}`; a `.zst` file is read through the
`zstd` command) and writes one JSON object per package: the columns of
`data/debian-packages.schema.json`. Multi-line fields (Tag) keep their
newlines; fields the schema has no column for are kept, as
`Field: value` lines, in the `other` column, so nothing is lost. `id` is
the record's line number (from 1). Standard library only.

    python3 scripts/debian_packages_to_rows.py data/debian-sample.jsonl.zst > rows.jsonl
"""

import json
import subprocess
import sys

# Control field -> (column, kind): str, int (a count), or hex (checksums).
COLUMNS = {
    "Package": ("package", str),
    "Version": ("version", str),
    "Architecture": ("architecture", str),
    "Maintainer": ("maintainer", str),
    "Installed-Size": ("installed_size", int),
    "Section": ("section", str),
    "Priority": ("priority", str),
    "Homepage": ("homepage", str),
    "Size": ("size", int),
    "Filename": ("filename", str),
    "Source": ("source", str),
    "Multi-Arch": ("multi_arch", str),
    "Depends": ("depends", str),
    "Pre-Depends": ("pre_depends", str),
    "Recommends": ("recommends", str),
    "Suggests": ("suggests", str),
    "Breaks": ("breaks", str),
    "Conflicts": ("conflicts", str),
    "Replaces": ("replaces", str),
    "Provides": ("provides", str),
    "Enhances": ("enhances", str),
    "Built-Using": ("built_using", str),
    "Description": ("description", str),
    "Description-md5": ("description_md5", "hex"),
    "Tag": ("tag", str),
    "MD5sum": ("md5sum", "hex"),
    "SHA256": ("sha256", "hex"),
}


def fields(paragraph):
    """(field, value) pairs of a control paragraph, continuation lines joined."""
    out = []
    for line in paragraph.split("\n"):
        if not line:
            continue
        if line[0] in " \t" and out:
            out[-1][1] += "\n" + line
            continue
        name, sep, value = line.partition(":")
        if not sep:
            raise ValueError(f"not a control field: {line[:60]!r}")
        out.append([name, value.strip()])
    return out


def row(n, record):
    r = {"id": n}
    other = []
    for name, value in fields(record["value"]):
        column = COLUMNS.get(name)
        if column is None:
            other.append(f"{name}: {value}")
            continue
        col, kind = column
        if kind is int:
            r[col] = int(value)
        elif kind == "hex":
            r[col] = value.lower()
        else:
            r[col] = value
    if other:
        r["other"] = "\n".join(other)
    return r


def lines(path):
    if path == "-":
        yield from sys.stdin
        return
    if path.endswith(".zst"):
        with subprocess.Popen(["zstd", "-dc", path], stdout=subprocess.PIPE, text=True) as p:
            yield from p.stdout
        if p.returncode:
            sys.exit(f"zstd -dc {path} failed with status {p.returncode}")
        return
    with open(path, encoding="utf-8") as f:
        yield from f


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.stdout
    for n, line in enumerate(lines(sys.argv[1]), start=1):
        try:
            r = row(n, json.loads(line))
        except (ValueError, KeyError) as e:
            sys.exit(f"{sys.argv[1]}: line {n}: {e}")
        out.write(json.dumps(r, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
