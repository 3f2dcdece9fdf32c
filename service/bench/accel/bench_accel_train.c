/* bench/accel/bench_accel_train — phase 1 of `ktune bench --accel`: the surrogate of a kernel on
 * the device, trained on random valid mappings of sampled problems, or read back from the cache
 * (see bench_accel_impl.h). The cache file is named by an FNV-1a hash of everything the training
 * depends on (kernel and device hashes, problems, samples, epochs, hidden widths, seed, time
 * limit) and holds the surrogate's bytes; a JSON file beside it keeps the training figures. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/file.h"
#include "core/rng.h"
#include "core/strbuf.h"
#include "bench/accel/bench_accel_impl.h"

#define BA_MAX_META     (SURROGATE_MAX_OUTPUTS)
#define BA_MAX_FILE     (256L << 20)
#define BA_TRIES_PER_OK 50 /* random mappings drawn per valid one wanted, at most */

static uint64_t ba_fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ULL;
    }
    return h;
}

/* The training key of (opt, d, k). */
static uint64_t ba_train_key(const bench_accel_options *opt, const accel_device *d,
                             const accel_kernel *k)
{
    uint64_t h = 14695981039346656037ULL, kh = accel_kernel_hash(k), dh = accel_device_hash(d);
    h = ba_fnv(h, "ktune-accel-surrogate-1", 23);
    h = ba_fnv(h, &kh, sizeof kh);
    h = ba_fnv(h, &dh, sizeof dh);
    h = ba_fnv(h, &opt->problems, sizeof opt->problems);
    h = ba_fnv(h, &opt->samples, sizeof opt->samples);
    h = ba_fnv(h, &opt->epochs, sizeof opt->epochs);
    h = ba_fnv(h, &opt->n_hidden, sizeof opt->n_hidden);
    h = ba_fnv(h, opt->hidden, sizeof opt->hidden[0] * (size_t)opt->n_hidden);
    h = ba_fnv(h, &opt->train_seed, sizeof opt->train_seed);
    h = ba_fnv(h, &opt->train_max_s, sizeof opt->train_max_s);
    return h;
}

/* The whole file into *buf (malloc'd); 1 read, 0 absent, -1 with err. */
static int ba_read_file(const char *path, char **buf, size_t *n, kt_error *err)
{
    if (access(path, F_OK) != 0 && errno == ENOENT) {
        *buf = NULL;
        return 0;
    }
    *buf = kt_file_read_all(path, BA_MAX_FILE, n, err);
    return *buf ? 1 : -1;
}

/* Writes n bytes to path through a temporary file and a rename. 0, or -1 with err. */
static int ba_write_file(const char *path, const char *bytes, size_t n, kt_error *err)
{
    char tmp[BENCH_MAX_PATH + 16];
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return kt_error_set(err, KT_ERR_IO, "%s: %s", tmp, strerror(errno));
    int bad = fwrite(bytes, 1, n, f) != n;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path) != 0) {
        unlink(tmp);
        return kt_error_set(err, KT_ERR_IO, "%s: cannot write", path);
    }
    return 0;
}

/* The cache folder (created): opt's, or <exe_dir>/accel-surrogates. 0 with dir, 1 no cache
 * ("none"), -1 with err. */
static int ba_cache_dir(const bench_accel_options *opt, const char *exe_dir, char *dir, size_t cap,
                        kt_error *err)
{
    int w = opt->cache_dir ? snprintf(dir, cap, "%s", opt->cache_dir)
                           : snprintf(dir, cap, "%s/accel-surrogates", exe_dir ? exe_dir : "build");
    if (w < 0 || (size_t)w >= cap)
        return kt_error_set(err, KT_ERR_BAD_OPTION, "--surrogate-cache: path too long");
    if (strcmp(dir, "none") == 0)
        return 1;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return kt_error_set(err, KT_ERR_IO, "--surrogate-cache %s: %s", dir, strerror(errno));
    return 0;
}

/* The training samples of k on d: data filled, figures into info. 0, or -1 with err. */
static int ba_sample(const bench_accel_options *opt, const accel_device *d, const accel_kernel *k,
                     surrogate_data **out, json_t *info, FILE *progress, kt_error *err)
{
    kt_rng rng;
    accel_problem p;
    double w[BA_MAX_META], meta[BA_MAX_META];
    long long attempted = 0, kept = 0;
    double t0 = kt_clock_s();
    int rc = -1, nw, skipped = 0;
    ba_problem bp;

    memset(&bp, 0, sizeof bp);
    *out = NULL;
    kt_rng_seed(&rng, opt->train_seed ^ accel_kernel_hash(k));
    accel_problem_sample(k, &rng, &p); /* the weights depend on the kernel only */
    nw = accel_meta_objective(&p, w, BA_MAX_META);
    if (nw <= 0 || !(*out = surrogate_data_new(nw, w, err)))
        goto out;
    for (int i = 0; i < opt->problems; i++) {
        long long want = (long long)opt->samples * (i + 1) / opt->problems - kept;
        if (i > 0)
            accel_problem_sample(k, &rng, &p);
        if (ba_problem_init(&bp, d, &p, err) < 0) {
            if (err->code != KT_ERR_SPACE_TOO_LARGE)
                goto out;
            skipped++; /* a shape whose space does not fit 64-bit ids: drawn again below */
            i--;
            if (skipped > opt->problems)
                goto out;
            continue;
        }
        if (space_count(bp.sp) == 0) {
            ba_problem_release(&bp);
            continue;
        }
        for (long long t = 0; want > 0 && t < want * BA_TRIES_PER_OK; t++) {
            config_id id = space_sample(bp.sp, &rng);
            accel_stats st;
            double obj;
            attempted++;
            int v = ba_evaluate(&bp, id, &obj, &st, err);
            if (v < 0)
                goto out;
            if (!v)
                continue;
            if (accel_meta(&bp.p, &st, &bp.lb, meta, BA_MAX_META) != nw) {
                kt_error_set(err, KT_ERR_INTERNAL, "accel_meta: not %d values", nw);
                goto out;
            }
            if (surrogate_data_add(*out, bp.pf, bp.npf, bp.sp, id, meta, i, err) < 0)
                goto out;
            kept++;
            want--;
        }
        ba_problem_release(&bp);
        if (progress && (i + 1) % 50 == 0)
            fprintf(progress, "ktune bench: %s: %d problems sampled, %lld valid mappings\n",
                    accel_kernel_name(k), i + 1, kept);
    }
    json_object_set_new(info, "problems", json_integer(opt->problems));
    json_object_set_new(info, "attempted", json_integer(attempted));
    json_object_set_new(info, "samples", json_integer(kept));
    json_object_set_new(info, "valid_fraction",
                        json_real(attempted ? (double)kept / (double)attempted : 0));
    json_object_set_new(info, "sample_s", json_real(kt_clock_s() - t0));
    if (kept < 2) {
        kt_error_set(err, KT_ERR_INTERNAL, "%s: only %lld valid mappings in %lld drawn",
                     accel_kernel_name(k), kept, attempted);
        goto out;
    }
    rc = 0;
out:
    ba_problem_release(&bp);
    if (rc < 0) {
        surrogate_data_free(*out);
        *out = NULL;
    }
    return rc;
}

/* Trains (sampling first) and fills info; *out the surrogate, bytes its saved form. */
static int ba_train(const bench_accel_options *opt, const accel_device *d, const accel_kernel *k,
                    surrogate **out, strbuf *bytes, json_t *info, FILE *progress, kt_error *err)
{
    surrogate_data *data = NULL;
    surrogate_options so;
    json_t *metrics = NULL;
    int rc = -1;

    *out = NULL;
    if (progress)
        fprintf(progress,
                "ktune bench: %s: training a surrogate (%d problems, %d samples, %d epochs)\n",
                accel_kernel_name(k), opt->problems, opt->samples, opt->epochs);
    if (ba_sample(opt, d, k, &data, info, progress, err) < 0)
        goto out;
    memset(&so, 0, sizeof so);
    for (int i = 0; i < opt->n_hidden && i < SURROGATE_MAX_HIDDEN; i++)
        so.hidden[so.n_hidden++] = opt->hidden[i];
    so.epochs = opt->epochs;
    so.max_seconds = opt->train_max_s;
    so.seed = opt->train_seed;
    double t0 = kt_clock_s();
    if (!(*out = surrogate_train(data, &so, &metrics, err)))
        goto out;
    json_object_set_new(info, "train_s", json_real(kt_clock_s() - t0));
    json_object_set(info, "metrics", metrics ? metrics : json_null());
    if (surrogate_save(*out, bytes, err) < 0)
        goto out;
    rc = 0;
out:
    json_decref(metrics);
    surrogate_data_free(data);
    if (rc < 0) {
        surrogate_free(*out);
        *out = NULL;
    }
    return rc;
}

int ba_surrogate_get(const bench_accel_options *opt, const char *exe_dir, const accel_device *d,
                     const accel_kernel *k, surrogate **out, json_t **info, FILE *progress,
                     kt_error *err)
{
    char dir[BENCH_MAX_PATH], path[BENCH_MAX_PATH + 64], jpath[BENCH_MAX_PATH + 80], key[17];
    char *buf = NULL, *jbuf = NULL;
    size_t n = 0, jn = 0;
    strbuf bytes;
    int rc = -1, nocache;

    strbuf_init(&bytes, (size_t)BA_MAX_FILE);
    *out = NULL;
    *info = json_object();
    snprintf(key, sizeof key, "%016llx", (unsigned long long)ba_train_key(opt, d, k));
    if (!*info) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    json_object_set_new(*info, "kernel", json_string(accel_kernel_name(k)));
    json_object_set_new(*info, "key", json_string(key));
    if ((nocache = ba_cache_dir(opt, exe_dir, dir, sizeof dir, err)) < 0)
        goto out;
    snprintf(path, sizeof path, "%s/%s-%s-%s.surrogate", dir, accel_kernel_name(k), d->name, key);
    snprintf(jpath, sizeof jpath, "%s.json", path);
    if (!nocache && ba_read_file(path, &buf, &n, err) > 0 &&
        ba_read_file(jpath, &jbuf, &jn, err) > 0) {
        json_t *old = json_loads(jbuf, 0, NULL);
        *out = surrogate_load(buf, n, err);
        if (*out && json_is_object(old)) {
            json_object_update(*info, old);
            json_object_set_new(*info, "cached", json_true());
            json_object_set_new(*info, "file", json_string(path));
            json_decref(old);
            if (progress)
                fprintf(progress, "ktune bench: %s: surrogate read from %s\n", accel_kernel_name(k),
                        path);
            rc = 0;
            goto out;
        }
        json_decref(old);
        surrogate_free(*out); /* unreadable: trained again and rewritten */
        *out = NULL;
    }
    kt_error_clear(err);
    if (ba_train(opt, d, k, out, &bytes, *info, progress, err) < 0)
        goto out;
    json_object_set_new(*info, "cached", json_false());
    if (!nocache) {
        char *text = json_dumps(*info, JSON_COMPACT);
        int bad = !text || ba_write_file(path, bytes.data ? bytes.data : "", bytes.len, err) < 0 ||
                  ba_write_file(jpath, text, strlen(text), err) < 0;
        free(text);
        if (bad)
            goto out;
        json_object_set_new(*info, "file", json_string(path));
    }
    rc = 0;
out:
    strbuf_release(&bytes);
    free(buf);
    free(jbuf);
    if (rc < 0) {
        surrogate_free(*out);
        *out = NULL;
        json_decref(*info);
        *info = NULL;
    }
    return rc;
}
