"""ktune.kernel_tuner — `tune_kernel` with Kernel Tuner's argument names (issue 27, section 4).

Not available yet: it registers the caller's kernel with POST /v1/kernels (kernels over HTTP) and
needs per-buffer dtypes and scalar arguments in the kernel interface; neither has landed in this
ktune. Until then it raises NotImplementedError saying so. Tune with your own harness meanwhile:
Client.tune_external (ask/tell) or @ktune.autotune."""


def tune_kernel(kernel_name, kernel_source, problem_size, arguments, tune_params, **options):
    raise NotImplementedError(
        "ktune.tune_kernel needs POST /v1/kernels (kernels registered over HTTP) and typed buffers "
        "and scalar arguments, which this ktune does not have yet; measure with your own harness "
        "through ktune.Client().tune_external(...) or @ktune.autotune instead")
