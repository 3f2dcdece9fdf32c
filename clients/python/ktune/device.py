"""ktune.device — this machine's device class, named as ktuned names the classes of its devices.

For the CPU this reproduces ktuned exactly (service/measure/device.c on the probe of
service/runner/cpu_probe.c): `cpu:<model>:<vector bits>`, where <model> is the first "model name" of
/proc/cpuinfo with every run of characters other than letters, digits, '.', '_' and '-' made one '_'
(leading and trailing runs dropped; "unknown" when there is no model name, '?' when nothing is
left), and <vector bits> 512 when the first processor's flags (x86 "flags", Arm "Features") list
avx512f, else 256 with avx2, else 128.

For a CUDA device ("cuda:N"), ktuned's class is `cuda:<name>:sm_<major*10+minor>` from the CUDA
driver (cuDeviceGetName, the compute capability). Here the name and the capability come from
`nvidia-smi --query-gpu=name,compute_cap` (the same driver strings); without nvidia-smi it raises
RuntimeError.

Where /proc/cpuinfo cannot be read (not Linux), the class is `external:<platform.processor() or
machine>` (normalised the same way), which no ktuned device has: results for it come only from
ask/tell jobs that name it."""
import platform
import re
import shutil
import subprocess

MAX_MODEL = 255   # the runner keeps 255 characters of the model (RUNNER_TEXT_MAX - 1)
CLASS_CAP = 160   # DEVICE_MAX_CLASS: class_part stops once n + 2 reaches it


def class_part(text):
    """Letters, digits, '.', '_' and '-' kept; every other run becomes one '_' between kept ones."""
    out = []
    gap = False
    for ch in text or "":
        if len(out) + 2 >= CLASS_CAP:
            break
        keep = ch.isascii() and (ch.isalnum() or ch in "._-")
        if not keep:
            gap = len(out) > 0
            continue
        if gap:
            out.append("_")
        gap = False
        out.append(ch)
    return "".join(out) or "?"


def _cpuinfo_value(line, key):
    """The value of a "key<tabs>: value" line (as cpu_probe.c's cpuinfo_value), else None."""
    if not line.startswith(key):
        return None
    rest = line[len(key):].lstrip(" \t")
    if not rest.startswith(":"):
        return None
    return rest[1:].lstrip(" ").rstrip("\n ")


def cpu_class_from_cpuinfo(text):
    model, flags = None, None
    for line in text.splitlines(keepends=True):
        if line == "\n" and model and flags is not None:
            break
        if model is None:
            v = _cpuinfo_value(line, "model name")
            if v is not None:
                model = v[:MAX_MODEL]
        if flags is None:
            v = _cpuinfo_value(line, "flags")
            if v is None:
                v = _cpuinfo_value(line, "Features")
            if v is not None:
                flags = v.split(" ")
    flags = flags or []
    bits = 512 if "avx512f" in flags else 256 if "avx2" in flags else 128
    return "cpu:%s:%d" % (class_part(model or "unknown"), bits)


def _cuda_class(ordinal):
    smi = shutil.which("nvidia-smi")
    if not smi:
        raise RuntimeError("device_class('cuda:%d') needs nvidia-smi to read the GPU's name and "
                           "compute capability" % ordinal)
    out = subprocess.run([smi, "--query-gpu=name,compute_cap", "--format=csv,noheader", "-i",
                          str(ordinal)], capture_output=True, text=True, timeout=30)
    if out.returncode != 0 or "," not in out.stdout:
        raise RuntimeError("nvidia-smi could not describe GPU %d: %s" % (ordinal, out.stderr.strip()))
    name, cc = out.stdout.strip().splitlines()[0].rsplit(",", 1)
    major, _, minor = cc.strip().partition(".")
    return "cuda:%s:sm_%d" % (class_part(name.strip()), int(major) * 10 + int(minor or 0))


def device_class(device="cpu"):
    """The class ktuned would give this machine's `device` ("cpu", or "cuda:N")."""
    m = re.fullmatch(r"cuda(?::(\d+))?", device)
    if m:
        return _cuda_class(int(m.group(1) or 0))
    if device != "cpu":
        raise ValueError("device must be 'cpu' or 'cuda:N', not %r" % device)
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            return cpu_class_from_cpuinfo(f.read())
    except OSError:
        return "external:" + class_part(platform.processor() or platform.machine() or "unknown")
