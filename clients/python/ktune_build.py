"""A PEP 517 build backend of the standard library only, for this one pure-Python package.

pip builds the client offline with it (no setuptools, no wheel package, no index): `build_wheel`
zips ktune/*.py with the .dist-info files (METADATA, WHEEL, RECORD), `build_editable` a wheel holding
only a .pth file naming this folder, `build_sdist` a tar.gz of the sources. Name, version and summary
come from pyproject.toml's [project] table (tomllib, Python 3.11+; a fallback reads the lines)."""
import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "ktune"


def _project():
    path = os.path.join(HERE, "pyproject.toml")
    try:
        import tomllib
        with open(path, "rb") as f:
            return tomllib.load(f)["project"]
    except ImportError:
        text = open(path, encoding="utf-8").read()
        fields = dict(re.findall(r'^(name|version|description|requires-python) = "([^"]*)"', text, re.M))
        return fields


def _metadata():
    p = _project()
    lines = ["Metadata-Version: 2.1", "Name: %s" % p["name"], "Version: %s" % p["version"],
             "Summary: %s" % p.get("description", "")]
    if p.get("requires-python"):
        lines.append("Requires-Python: %s" % p["requires-python"])
    lines.append("Provides-Extra: numpy")
    lines.append('Requires-Dist: numpy; extra == "numpy"')
    readme = os.path.join(HERE, "README.md")
    body = open(readme, encoding="utf-8").read() if os.path.exists(readme) else ""
    if body:
        lines.append("Description-Content-Type: text/markdown")
    return "\n".join(lines) + "\n\n" + body, p


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, digest, len(data))


def _wheel(wheel_directory, files):
    meta, p = _metadata()
    name, version = p["name"], p["version"]
    dist = "%s-%s.dist-info" % (name, version)
    files = list(files) + [
        (dist + "/METADATA", meta.encode()),
        (dist + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: ktune_build\nRoot-Is-Purelib: true\n"
                          b"Tag: py3-none-any\n"),
        (dist + "/top_level.txt", (PACKAGE + "\n").encode()),
    ]
    record = [_record_line(n, d) for n, d in files] + [dist + "/RECORD,,"]
    files.append((dist + "/RECORD", ("\n".join(record) + "\n").encode()))
    filename = "%s-%s-py3-none-any.whl" % (name, version)
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in files:
            z.writestr(zipfile.ZipInfo(n, date_time=(2020, 1, 1, 0, 0, 0)), d)
    return filename


def _sources():
    folder = os.path.join(HERE, PACKAGE)
    for name in sorted(os.listdir(folder)):
        if name.endswith(".py"):
            with open(os.path.join(folder, name), "rb") as f:
                yield "%s/%s" % (PACKAGE, name), f.read()


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, _sources())


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, [("_ktune_editable.pth", (HERE + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    p = _project()
    base = "%s-%s" % (p["name"], p["version"])
    filename = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz") as tar:
        for rel in ["pyproject.toml", "ktune_build.py", "README.md"] + [n for n, _ in _sources()]:
            path = os.path.join(HERE, rel)
            if os.path.exists(path):
                tar.add(path, arcname=base + "/" + rel)
        meta, _ = _metadata()
        info = tarfile.TarInfo(base + "/PKG-INFO")
        info.size = len(meta.encode())
        tar.addfile(info, io.BytesIO(meta.encode()))
    return filename
