/* bench/bench_mcache — the measurement cache of `ktune bench --device` (see bench_mcache.h). */
#include "bench/bench_mcache.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/array.h"
#include "core/log.h"
#include "search/search_set.h"

#define MCACHE_VERSION 1

struct bench_mcache {
    const space *sp;
    char *path; /* NULL: memory only */
    FILE *f;
    trial_result *entries;
    size_t n, cap;
    search_map map; /* id -> index into entries */
    bench_mcache_stats stats;
};

static void mcache_now(char *buf, size_t cap)
{
    time_t t = time(NULL);
    struct tm tm;
    if (gmtime_r(&t, &tm) == NULL || strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(buf, cap, "unknown");
}

/* The entry of id, or NULL. */
static trial_result *mcache_entry(const bench_mcache *m, config_id id)
{
    uint64_t i;
    return search_map_get(&m->map, id, &i) ? &m->entries[i] : NULL;
}

/* id's entry replaced by r (a copy). -1 when out of memory (the entry unchanged). */
static int mcache_replace(trial_result *e, const trial_result *r)
{
    json_t *x = r->extras ? json_deep_copy(r->extras) : NULL;
    if (r->extras && !x)
        return -1;
    json_decref(e->extras);
    *e = *r;
    e->extras = x;
    return 0;
}

static int mcache_add(bench_mcache *m, config_id id, const trial_result *r)
{
    if (KT_ARRAY_GROW(m->entries, m->cap, m->n + 1, BENCH_MCACHE_MAX_ENTRIES) != 0 ||
        search_map_reserve(&m->map) < 0)
        return -1;
    search_map_put(&m->map, id, m->n);
    trial_result *e = &m->entries[m->n];
    *e = *r;
    e->extras = r->extras ? json_deep_copy(r->extras) : NULL;
    m->n++;
    return 0;
}

static double mcache_num(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    double d = json_is_number(v) ? json_number_value(v) : 0.0;
    return isfinite(d) && d >= 0 ? d : 0.0;
}

/* One entry line -> (id, result). -1 when the line is not an entry of this space. */
static int mcache_parse_entry(const bench_mcache *m, const json_t *o, config_id *id,
                              trial_result *r)
{
    trial_status st;
    const char *name = json_string_value(json_object_get(o, "status"));
    const json_t *cfg = json_object_get(o, "config");

    trial_result_init(r);
    if (!json_is_object(cfg) || !name || trial_status_parse(name, &st) < 0 ||
        !trial_status_is_final(st) || space_config_from_json(m->sp, cfg, id, NULL) < 0)
        return -1;
    r->status = st;
    r->time_ms = mcache_num(o, "time_ms");
    r->compile_ms = mcache_num(o, "compile_ms");
    r->measure_ms = mcache_num(o, "measure_ms");
    r->noise_cv = mcache_num(o, "noise_cv");
    const json_t *rep = json_object_get(o, "repeats");
    r->repeats = json_is_integer(rep) ? (int)json_integer_value(rep) : 0;
    if (st == TRIAL_OK && !(r->time_ms > 0))
        return -1;
    const json_t *ex = json_object_get(o, "extras");
    r->extras = json_is_object(ex) ? (json_t *)ex : NULL; /* borrowed; mcache_add copies */
    return 0;
}

/* The header against identity (every field must be equal) and measure (warning only). */
static int mcache_check_header(const char *path, const json_t *h, const json_t *identity,
                               const json_t *measure, kt_error *err)
{
    const char *key;
    json_t *want;

    if (!json_is_object(h) || !json_is_integer(json_object_get(h, "ktune_measure_cache"))) {
        kt_error_set(err, KT_ERR_CONFIG, "%.300s is not a ktune measure cache (no header line)",
                     path);
        kt_error_hint(err, "give a new file name, or the file written by an earlier ktune bench");
        return -1;
    }
    if (json_integer_value(json_object_get(h, "ktune_measure_cache")) != MCACHE_VERSION) {
        kt_error_set(err, KT_ERR_CONFIG, "%.300s: measure cache version %lld, this ktune reads %d",
                     path, (long long)json_integer_value(json_object_get(h, "ktune_measure_cache")),
                     MCACHE_VERSION);
        return -1;
    }
    json_object_foreach((json_t *)identity, key, want)
    {
        const json_t *have = json_object_get(h, key);
        if (have && json_equal(have, want))
            continue;
        char *hs = have ? json_dumps(have, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY) : NULL;
        char *ws = json_dumps(want, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
        kt_error_set(err, KT_ERR_CONFLICT,
                     "measure cache %.200s was recorded for %s %.120s, not %.120s", path, key,
                     hs ? hs : "(none)", ws ? ws : "?");
        kt_error_hint(err, "its measurements do not apply here: give another --measure-cache file");
        free(hs);
        free(ws);
        return -1;
    }
    if (measure && !json_equal(json_object_get(h, "measure"), measure)) {
        char *hs = json_dumps(json_object_get(h, "measure"), JSON_COMPACT | JSON_ENCODE_ANY);
        char *ws = json_dumps(measure, JSON_COMPACT);
        log_warn("measure cache %s was measured with %s; new measurements use %s", path,
                 hs ? hs : "(none)", ws ? ws : "?");
        free(hs);
        free(ws);
    }
    return 0;
}

static int mcache_write_line(bench_mcache *m, const json_t *o, kt_error *err)
{
    char *text = json_dumps(o, JSON_COMPACT);
    int rc = -1;

    if (!text) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "cannot encode a measure cache line");
        goto out;
    }
    /* A line is written and flushed to the kernel at once, then synced: a killed or crashed run
     * loses at most the line being written, which the next open cuts off. */
    if (fputs(text, m->f) == EOF || fputc('\n', m->f) == EOF || fflush(m->f) != 0 ||
        fsync(fileno(m->f)) != 0) {
        kt_error_set(err, KT_ERR_IO, "writing measure cache %.300s: %s", m->path, strerror(errno));
        goto out;
    }
    rc = 0;
out:
    free(text);
    return rc;
}

/* Reads the file: header check, entries, torn tail cut off. The file position ends at the end. */
static int mcache_load(bench_mcache *m, const json_t *identity, const json_t *measure,
                       kt_error *err)
{
    char *line = malloc(BENCH_MCACHE_MAX_LINE + 2);
    long good_end = 0, lineno = 0;
    int rc = -1, have_header = 0;

    if (!line) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    for (;;) {
        long start = ftell(m->f);
        if (!fgets(line, BENCH_MCACHE_MAX_LINE + 2, m->f))
            break;
        size_t len = strlen(line);
        lineno++;
        if (len == 0 || line[len - 1] != '\n') {
            if (feof(m->f)) { /* torn last line: cut off below */
                log_warn("measure cache %s: line %ld is incomplete (an interrupted write); "
                         "dropped",
                         m->path, lineno);
                break;
            }
            int c; /* longer than any line we write: skip it */
            while ((c = fgetc(m->f)) != EOF && c != '\n')
                ;
            m->stats.skipped++;
            good_end = ftell(m->f);
            continue;
        }
        good_end = start + (long)len;
        json_t *o = json_loads(line, 0, NULL);
        if (!have_header) {
            int ok = mcache_check_header(m->path, o, identity, measure, err);
            json_decref(o);
            if (ok < 0)
                goto out;
            have_header = 1;
            continue;
        }
        config_id id;
        trial_result r;
        trial_result *have = NULL;
        if (!o || mcache_parse_entry(m, o, &id, &r) < 0) {
            m->stats.skipped++;
        } else if ((have = mcache_entry(m, id))) {
            /* a later line of a configuration: a re-measurement of a cut-off (bench_cutoff.h) */
            if (bench_cutoff_supersedes(have, &r)) {
                if (mcache_replace(have, &r) < 0) {
                    json_decref(o);
                    kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
                    goto out;
                }
                m->stats.renewed++;
            }
        } else {
            if (m->n >= BENCH_MCACHE_MAX_ENTRIES) {
                json_decref(o);
                kt_error_set(err, KT_ERR_OUT_OF_RANGE, "measure cache %.300s: more than %d entries",
                             m->path, BENCH_MCACHE_MAX_ENTRIES);
                goto out;
            }
            if (mcache_add(m, id, &r) < 0) {
                json_decref(o);
                kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
                goto out;
            }
            m->stats.loaded++;
        }
        json_decref(o);
    }
    if (ferror(m->f)) {
        kt_error_set(err, KT_ERR_IO, "reading measure cache %.300s: %s", m->path, strerror(errno));
        goto out;
    }
    if (fflush(m->f) != 0 || ftruncate(fileno(m->f), good_end) != 0 ||
        fseek(m->f, good_end, SEEK_SET) != 0) {
        kt_error_set(err, KT_ERR_IO, "measure cache %.300s: %s", m->path, strerror(errno));
        goto out;
    }
    if (m->stats.skipped)
        log_warn("measure cache %s: %lld lines skipped (not an entry of this space)", m->path,
                 m->stats.skipped);
    if (!have_header) { /* a new (or empty) file */
        char host[256] = "", now[32];
        json_t *h = json_deep_copy(identity);
        if (gethostname(host, sizeof host - 1) != 0)
            host[0] = '\0';
        mcache_now(now, sizeof now);
        if (!h || json_object_set_new(h, "ktune_measure_cache", json_integer(MCACHE_VERSION)) < 0 ||
            (measure && json_object_set(h, "measure", (json_t *)measure) < 0) ||
            json_object_set_new(h, "host", json_string(host)) < 0 ||
            json_object_set_new(h, "created", json_string(now)) < 0) {
            json_decref(h);
            kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
            goto out;
        }
        int w = mcache_write_line(m, h, err);
        json_decref(h);
        if (w < 0)
            goto out;
    }
    rc = 0;
out:
    free(line);
    return rc;
}

bench_mcache *bench_mcache_open(const char *path, const space *sp, const json_t *identity,
                                const json_t *measure, kt_error *err)
{
    bench_mcache *m = calloc(1, sizeof *m);
    int fd = -1, ok = 0;

    if (!m) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    m->sp = sp;
    if (!path) {
        ok = 1;
        goto out;
    }
    if (!json_is_object(identity) || !(m->path = strdup(path))) {
        kt_error_set(err, !m->path ? KT_ERR_NO_MEMORY : KT_ERR_INTERNAL, "measure cache %.300s",
                     path);
        goto out;
    }
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        kt_error_set(err, KT_ERR_IO, "measure cache %.300s: %s", path, strerror(errno));
        goto out;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        kt_error_set(err, errno == EWOULDBLOCK ? KT_ERR_CONFLICT : KT_ERR_IO,
                     "measure cache %.300s: %s", path,
                     errno == EWOULDBLOCK ? "in use by another ktune bench" : strerror(errno));
        goto out;
    }
    m->f = fdopen(fd, "r+");
    if (!m->f) {
        kt_error_set(err, KT_ERR_IO, "measure cache %.300s: %s", path, strerror(errno));
        goto out;
    }
    fd = -1;
    if (mcache_load(m, identity, measure, err) < 0)
        goto out;
    ok = 1;
out:
    if (fd >= 0)
        close(fd);
    if (!ok) {
        bench_mcache_free(m);
        m = NULL;
    }
    return m;
}

int bench_mcache_get_for(bench_mcache *m, config_id id, const bench_cutoff *run, trial_result *out)
{
    const trial_result *e = mcache_entry(m, id);
    if (!e || !bench_cutoff_verdict(e, run, out))
        return 0;
    m->stats.hits++;
    if (out->status == TRIAL_TIMEOUT && e->status == TRIAL_OK)
        m->stats.cut_by_run++;
    return 1;
}

int bench_mcache_get(bench_mcache *m, config_id id, trial_result *out)
{
    uint64_t i;
    if (!search_map_get(&m->map, id, &i))
        return 0;
    const trial_result *e = &m->entries[i];
    *out = *e;
    out->extras = e->extras ? json_deep_copy(e->extras) : NULL;
    m->stats.hits++;
    return 1;
}

static json_t *mcache_entry_json(const bench_mcache *m, config_id id, const trial_result *r)
{
    char now[32];
    json_t *cfg = space_config_json(m->sp, id);
    if (!cfg)
        return NULL;
    mcache_now(now, sizeof now);
    return json_pack("{s:o, s:s, s:f, s:i, s:f, s:f, s:f, s:O?, s:s}", "config", cfg, "status",
                     trial_status_name(r->status), "time_ms",
                     r->status == TRIAL_OK && isfinite(r->time_ms) ? r->time_ms : 0.0, "repeats",
                     r->repeats, "noise_cv", isfinite(r->noise_cv) ? r->noise_cv : 0.0,
                     "compile_ms", isfinite(r->compile_ms) ? r->compile_ms : 0.0, "measure_ms",
                     isfinite(r->measure_ms) ? r->measure_ms : 0.0, "extras", r->extras,
                     "measured_at", now);
}

int bench_mcache_put(bench_mcache *m, config_id id, const trial_result *r, kt_error *err)
{
    int rc = -1;
    json_t *line = NULL;

    trial_result *have = mcache_entry(m, id);
    if ((have && !bench_cutoff_supersedes(have, r)) || !trial_status_is_final(r->status)) {
        rc = 0; /* the first measurement stays; unfinished results are never kept */
        goto out;
    }
    if (!have && m->n >= BENCH_MCACHE_MAX_ENTRIES) {
        kt_error_set(err, KT_ERR_OUT_OF_RANGE, "measure cache: more than %d entries",
                     BENCH_MCACHE_MAX_ENTRIES);
        goto out;
    }
    if (m->f) {
        line = mcache_entry_json(m, id, r);
        if (!line) {
            kt_error_set(err, KT_ERR_INTERNAL, "configuration %llu is not in the space",
                         (unsigned long long)id);
            goto out;
        }
        if (mcache_write_line(m, line, err) < 0)
            goto out;
    }
    if (have ? mcache_replace(have, r) < 0 : mcache_add(m, id, r) < 0) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    m->stats.stored++;
    m->stats.renewed += have != NULL;
    rc = 0;
out:
    json_decref(line);
    return rc;
}

bench_mcache_stats bench_mcache_get_stats(const bench_mcache *m)
{
    return m->stats;
}

void bench_mcache_free(bench_mcache *m)
{
    if (!m)
        return;
    if (m->f)
        fclose(m->f); /* releases the lock */
    for (size_t i = 0; i < m->n; i++)
        json_decref(m->entries[i].extras);
    free(m->entries);
    search_map_free(&m->map);
    free(m->path);
    free(m);
}
