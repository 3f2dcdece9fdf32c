/* bench/predict/bench_predict_load — the measurement caches of `ktune bench --predict` read,
 * checked and resolved into training sets; and the measurements --measure adds (see
 * bench_predict_impl.h). */
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/file.h"
#include "core/array.h"
#include "measure/device.h"
#include "bench/device/bench_device_args.h"
#include "bench/predict/bench_predict_impl.h"

static int bp_name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every <dir>/<name>.jsonl, sorted within each folder; *paths owned by the caller (also on
 * failure: free the *n entries). */
static int bp_list(const bench_predict_options *opt, char ***paths, int *n, kt_error *err)
{
    DIR *dir = NULL;
    int rc = -1;
    *paths = NULL;
    *n = 0;
    for (int i = 0; i < opt->n_dirs; i++) {
        struct dirent *e;
        int first = *n;
        if (!(dir = opendir(opt->dirs[i]))) {
            kt_error_set(err, KT_ERR_BAD_REQUEST, "--predict %s: not a readable folder",
                         opt->dirs[i]);
            goto out;
        }
        while ((e = readdir(dir))) {
            size_t len = strlen(e->d_name), cap = strlen(opt->dirs[i]) + len + 2;
            if (len < 7 || strcmp(e->d_name + len - 6, ".jsonl") != 0)
                continue;
            if (*n >= BENCH_PREDICT_MAX_FILES) {
                kt_error_set(err, KT_ERR_OUT_OF_RANGE, "--predict: more than %d caches",
                             BENCH_PREDICT_MAX_FILES);
                goto out;
            }
            int grown = kt_array_resize((void **)paths, (size_t)*n + 1, sizeof **paths) == 0;
            char *p = grown ? malloc(cap) : NULL;
            if (!p) {
                kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
                goto out;
            }
            snprintf(p, cap, "%s/%s", opt->dirs[i], e->d_name);
            (*paths)[(*n)++] = p;
        }
        closedir(dir);
        dir = NULL;
        qsort(*paths + first, (size_t)(*n - first), sizeof **paths, bp_name_cmp);
    }
    if (*n == 0) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "--predict: no *.jsonl measurement cache in %s%s",
                     opt->dirs[0], opt->n_dirs > 1 ? " ..." : "");
        kt_error_hint(err, "write them with ktune bench --kernel K --device D --problem P "
                           "--measure-cache DIR/P.jsonl");
        goto out;
    }
    rc = 0;
out:
    if (dir)
        closedir(dir);
    return rc;
}

static const char *bp_str(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static void bp_warn(bp_data *d, FILE *progress, const char *fmt, const char *a, const char *b,
                    const char *c)
{
    char buf[1024];
    snprintf(buf, sizeof buf, fmt, a, b, c);
    json_array_append_new(d->warnings, json_string(buf));
    if (progress)
        fprintf(progress, "ktune bench: warning: %s\n", buf);
}

/* --replay-as FILE: the recorded device as the one catalog device record, its limits from the
 * file (every limit the kind's restrictions may name, an integer); no runner is started. */
static int bp_recorded_device(const char *path, catalog_device **out, kt_error *err)
{
    json_error_t je;
    json_t *rec = json_load_file(path, 0, &je);
    const json_t *lim = json_object_get(rec, "limits");
    const char *name = json_string_value(json_object_get(rec, "device")),
               *klass = json_string_value(json_object_get(rec, "device_class"));
    catalog_device *d = NULL;
    int n = 0, rc = -1;
    const char *const *names;

    *out = NULL;
    if (!rec) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "--replay-as %s: %s", path, je.text);
        goto out;
    }
    if (!name || !klass || !json_is_object(lim) ||
        (strcmp(name, "cpu") != 0 && strncmp(name, "cuda:", 5) != 0) ||
        strlen(name) >= sizeof d->name) {
        kt_error_set(err, KT_ERR_BAD_REQUEST,
                     "--replay-as %s: want {\"device\": \"cpu\" or \"cuda:N\", \"device_class\", "
                     "\"limits\": {...}}",
                     path);
        goto out;
    }
    if (!(d = calloc(1, sizeof *d))) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    snprintf(d->name, sizeof d->name, "%s", name);
    d->kind = strcmp(name, "cpu") == 0 ? KSPEC_CPU : KSPEC_CUDA;
    d->ordinal = d->kind == KSPEC_CPU ? 0 : (int)strtol(name + 5, NULL, 10);
    d->available = 1;
    names = kernel_spec_limit_names(d->kind, &n);
    for (int i = 0; i < n; i++) {
        const json_t *v = json_object_get(lim, names[i]);
        if (!json_is_integer(v) || json_integer_value(v) < 0) {
            kt_error_set(err, KT_ERR_BAD_REQUEST, "--replay-as %s: limits.%s: want an integer >= 0",
                         path, names[i]);
            goto out;
        }
        d->limits.v[i] = (long long)json_integer_value(v);
    }
    d->klass = strdup(klass);
    d->toolchain = strdup("recorded");
    d->description_text = json_dumps(lim, JSON_COMPACT | JSON_SORT_KEYS);
    if (!d->klass || !d->toolchain || !d->description_text) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    *out = d;
    d = NULL;
    rc = 0;
out:
    catalog_devices_free(d, d ? 1 : 0);
    json_decref(rec);
    return rc;
}

/* The runner, kernels and cache folder, with the device mode's defaults; opens the catalog. */
static int bp_catalog(const bench_predict_options *opt, const char *exe_dir, const json_t *measure,
                      bp_data *d, kt_error *err)
{
    char runner[PATH_MAX], kdir[PATH_MAX];
    const char *kdirs[1] = {kdir};
    struct stat st;
    snprintf(runner, sizeof runner, "%s", opt->runner ? opt->runner : "");
    if (!opt->runner)
        snprintf(runner, sizeof runner, "%s/ktune-runner", exe_dir ? exe_dir : ".");
    if (opt->kernels) {
        snprintf(kdir, sizeof kdir, "%s", opt->kernels);
    } else {
        snprintf(kdir, sizeof kdir, "%s/../kernels", exe_dir ? exe_dir : ".");
        if (stat(kdir, &st) != 0 || !S_ISDIR(st.st_mode))
            snprintf(kdir, sizeof kdir, "kernels");
    }
    int core = opt->cpu_core;
    if (core == BENCH_CPU_CORE_AUTO) {
        cpu_set_t set;
        CPU_ZERO(&set);
        core = -1;
        if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) >= 2) {
            for (int i = CPU_SETSIZE - 1; i >= 0 && core < 0; i--)
                core = CPU_ISSET(i, &set) ? i : -1;
        }
    }
    catalog_options copt = {.dataset_dirs = NULL, .n_dataset_dirs = 0, .replay_speed = 0};
    catalog_real_options real = {
        .kernel_dirs = kdirs,
        .n_kernel_dirs = 1,
        .runner = runner,
        .cache_dir = opt->cache_dir ? opt->cache_dir : "var/cache",
        .cpu_core = core,
        /* as the caches were measured (their header), so that added measurements compare */
        .min_repeats = (int)json_integer_value(json_object_get(measure, "min_repeats")),
        .max_repeats = (int)json_integer_value(json_object_get(measure, "max_repeats")),
        .min_seconds = json_number_value(json_object_get(measure, "min_seconds")),
        .max_seconds = json_number_value(json_object_get(measure, "max_seconds")),
        .compile_timeout_s = json_number_value(json_object_get(measure, "compile_timeout_s")),
        .run_timeout_s = json_number_value(json_object_get(measure, "run_timeout_s")),
        .slow_factor = json_number_value(json_object_get(measure, "slow_factor"))};
    catalog_device *devs = NULL;
    int n_devs = 0;
    if (opt->replay_as) {
        if (bp_recorded_device(opt->replay_as, &devs, err) < 0)
            return -1;
        n_devs = 1;
    } else if (device_discover(&real, &devs, &n_devs, err) < 0) {
        return -1;
    }
    if (!(d->cat = catalog_new_real(&copt, &real, devs, n_devs, err)))
        return -1;
    return 0;
}

/* Adds the trial lines of one cache (text after its header) to problem p. */
static void bp_add_lines(bp_data *d, int p, char *text)
{
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        json_t *o = json_loads(line, 0, NULL);
        const json_t *cfg = json_object_get(o, "config");
        const char *status = json_string_value(json_object_get(o, "status"));
        double t = json_number_value(json_object_get(o, "time_ms"));
        int added = -1;
        d->lines++;
        if (json_is_object(cfg) && status && strcmp(status, "ok") == 0)
            added = training_set_add_trial(d->all, p, cfg, t);
        else if (json_is_object(cfg) && status)
            added = training_set_add_trial(d->failed, p, cfg, 1.0);
        d->skipped += added != 1;
        json_decref(o);
    }
}

/* Reads one cache: its header into *header (new reference), its text into *text (after the
 * header line; free it). */
static int bp_read(const char *path, json_t **header, char **text, char **rest, kt_error *err)
{
    size_t len = 0;
    *header = NULL;
    if (!(*text = kt_file_read_all(path, BENCH_PREDICT_MAX_FILE_BYTES, &len, err)))
        return -1;
    char *nl = strchr(*text, '\n');
    if (nl)
        *nl = 0;
    *header = json_loads(*text, 0, NULL);
    *rest = nl ? nl + 1 : *text + len;
    if (!json_is_object(*header) || !json_object_get(*header, "ktune_measure_cache") ||
        !json_is_object(json_object_get(*header, "problem"))) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "%s: not a measurement cache (no header line)", path);
        return -1;
    }
    return 0;
}

int bench_predict_load(const bench_predict_options *opt, const char *exe_dir, bp_data *d,
                       FILE *progress, kt_error *err)
{
    char **paths = NULL, *text = NULL, *rest = NULL;
    int n_paths = 0, rc = -1;
    json_t *header = NULL;
    target t;
    static const char *const same[] = {"kernel", "kernel_hash", "device", "device_class"};

    memset(&t, 0, sizeof t);
    memset(d, 0, sizeof *d);
    if (!(d->warnings = json_array()) || bp_list(opt, &paths, &n_paths, err) < 0)
        goto out;
    if (!(d->probs = calloc((size_t)n_paths, sizeof *d->probs))) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    for (int f = 0; f < n_paths; f++) {
        if (bp_read(paths[f], &header, &text, &rest, err) < 0)
            goto out;
        if (!d->cat) { /* the first cache sets the kernel, device and measurement options */
            if (bp_catalog(opt, exe_dir, json_object_get(header, "measure"), d, err) < 0)
                goto out;
        } else {
            for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
                if (strcmp(bp_str(header, same[i]), bp_str(d->header, same[i])) != 0) {
                    kt_error_set(err, KT_ERR_BAD_REQUEST, "%s: %s '%s', the others '%s'", paths[f],
                                 same[i], bp_str(header, same[i]), bp_str(d->header, same[i]));
                    kt_error_hint(err, "give caches of one kernel (one source) on one device");
                    goto out;
                }
            }
        }
        target_release(&t); /* the previous cache's, when it was not kept */
        if (catalog_resolve(d->cat, bp_str(header, "kernel"), bp_str(header, "device"),
                            json_object_get(header, "problem"), &t, err) < 0) {
            kt_error_prefix(err, "%s", paths[f]);
            goto out;
        }
        if (!d->all) {
            const kernel_spec *ks = catalog_find_kernel(d->cat, t.key.kernel);
            json_t *names = json_array();
            for (int a = 0; ks && names && a < ks->n_args; a++)
                json_array_append_new(names, json_string(ks->args[a].name));
            json_t *derived = ks ? kernel_spec_derived_json(ks) : NULL;
            d->all = training_set_new_from_space(t.sp, names, err);
            d->failed = d->all ? training_set_new_from_space(t.sp, names, err) : NULL;
            json_decref(names);
            d->spaces = json_pack("{s:s, s:s, s:s}", "device_class", t.key.device_class,
                                  "limits_from", opt->replay_as ? opt->replay_as : "probed",
                                  "kernel_hash", t.key.kernel_hash);
            /* the spec's buffer sizes and FLOPs as features (model/derived.h) */
            int drc = d->failed ? training_set_set_derived(d->all, derived, err) : -1;
            json_decref(derived);
            if (drc < 0)
                goto out;
            for (size_t i = 0; i < 2; i++) {
                const char *field = i == 0 ? "device_class" : "kernel_hash";
                const char *mine = i == 0 ? t.key.device_class : t.key.kernel_hash;
                if (strcmp(bp_str(header, field), mine) == 0)
                    continue;
                if (opt->measure) {
                    kt_error_set(err, KT_ERR_CONFLICT,
                                 "%s: recorded with %s '%s', this machine has '%s'", paths[f],
                                 field, bp_str(header, field), mine);
                    kt_error_hint(err, "--measure adds measurements only to caches of this CPU "
                                       "and kernel source; leave it out to replay");
                    goto out;
                }
                if (opt->replay_as && i == 0) {
                    kt_error_set(err, KT_ERR_CONFLICT,
                                 "%s: recorded with device_class '%s', --replay-as %s is '%s'",
                                 paths[f], bp_str(header, field), opt->replay_as, mine);
                    kt_error_hint(err, "give the record of the device the caches were measured on");
                    goto out;
                }
                bp_warn(d, progress, "the caches' %s is %s; here it is %s (spaces built here)",
                        field, bp_str(header, field), mine);
            }
        }
        int p = training_set_add_problem(d->all, t.problem, err);
        if (p < 0 || training_set_add_problem(d->failed, t.problem, err) != p)
            goto out;
        if (p < d->n) { /* a second cache of the same problem: its trials join the first */
            bp_warn(d, progress, "%s: the same problem as %s%s", paths[f], d->probs[p].path, "");
            json_decref(header);
        } else {
            d->probs[p].path = paths[f];
            paths[f] = NULL;
            d->probs[p].header = header;
            d->probs[p].t = t;
            memset(&t, 0, sizeof t); /* kept */
            d->header = d->probs[0].header;
            d->n++;
        }
        header = NULL;
        bp_add_lines(d, p, rest);
        free(text);
        text = NULL;
    }
    rc = 0;
out:
    target_release(&t);
    for (int f = 0; f < n_paths; f++)
        free(paths[f]);
    free(paths);
    free(text);
    json_decref(header);
    return rc;
}

void bp_data_free(bp_data *d)
{
    for (int i = 0; d->probs && i < d->n; i++) {
        bench_mcache_free(d->probs[i].mc);
        target_release(&d->probs[i].t);
        json_decref(d->probs[i].header);
        free(d->probs[i].path);
    }
    free(d->probs);
    backend_close(d->b);
    catalog_free(d->cat);
    training_set_free(d->all);
    training_set_free(d->failed);
    json_decref(d->warnings);
    json_decref(d->spaces);
    memset(d, 0, sizeof *d);
}

int bp_measure(bp_data *d, int di, const int *row, double *time_ms, const char **status,
               kt_error *err)
{
    bp_problem *pr = &d->probs[di];
    config_id id;
    trial_result r;
    int rc = -1;

    trial_result_init(&r);
    if (space_encode(pr->t.sp, row, &id) < 0)
        return kt_error_set(err, KT_ERR_INTERNAL, "a predicted configuration is not valid");
    if (!pr->mc) {
        json_t *identity = json_pack(
            "{s:s, s:s, s:s, s:s, s:O}", "kernel", bp_str(pr->header, "kernel"), "kernel_hash",
            bp_str(pr->header, "kernel_hash"), "device", bp_str(pr->header, "device"),
            "device_class", bp_str(pr->header, "device_class"), "problem",
            json_object_get(pr->header, "problem"));
        pr->mc = identity ? bench_mcache_open(pr->path, pr->t.sp, identity,
                                              json_object_get(pr->header, "measure"), err)
                          : NULL;
        json_decref(identity);
        if (!pr->mc)
            goto out;
    }
    if (!bench_mcache_get(pr->mc, id, &r)) {
        if (!d->b && !(d->b = backend_open(d->cat, pr->t.key.device, err)))
            goto out;
        if (backend_measure(d->b, &pr->t, id, &r, err) < 0 ||
            bench_mcache_put(pr->mc, id, &r, err) < 0)
            goto out;
    }
    json_t *cfg = space_config_json(pr->t.sp, id);
    *status = trial_status_name(r.status);
    if (r.status == TRIAL_OK && isfinite(r.time_ms) && r.time_ms > 0) {
        training_set_add_trial(d->all, di, cfg, r.time_ms);
        *time_ms = r.time_ms;
        rc = 1;
    } else {
        training_set_add_trial(d->failed, di, cfg, 1.0);
        rc = 0;
    }
    json_decref(cfg);
out:
    trial_result_release(&r);
    return rc;
}
