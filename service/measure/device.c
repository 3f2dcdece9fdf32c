/* measure/device — finds the real devices by asking ktune-runner: one probe of `cpu`, then of
 * `cuda:0`, `cuda:1`, ... until the runner refuses one. The probe's device object becomes the
 * device's description, its limits the constants of the kernels' restrictions, its model the
 * device class and its toolchain the toolchain that results are keyed by. Creates the runners'
 * cache folder first. */
#include "core/device_name.h"
#include "measure/device.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/class_name.h"
#include "core/log.h"
#include "core/target_key.h"
#include "measure/runner_client.h"

#define DEVICE_PROBE_TIMEOUT_S 60.0
#define DEVICE_MAX_CLASS       160
#define DEVICE_MAX_REASON      400

/* A class part (core/class_name.h), "?" when the text keeps no character. */
static void class_part(const char *in, char *out, size_t cap)
{
    if (kt_class_name_part(in, out, cap) == 0 && cap > 1)
        snprintf(out, cap, "?");
}

static int set_unavailable(catalog_device *d, const char *name, kspec_kind kind, const char *reason)
{
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "%s", name);
    d->kind = kind;
    d->reason = strdup(reason);
    d->klass = strdup(name);
    d->description_text = strdup("{}");
    return d->reason && d->klass && d->description_text ? 0 : -1;
}

/* One probe: 1 and *device (new reference) when the runner describes the device, 0 with reason
 * filled when it refuses it or fails. */
static int probe(const catalog_real_options *opt, const char *device, json_t **out, char *reason,
                 size_t cap)
{
    runner_spawn sp = {.path = opt->runner,
                       .device = device,
                       .cache_dir = opt->cache_dir,
                       .cpu_core = kt_device_kind_of(device) == KT_DEVICE_CPU ? opt->cpu_core : -1};
    kt_error err;
    json_t *req = json_pack("{s:s}", "op", "probe"), *reply = NULL;
    runner_end end;
    int ok = 0;
    char sig[16];

    *out = NULL;
    kt_error_clear(&err);
    runner_client *r = runner_client_new(&sp, &err);
    if (!r || !req) {
        snprintf(reason, cap, "%.380s", err.message[0] ? err.message : "out of memory");
        goto out;
    }
    int rc = runner_client_call(r, req, DEVICE_PROBE_TIMEOUT_S, &reply, &end, &err);
    if (rc < 0) {
        snprintf(reason, cap, "%.380s", err.message);
    } else if (rc == RUNNER_DEADLINE) {
        snprintf(reason, cap, "the runner did not answer the probe within %.0f s",
                 DEVICE_PROBE_TIMEOUT_S);
    } else if (rc == RUNNER_DIED) {
        if (end.signal)
            snprintf(reason, cap, "the runner died on the probe (%s)",
                     runner_signal_name(end.signal, sig, sizeof sig));
        else
            snprintf(reason, cap, "the runner exited with status %d on the probe", end.exit_code);
    } else if (!json_is_true(json_object_get(reply, "ok")) ||
               !json_is_object(json_object_get(reply, "device"))) {
        const char *why = json_string_value(json_object_get(reply, "reason"));
        if (!why)
            why = json_string_value(json_object_get(reply, "error"));
        snprintf(reason, cap, "%s", why ? why : "the runner refused the probe without a reason");
    } else {
        *out = json_incref(json_object_get(reply, "device"));
        ok = 1;
    }
out:
    json_decref(req);
    json_decref(reply);
    runner_client_free(r);
    return ok;
}

static void fill_limits(catalog_device *d, const json_t *desc)
{
    int n = 0;
    const char *const *names = kernel_spec_limit_names(d->kind, &n);
    for (int i = 0; i < n; i++) {
        const json_t *v = json_object_get(desc, names[i]);
        if (json_is_integer(v)) {
            d->limits.v[i] = (long long)json_integer_value(v);
        } else {
            /* Unknown (a cache size no source could tell is null): 0, which restrictions read as
             * unknown ("l2_bytes == 0 or ...", kernels/README.md). */
            d->limits.v[i] = 0;
            log_warn("device %s: the probe does not know %s; restrictions see 0 (unknown)", d->name,
                     names[i]);
        }
    }
}

/* The probe's "toolchain" when it is 1..TARGET_TOOLCHAIN_MAX printable ASCII characters, else
 * "unknown" (logged): results are then keyed under "unknown". */
static const char *probe_toolchain(const char *device, const json_t *desc)
{
    const char *t = json_string_value(json_object_get(desc, "toolchain"));
    size_t n = t ? strlen(t) : 0;
    int ok = n > 0 && n <= TARGET_TOOLCHAIN_MAX;
    for (size_t i = 0; ok && i < n; i++)
        ok = t[i] >= 0x20 && t[i] < 0x7f;
    if (ok)
        return t;
    log_warn("device %s: the runner's probe has no usable toolchain (1-%d printable characters); "
             "its results are keyed under toolchain \"unknown\"",
             device, TARGET_TOOLCHAIN_MAX);
    return "unknown";
}

static int set_available(catalog_device *d, const char *name, kspec_kind kind, int ordinal,
                         json_t *desc, int cpu_core)
{
    char part[DEVICE_MAX_CLASS], klass[DEVICE_MAX_CLASS + 48];
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "%s", name);
    d->kind = kind;
    d->ordinal = ordinal;
    d->available = 1;
    fill_limits(d, desc);
    if (kind == KSPEC_CPU) {
        class_part(json_string_value(json_object_get(desc, "model")), part, sizeof part);
        snprintf(klass, sizeof klass, "cpu:%s:%lld", part,
                 (long long)json_integer_value(json_object_get(desc, "vector_bits")));
        json_object_set_new(desc, "cpu_core", cpu_core >= 0 ? json_integer(cpu_core) : json_null());
    } else {
        class_part(json_string_value(json_object_get(desc, "name")), part, sizeof part);
        snprintf(klass, sizeof klass, "cuda:%s:sm_%lld", part,
                 (long long)json_integer_value(json_object_get(desc, "compute_capability")));
    }
    d->klass = strdup(klass);
    d->toolchain = strdup(probe_toolchain(name, desc));
    d->description_text = json_dumps(desc, JSON_COMPACT | JSON_SORT_KEYS);
    return d->klass && d->toolchain && d->description_text ? 0 : -1;
}

/* mkdir -p for the cache folder (mode 0755). */
static int make_dirs(const char *path, kt_error *err)
{
    char buf[PATH_MAX];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf)
        return kt_error_set(err, KT_ERR_CONFIG, "cache folder '%.300s' is not usable", path);
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        char keep = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return kt_error_set(err, KT_ERR_CONFIG, "cache folder %.300s cannot be created: %s",
                                buf, strerror(errno));
        buf[i] = keep;
    }
    return 0;
}

int device_discover(const catalog_real_options *opt, catalog_device **out, int *n, kt_error *err)
{
    catalog_device *devs = NULL;
    char reason[DEVICE_MAX_REASON], name[32];
    json_t *desc = NULL;
    int count = 0, rc = -1;

    *out = NULL;
    *n = 0;
    if (!opt || opt->n_kernel_dirs <= 0)
        return 0; /* no real measurement: no devices */
    if (catalog_real_check(opt, err) < 0 || make_dirs(opt->cache_dir, err) < 0)
        goto out;
    devs = calloc(DEVICE_MAX_CUDA + 1, sizeof *devs);
    if (!devs) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory probing devices");
        goto out;
    }
    if (access(opt->runner, X_OK) != 0) {
        snprintf(reason, sizeof reason, "ktune-runner not found at %.300s (%s); see --runner",
                 opt->runner, strerror(errno));
        log_warn("real measurement: %s", reason);
        if (set_unavailable(&devs[count++], "cpu", KSPEC_CPU, reason) < 0 ||
            set_unavailable(&devs[count++], "cuda", KSPEC_CUDA, reason) < 0) {
            kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory probing devices");
            goto out;
        }
        rc = 0;
        goto out;
    }
    int fail = 0;
    if (probe(opt, "cpu", &desc, reason, sizeof reason)) {
        fail = set_available(&devs[count++], "cpu", KSPEC_CPU, 0, desc, opt->cpu_core) < 0;
        json_decref(desc);
        desc = NULL;
    } else {
        log_warn("device cpu is not available: %s", reason);
        fail = set_unavailable(&devs[count++], "cpu", KSPEC_CPU, reason) < 0;
    }
    for (int i = 0; i < DEVICE_MAX_CUDA && !fail; i++) {
        kt_device_format(&(kt_device){.kind = KT_DEVICE_CUDA, .ordinal = i}, name, sizeof name);
        if (!probe(opt, name, &desc, reason, sizeof reason)) {
            if (i == 0) {
                log_info("no CUDA device: %s", reason);
                fail = set_unavailable(&devs[count++], "cuda", KSPEC_CUDA, reason) < 0;
            }
            break;
        }
        fail = set_available(&devs[count++], name, KSPEC_CUDA, i, desc, -1) < 0;
        json_decref(desc);
        desc = NULL;
    }
    if (fail) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory probing devices");
        goto out;
    }
    rc = 0;
out:
    if (rc < 0) {
        catalog_devices_free(devs, count);
    } else {
        *out = devs;
        *n = count;
        for (int i = 0; i < count; i++)
            log_info("device %s: %s%s%s", devs[i].name,
                     devs[i].available ? devs[i].klass : "not available: ",
                     devs[i].available ? ", toolchain " : devs[i].reason,
                     devs[i].available ? devs[i].toolchain : "");
    }
    return rc;
}
