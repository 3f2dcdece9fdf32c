"""ktune — the client of the ktune auto-tuning service (standard library only; numpy optional).

- Client(server=None, token=None, timeout=None): KTUNE_SERVER / KTUNE_TOKEN / KTUNE_TIMEOUT as the CLI;
  .best(), .tune_external() (ask/tell), .export_table(), .request().
- autotune(space=..., key=[...]): Triton-style decorator, persistent and shared through /v1/best.
- device_class(): this machine's class as ktuned names it.
- Table.load(path).lookup(kernel, device_class, problem): the deploy table, no server.
- KtuneError(status, code, message, hint).
- tune_kernel(...): Kernel Tuner's interface: registers a C function with the caller's arrays and answer
  (POST /v1/kernels) and tunes it on a server device; build_spec() makes its kernel spec without a
  server; Buffer(bytes, dtype) is an array argument without numpy.
- Client.register_kernel / kernel_versions / wait_kernel / tune / wait_job / trials: kernels over HTTP.
"""
from .autotune import autotune
from .client import Best, Client, ExternalTuning, Trial
from .device import device_class
from .errors import KtuneError
from .kernel_tuner import Buffer, tune_kernel
from .table import Lookup, Table, TableError, problem_distance

__version__ = "0.1.0"
__all__ = ["Best", "Buffer", "Client", "ExternalTuning", "KtuneError", "Lookup", "Table", "TableError", "Trial",
           "autotune", "device_class", "problem_distance", "tune_kernel"]
