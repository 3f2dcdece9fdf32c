/* accel/accel_device — the devices file (accel_device.h): loading with every field checked, the
 * JSON view and the parameters' hash. */
#include "accel/accel_device.h"
#include "core/file.h"
#include "core/hash.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEVICES_FILE_CAP (1 << 20)

static const char *const level_names[ACCEL_LEVELS] = {"L1", "L2", "DRAM"};

static const char *const device_fields[] = {"name",     "pes",       "l1_bytes",        "l2_bytes",
                                            "l1_banks", "l2_banks",  "word_bytes",      "clock_ghz",
                                            "mac_pj",   "access_pj", "words_per_cycle", NULL};

static int valid_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 31)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '_' || (i > 0 && c == '-');
        if (!ok)
            return 0;
    }
    return 1;
}

/* Error "<file>: device '<name>': <field>: <what>" (KT_ERR_CONFIG); returns -1. */
static int bad(kt_error *err, const char *path, const char *dev, const char *field,
               const char *what)
{
    kt_error_set(err, KT_ERR_CONFIG, "%s: device '%s': %s: %s", path, dev, field, what);
    kt_error_hint(err, "each device needs name, pes, l1_bytes, l2_bytes, l1_banks, l2_banks, "
                       "word_bytes, clock_ghz, mac_pj, access_pj [L1, L2, DRAM], words_per_cycle "
                       "[L1, L2, DRAM] (see accel/README.md)");
    return -1;
}

static int get_int(const json_t *o, const char *path, const char *dev, const char *field,
                   long long lo, long long hi, long long *out, kt_error *err)
{
    const json_t *v = json_object_get(o, field);
    char what[96];
    if (!v)
        return bad(err, path, dev, field, "missing");
    if (!json_is_integer(v))
        return bad(err, path, dev, field, "not an integer");
    long long x = (long long)json_integer_value(v);
    if (x < lo || x > hi) {
        snprintf(what, sizeof what, "%lld is out of range [%lld, %lld]", x, lo, hi);
        return bad(err, path, dev, field, what);
    }
    *out = x;
    return 0;
}

static int check_real(const json_t *v, const char *path, const char *dev, const char *field,
                      double lo, double hi, double *out, kt_error *err)
{
    char what[96];
    if (!v)
        return bad(err, path, dev, field, "missing");
    if (!json_is_number(v))
        return bad(err, path, dev, field, "not a number");
    double x = json_number_value(v);
    if (!isfinite(x) || x <= lo || x > hi) {
        snprintf(what, sizeof what, "%g is out of range (%g, %g]", x, lo, hi);
        return bad(err, path, dev, field, what);
    }
    *out = x;
    return 0;
}

static int get_levels(const json_t *o, const char *path, const char *dev, const char *field,
                      double hi, double *out, kt_error *err)
{
    const json_t *a = json_object_get(o, field);
    if (!a)
        return bad(err, path, dev, field, "missing");
    if (!json_is_array(a) || json_array_size(a) != ACCEL_LEVELS)
        return bad(err, path, dev, field, "not an array of 3 numbers [L1, L2, DRAM]");
    for (int l = 0; l < ACCEL_LEVELS; l++) {
        char f[64];
        snprintf(f, sizeof f, "%s[%d] (%s)", field, l, level_names[l]);
        if (check_real(json_array_get(a, (size_t)l), path, dev, f, 0.0, hi, &out[l], err) < 0)
            return -1;
    }
    return 0;
}

static int load_one(const json_t *o, int i, const char *path, accel_device *d, kt_error *err)
{
    char dev[48];
    snprintf(dev, sizeof dev, "#%d", i);
    if (!json_is_object(o))
        return bad(err, path, dev, "(device)", "not an object");
    const json_t *name = json_object_get(o, "name");
    if (!name)
        return bad(err, path, dev, "name", "missing");
    if (!json_is_string(name) || !valid_name(json_string_value(name)))
        return bad(err, path, dev, "name",
                   "not an identifier of 1 to 31 letters, digits, '_' or '-' (not first)");
    snprintf(d->name, sizeof d->name, "%s", json_string_value(name));
    snprintf(dev, sizeof dev, "%s", d->name);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)o, key, v)
    {
        int known = 0;
        for (int f = 0; device_fields[f] && !known; f++)
            known = strcmp(key, device_fields[f]) == 0;
        if (!known)
            return bad(err, path, dev, key, "unknown field");
    }
    long long x;
    if (get_int(o, path, dev, "pes", 1, 65536, &x, err) < 0)
        return -1;
    d->pes = (int)x;
    if (get_int(o, path, dev, "l1_bytes", 16, 1LL << 30, &d->l1_bytes, err) < 0 ||
        get_int(o, path, dev, "l2_bytes", 16, 1LL << 40, &d->l2_bytes, err) < 0)
        return -1;
    if (get_int(o, path, dev, "l1_banks", 4, 16, &x, err) < 0)
        return -1;
    d->l1_banks = (int)x;
    if (get_int(o, path, dev, "l2_banks", 4, 16, &x, err) < 0)
        return -1;
    d->l2_banks = (int)x;
    if (get_int(o, path, dev, "word_bytes", 1, 16, &x, err) < 0)
        return -1;
    d->word_bytes = (int)x;
    if (d->l1_bytes < (long long)d->word_bytes * d->l1_banks)
        return bad(err, path, dev, "l1_bytes", "smaller than one word per bank");
    if (d->l2_bytes < (long long)d->word_bytes * d->l2_banks)
        return bad(err, path, dev, "l2_bytes", "smaller than one word per bank");
    if (check_real(json_object_get(o, "clock_ghz"), path, dev, "clock_ghz", 0.0, 100.0,
                   &d->clock_ghz, err) < 0 ||
        check_real(json_object_get(o, "mac_pj"), path, dev, "mac_pj", 0.0, 1e6, &d->mac_pj, err) <
            0 ||
        get_levels(o, path, dev, "access_pj", 1e6, d->access_pj, err) < 0 ||
        get_levels(o, path, dev, "words_per_cycle", 1e6, d->words_per_cycle, err) < 0)
        return -1;
    return 0;
}

int accel_devices_load(const char *path, accel_device **out, int *n, kt_error *err)
{
    *out = NULL;
    *n = 0;
    int rc = -1;
    accel_device *devs = NULL;
    json_t *root = NULL;
    char *text = kt_file_read_all(path, DEVICES_FILE_CAP, NULL, err);
    if (!text) {
        kt_error_prefix(err, "accel devices file");
        if (err)
            err->code = KT_ERR_CONFIG;
        goto done;
    }
    json_error_t je;
    root = json_loads(text, 0, &je);
    if (!root) {
        kt_error_set(err, KT_ERR_CONFIG, "%s: line %d column %d: %s", path, je.line, je.column,
                     je.text);
        kt_error_hint(err, "the devices file is JSON: {\"devices\": [{...}, ...]}");
        goto done;
    }
    const json_t *list = json_object_get(root, "devices");
    if (!json_is_object(root) || json_object_size(root) != 1 || !json_is_array(list)) {
        kt_error_set(err, KT_ERR_CONFIG, "%s: not an object with one field, \"devices\" (an array)",
                     path);
        goto done;
    }
    size_t count = json_array_size(list);
    if (count == 0 || count > ACCEL_MAX_DEVICES) {
        kt_error_set(err, KT_ERR_CONFIG, "%s: devices: %zu devices, expected 1 to %d", path, count,
                     ACCEL_MAX_DEVICES);
        goto done;
    }
    devs = calloc(count, sizeof *devs);
    if (!devs) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "accel devices: out of memory");
        goto done;
    }
    for (size_t i = 0; i < count; i++) {
        if (load_one(json_array_get(list, i), (int)i, path, &devs[i], err) < 0)
            goto done;
        for (size_t j = 0; j < i; j++)
            if (strcmp(devs[j].name, devs[i].name) == 0) {
                bad(err, path, devs[i].name, "name", "duplicate device name");
                goto done;
            }
    }
    *out = devs;
    *n = (int)count;
    devs = NULL;
    rc = 0;
done:
    free(devs);
    json_decref(root);
    free(text);
    return rc;
}

void accel_devices_free(accel_device *devs, int n)
{
    (void)n;
    free(devs);
}

json_t *accel_device_json(const accel_device *d)
{
    json_t *o = json_object();
    json_t *pj = json_array();
    json_t *bw = json_array();
    for (int l = 0; l < ACCEL_LEVELS; l++) {
        json_array_append_new(pj, json_real(d->access_pj[l]));
        json_array_append_new(bw, json_real(d->words_per_cycle[l]));
    }
    json_object_set_new(o, "name", json_string(d->name));
    json_object_set_new(o, "pes", json_integer(d->pes));
    json_object_set_new(o, "l1_bytes", json_integer(d->l1_bytes));
    json_object_set_new(o, "l2_bytes", json_integer(d->l2_bytes));
    json_object_set_new(o, "l1_banks", json_integer(d->l1_banks));
    json_object_set_new(o, "l2_banks", json_integer(d->l2_banks));
    json_object_set_new(o, "word_bytes", json_integer(d->word_bytes));
    json_object_set_new(o, "clock_ghz", json_real(d->clock_ghz));
    json_object_set_new(o, "mac_pj", json_real(d->mac_pj));
    json_object_set_new(o, "access_pj", pj);
    json_object_set_new(o, "words_per_cycle", bw);
    return o;
}

static uint64_t hash_double(uint64_t h, double x)
{
    char buf[40];
    int n = snprintf(buf, sizeof buf, "%.17g", x);
    return kt_fnv1a_field(h, buf, (size_t)n);
}

static uint64_t hash_ll(uint64_t h, long long x)
{
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%lld", x);
    return kt_fnv1a_field(h, buf, (size_t)n);
}

uint64_t accel_device_hash(const accel_device *d)
{
    uint64_t h = KT_FNV1A_OFFSET;
    h = kt_fnv1a_field(h, d->name, strlen(d->name));
    h = hash_ll(h, d->pes);
    h = hash_ll(h, d->l1_bytes);
    h = hash_ll(h, d->l2_bytes);
    h = hash_ll(h, d->l1_banks);
    h = hash_ll(h, d->l2_banks);
    h = hash_ll(h, d->word_bytes);
    h = hash_double(h, d->clock_ghz);
    h = hash_double(h, d->mac_pj);
    for (int l = 0; l < ACCEL_LEVELS; l++)
        h = hash_double(h, d->access_pj[l]);
    for (int l = 0; l < ACCEL_LEVELS; l++)
        h = hash_double(h, d->words_per_cycle[l]);
    return h;
}
