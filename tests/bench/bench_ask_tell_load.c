/* Bench: ask/tell harnesses written in C (issue 27, "Speed"), a load generator against a running
 * ktuned. The harnesses of tests/bench/bench_ask_tell.py are Python processes whose own CPU per
 * request (0.3-0.6 ms) is comparable to the server's; a framework's harness (C++, CUDA) costs far
 * less. This program is such a harness, so that tells/s measures the server more than the client:
 * one pthread per harness, each with its own libcurl easy handle (one keep-alive connection),
 * jansson for the replies. It sends the same request bodies as bench_ask_tell.py:
 *
 *   throughput (default): --harnesses external jobs (random over the 32 x 32 grid A, B; parallel 8,
 *     history none, seed h + 1, budget --tells), created before the clock starts; then every
 *     harness asks 8 ({"n": 8, "wait_s": 10}) and tells each result in a request of its own, until
 *     it has told --tells, its job is done, or --seconds have passed. --combined: the last tell of
 *     each batch carries "ask": {"n": 8, "wait_s": 10} (no ask request but the first).
 *   --roundtrip: one harness, one job (parallel 1, budget --rounds + 10), --rounds rounds of batch
 *     1: ask {"n": 1} then a tell; --combined: one tell with "ask": 1 a round.
 *
 * The fake measurement is bench_ask_tell.py's: time_ms = 1 + seq % 7 (throughput), 1 + round % 13
 * (round trip), status ok. Prints tells/s over all harnesses (or the round's p50 / p90), p50 and
 * p90 of each kind of request (ask, tell, tell that asks) and this process's CPU (getrusage, user +
 * system, all threads) per tell: what the harnesses themselves cost. Clock and CPU start after the
 * jobs exist and the connections are open (a GET /healthz each), when every harness is released.
 * --json prints one JSON object instead (bench_ask_tell.py reads it). Exit 1 on any error reply or
 * transport error; without --url it says so and exits 0 (`make bench` runs every bench_* binary
 * bare; bench_ask_tell.py runs this one against its own ktuned).
 *
 *   bench_ask_tell_load --url http://127.0.0.1:PORT [--token T] [--harnesses 8] [--tells 400]
 *                       [--seconds S] [--combined] [--roundtrip --rounds 500] [--json]
 *
 * Everything is freed before main returns; each harness owns its client and latency arrays. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <curl/curl.h>
#include <jansson.h>

#include "core/array.h"
#include "core/clock.h"

#define LOAD_MAX_HARNESSES 256
#define LOAD_GRID          32 /* values 1..32 for A and B, as bench_ask_tell.py's GRID */
#define LOAD_BATCH         8
#define LOAD_WAIT_S        10
#define LOAD_REPLY_MAX     (4u << 20)
#define LOAD_LAT_MAX       (16u << 20)
#define LOAD_TIMEOUT_S     120L

typedef struct load_opts {
    const char *url;
    const char *token;
    int roundtrip, combined, json;
    long harnesses, tells, rounds;
    double seconds;
} load_opts;

/* Latencies of one kind of request, in ms. */
typedef struct load_lat {
    double *ms;
    size_t n, cap;
} load_lat;

typedef struct load_client {
    CURL *curl;
    struct curl_slist *headers;
    char *reply;
    size_t len, cap;
    char curl_err[CURL_ERROR_SIZE];
} load_client;

/* The start of the throughput part: every harness, its connection open, waits here until main
 * opens it (or gives up: a thread that could not start). */
typedef struct load_gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    long ready;
    int open, abort;
    double t0_s;
} load_gate;

typedef struct load_harness {
    const load_opts *o;
    long long job;
    load_gate *gate;
    long told;
    int done; /* an ask answered done: the job ended */
    load_lat first_ask, ask, tell, tell_ask;
    double end_s;
    char error[512];
} load_harness;

static size_t load_write(char *data, size_t size, size_t nmemb, void *user)
{
    load_client *c = user;
    size_t n = size * nmemb;
    if (n > LOAD_REPLY_MAX - c->len)
        return 0; /* curl fails the transfer: CURLE_WRITE_ERROR */
    if (c->len + n + 1 > c->cap) {
        size_t cap = c->cap ? c->cap : 4096;
        while (cap < c->len + n + 1)
            cap *= 2;
        char *p = realloc(c->reply, cap);
        if (!p)
            return 0;
        c->reply = p;
        c->cap = cap;
    }
    memcpy(c->reply + c->len, data, n);
    c->len += n;
    c->reply[c->len] = '\0';
    return n;
}

/* One keep-alive connection with the bench's headers; 0 or -1 (err set). */
static int load_client_open(load_client *c, const load_opts *o, char *err, size_t errlen)
{
    char auth[600];
    memset(c, 0, sizeof *c);
    c->curl = curl_easy_init();
    c->headers = curl_slist_append(NULL, "Content-Type: application/json");
    /* bodies are small, but never wait for a 100-continue */
    c->headers = c->headers ? curl_slist_append(c->headers, "Expect:") : NULL;
    if (c->headers && o->token) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", o->token);
        c->headers = curl_slist_append(c->headers, auth);
    }
    if (!c->curl || !c->headers) {
        snprintf(err, errlen, "out of memory opening a client");
        return -1;
    }
    curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, c->headers);
    curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, load_write);
    curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, c->curl_err);
    curl_easy_setopt(c->curl, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L); /* threads */
    curl_easy_setopt(c->curl, CURLOPT_TIMEOUT, LOAD_TIMEOUT_S);
    return 0;
}

static void load_client_close(load_client *c)
{
    if (c->curl)
        curl_easy_cleanup(c->curl);
    curl_slist_free_all(c->headers);
    free(c->reply);
}

/* GET (body NULL) or POST body to url + path; *out the parsed reply (the caller decrefs). 0, or -1
 * with err naming the path: a transport error, a status other than 200 / 202, a reply not JSON. */
static int load_request(load_client *c, const load_opts *o, const char *path, const char *body,
                        json_t **out, char *err, size_t errlen)
{
    char url[512];
    long status = 0;
    int rc = -1;
    *out = NULL;
    c->len = 0;
    c->curl_err[0] = '\0';
    snprintf(url, sizeof url, "%s%s", o->url, path);
    curl_easy_setopt(c->curl, CURLOPT_URL, url);
    if (body) {
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    } else {
        curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
    }
    CURLcode cc = curl_easy_perform(c->curl);
    if (cc != CURLE_OK) {
        snprintf(err, errlen, "%s %s: %s", body ? "POST" : "GET", path,
                 c->curl_err[0] ? c->curl_err : curl_easy_strerror(cc));
        goto done;
    }
    curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200 && status != 202) {
        snprintf(err, errlen, "%s %s: %ld %.300s", body ? "POST" : "GET", path, status,
                 c->reply ? c->reply : "");
        goto done;
    }
    json_error_t jerr;
    *out = json_loadb(c->reply ? c->reply : "", c->len, 0, &jerr);
    if (!*out) {
        snprintf(err, errlen, "%s %s: a reply that is not JSON: %s", body ? "POST" : "GET", path,
                 jerr.text);
        goto done;
    }
    rc = 0;
done:
    return rc;
}

/* DELETE /v1/jobs/{id}: a job the bench leaves unfinished (a round trip's budget has 10 to spare; a
 * harness stopped by --seconds) would hold one of the server's --max-jobs slots until its runner
 * hands it back (a harness away 30 s), and the next run's jobs would wait for it. 409 (the job
 * ended meanwhile) is fine. 0 or -1 (err set). */
static int load_cancel(load_client *c, const load_opts *o, long long job, char *err, size_t errlen)
{
    char url[512];
    long status = 0;
    c->len = 0;
    c->curl_err[0] = '\0';
    snprintf(url, sizeof url, "%s/v1/jobs/%lld", o->url, job);
    curl_easy_setopt(c->curl, CURLOPT_URL, url);
    curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, "DELETE");
    CURLcode cc = curl_easy_perform(c->curl);
    curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, NULL);
    if (cc == CURLE_OK)
        curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
    if (status == 200 || status == 409)
        return 0;
    snprintf(err, errlen, "DELETE /v1/jobs/%lld: %s %ld %.300s", job,
             cc != CURLE_OK ? curl_easy_strerror(cc) : "", status,
             cc == CURLE_OK && c->reply ? c->reply : "");
    return -1;
}

static int load_lat_add(load_lat *l, double ms)
{
    if (KT_ARRAY_GROW(l->ms, l->cap, l->n + 1, LOAD_LAT_MAX) != 0)
        return -1;
    l->ms[l->n++] = ms;
    return 0;
}

/* load_lat_add, saying so in err when it fails. */
static int load_note(load_lat *l, double ms, char *err, size_t errlen)
{
    if (load_lat_add(l, ms) == 0)
        return 0;
    snprintf(err, errlen, "out of memory keeping latencies");
    return -1;
}

static int load_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* bench_ask_tell.py's percentile: the sorted value at index min(n - 1, q * n); sorts l. */
static double load_pct(load_lat *l, double q)
{
    if (l->n == 0)
        return 0.0;
    qsort(l->ms, l->n, sizeof *l->ms, load_cmp_double);
    size_t i = (size_t)(q * (double)l->n);
    return l->ms[i < l->n ? i : l->n - 1];
}

/* Appends src's latencies to dst; 0 or -1. */
static int load_lat_merge(load_lat *dst, const load_lat *src)
{
    for (size_t i = 0; i < src->n; i++)
        if (load_lat_add(dst, src->ms[i]) != 0)
            return -1;
    return 0;
}

/* POST /v1/tune: an external job over the grid, as bench_ask_tell.py's external_job; its id or -1.
 */
static long long load_create_job(load_client *c, const load_opts *o, const char *kernel,
                                 long budget, int parallel, int seed, char *err, size_t errlen)
{
    long long id = -1;
    json_t *reply = NULL, *params = json_array(), *values[2] = {json_array(), json_array()};
    for (int v = 1; v <= LOAD_GRID; v++) {
        json_array_append_new(values[0], json_integer(v));
        json_array_append_new(values[1], json_integer(v));
    }
    json_array_append_new(params, json_pack("{s:s, s:o}", "name", "A", "values", values[0]));
    json_array_append_new(params, json_pack("{s:s, s:o}", "name", "B", "values", values[1]));
    json_t *req =
        json_pack("{s:s, s:s, s:s, s:{s:o}, s:s, s:{s:I}, s:i, s:s, s:i}", "kernel", kernel,
                  "device", "external", "device_class", "bench-class", "space", "parameters",
                  params, "strategy", "random", "budget", "evaluations", (json_int_t)budget, "seed",
                  seed, "history", "none", "parallel", parallel);
    char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
    if (!body) {
        snprintf(err, errlen, "out of memory building a job");
        goto done;
    }
    if (load_request(c, o, "/v1/tune", body, &reply, err, errlen) != 0)
        goto done;
    json_t *jid = json_object_get(reply, "id");
    if (!json_is_integer(jid)) {
        snprintf(err, errlen, "POST /v1/tune: no id in the reply");
        goto done;
    }
    id = (long long)json_integer_value(jid);
done:
    free(body);
    json_decref(req);
    json_decref(reply);
    return id;
}

/* One throughput harness (a thread): the loop of bench_ask_tell.py's harness_loop. */
static void *load_harness_run(void *arg)
{
    load_harness *h = arg;
    const load_opts *o = h->o;
    load_client c;
    json_t *asked = NULL, *reply = NULL, *probe = NULL;
    char path_ask[64], path_tell[64], body[256], ask_part[64];
    int opened = load_client_open(&c, o, h->error, sizeof h->error) == 0;
    /* connected before the clock starts (a Python harness connects in its first timed request) */
    if (opened && load_request(&c, o, "/healthz", NULL, &probe, h->error, sizeof h->error) != 0)
        opened = 0;
    pthread_mutex_lock(&h->gate->mu);
    h->gate->ready++;
    pthread_cond_broadcast(&h->gate->cv);
    while (!h->gate->open)
        pthread_cond_wait(&h->gate->cv, &h->gate->mu);
    int go = !h->gate->abort;
    double t0_s = h->gate->t0_s;
    pthread_mutex_unlock(&h->gate->mu);
    if (!opened || !go)
        goto done;
    snprintf(path_ask, sizeof path_ask, "/v1/jobs/%lld/ask", h->job);
    snprintf(path_tell, sizeof path_tell, "/v1/jobs/%lld/tell", h->job);
    snprintf(ask_part, sizeof ask_part, ",\"ask\":{\"n\":%d,\"wait_s\":%d}", LOAD_BATCH,
             LOAD_WAIT_S);
    double deadline = o->seconds > 0 ? t0_s + o->seconds : 0;
    while (h->told < o->tells && (deadline == 0 || kt_clock_s() < deadline)) {
        if (!asked) {
            double t0 = kt_clock_ms();
            snprintf(body, sizeof body, "{\"n\":%d,\"wait_s\":%d}", LOAD_BATCH, LOAD_WAIT_S);
            load_lat *l = h->first_ask.n == 0 ? &h->first_ask : &h->ask;
            if (load_request(&c, o, path_ask, body, &asked, h->error, sizeof h->error) != 0 ||
                load_note(l, kt_clock_ms() - t0, h->error, sizeof h->error) != 0)
                goto done;
        }
        if (json_is_true(json_object_get(asked, "done"))) {
            h->done = 1;
            break;
        }
        json_t *trials = json_incref(json_object_get(asked, "trials"));
        json_decref(asked);
        asked = NULL;
        size_t n = json_array_size(trials);
        for (size_t i = 0; i < n; i++) {
            json_t *t = json_array_get(trials, i);
            json_int_t id = json_integer_value(json_object_get(t, "id"));
            json_int_t seq = json_integer_value(json_object_get(t, "seq"));
            int asks = o->combined && i == n - 1;
            snprintf(body, sizeof body,
                     "{\"trials\":[{\"id\":%" JSON_INTEGER_FORMAT
                     ",\"status\":\"ok\",\"time_ms\":%.1f}]%s}",
                     id, 1.0 + (double)(seq % 7), asks ? ask_part : "");
            double t0 = kt_clock_ms();
            int rc = load_request(&c, o, path_tell, body, &reply, h->error, sizeof h->error);
            if (rc != 0 || load_note(asks ? &h->tell_ask : &h->tell, kt_clock_ms() - t0, h->error,
                                     sizeof h->error) != 0) {
                json_decref(trials);
                goto done;
            }
            h->told++;
            if (asks)
                asked = json_incref(json_object_get(reply, "ask"));
            json_decref(reply);
            reply = NULL;
        }
        json_decref(trials);
        if (o->combined && n > 0 && !asked) {
            snprintf(h->error, sizeof h->error, "a tell with \"ask\" answered no \"ask\"");
            goto done;
        }
    }
done:
    h->end_s = kt_clock_s();
    json_decref(asked);
    json_decref(reply);
    json_decref(probe);
    load_client_close(&c);
    return NULL;
}

/* CPU seconds of this process, all threads. */
typedef struct load_cpu {
    double user_s, sys_s;
} load_cpu;

static load_cpu load_cpu_now(void)
{
    struct rusage ru;
    load_cpu c = {0, 0};
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        c.user_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
        c.sys_s = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    }
    return c;
}

static load_cpu load_cpu_since(load_cpu t0)
{
    load_cpu now = load_cpu_now();
    return (load_cpu){now.user_s - t0.user_s, now.sys_s - t0.sys_s};
}

static void load_print_lat(const char *name, load_lat *l, int json, json_t *obj)
{
    if (l->n == 0)
        return;
    double p50 = load_pct(l, 0.5), p90 = load_pct(l, 0.9);
    if (json)
        json_object_set_new(
            obj, name,
            json_pack("{s:I, s:f, s:f}", "n", (json_int_t)l->n, "p50_ms", p50, "p90_ms", p90));
    else
        printf("  %-9s p50 %.2f ms, p90 %.2f ms (%zu requests)\n", name, p50, p90, l->n);
}

/* Prints the run's figures as text, or as one JSON object; 0 or -1 (out of memory). */
static int load_report(const load_opts *o, long tells, double seconds, load_cpu cpu,
                       load_lat *kinds[], const char *names[], int nkinds)
{
    int rc = -1;
    json_t *obj = json_object(), *lat = json_object();
    if (!obj || !lat)
        goto done;
    const char *what = o->roundtrip ? "round trip" : "throughput";
    const char *variant = o->combined ? "tell with ask" : "two-call";
    long harnesses = o->roundtrip ? 1 : o->harnesses;
    double rate = seconds > 0 ? (double)tells / seconds : 0.0;
    double cpu_s = cpu.user_s + cpu.sys_s;
    double cpu_ms = tells > 0 ? cpu_s * 1000.0 / (double)tells : 0.0;
    if (o->json) {
        json_object_set_new(obj, "mode", json_string(what));
        json_object_set_new(obj, "variant", json_string(variant));
        json_object_set_new(obj, "harnesses", json_integer(harnesses));
        json_object_set_new(obj, "tells", json_integer(tells));
        json_object_set_new(obj, "seconds", json_real(seconds));
        json_object_set_new(obj, "tells_per_s", json_real(rate));
        json_object_set_new(obj, "client_cpu_s", json_real(cpu_s));
        json_object_set_new(obj, "client_user_s", json_real(cpu.user_s));
        json_object_set_new(obj, "client_system_s", json_real(cpu.sys_s));
        json_object_set_new(obj, "client_cpu_ms_per_tell", json_real(cpu_ms));
    } else {
        printf("%s (%s), harnesses in C: %ld tells from %ld harness%s in %.2f s: %.0f tells/s\n",
               what, variant, tells, harnesses, harnesses == 1 ? "" : "es", seconds, rate);
        printf("  client CPU (this process, all threads): %.3f ms per tell (user %.2f s + system "
               "%.2f s)\n",
               cpu_ms, cpu.user_s, cpu.sys_s);
    }
    for (int i = 0; i < nkinds; i++)
        load_print_lat(names[i], kinds[i], o->json, lat);
    if (o->json) {
        json_object_set_new(obj, "latency", json_incref(lat));
        char *s = json_dumps(obj, JSON_COMPACT);
        if (!s)
            goto done;
        printf("%s\n", s);
        free(s);
    }
    rc = 0;
done:
    json_decref(lat);
    json_decref(obj);
    return rc;
}

/* --harnesses threads on jobs of their own; 0 or 1. */
static int load_throughput(const load_opts *o, load_client *c)
{
    int rc = 1;
    long started = 0;
    char err[512] = "";
    load_harness *hs = calloc((size_t)o->harnesses, sizeof *hs);
    pthread_t *threads = calloc((size_t)o->harnesses, sizeof *threads);
    load_gate gate = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    load_lat all[5] = {{0}};
    if (!hs || !threads) {
        fprintf(stderr, "bench_ask_tell_load: out of memory\n");
        goto done;
    }
    for (long i = 0; i < o->harnesses; i++) {
        char kernel[64];
        snprintf(kernel, sizeof kernel, "bench_tp_c%s_%ld", o->combined ? "c" : "", i);
        hs[i].o = o;
        hs[i].gate = &gate;
        hs[i].job =
            load_create_job(c, o, kernel, o->tells, LOAD_BATCH, (int)i + 1, err, sizeof err);
        if (hs[i].job < 0) {
            fprintf(stderr, "bench_ask_tell_load: %s\n", err);
            goto done;
        }
    }
    while (started < o->harnesses &&
           pthread_create(&threads[started], NULL, load_harness_run, &hs[started]) == 0)
        started++;
    /* every started harness has its connection open when it is ready: the clock starts here */
    pthread_mutex_lock(&gate.mu);
    while (gate.ready < started)
        pthread_cond_wait(&gate.cv, &gate.mu);
    gate.abort = started < o->harnesses;
    gate.t0_s = kt_clock_s();
    gate.open = 1;
    double t0 = gate.t0_s;
    load_cpu cpu0 = load_cpu_now();
    pthread_cond_broadcast(&gate.cv);
    pthread_mutex_unlock(&gate.mu);
    long tells = 0;
    double end = t0;
    rc = gate.abort;
    if (gate.abort)
        fprintf(stderr, "bench_ask_tell_load: cannot start %ld threads\n", o->harnesses);
    for (long i = 0; i < started; i++) {
        pthread_join(threads[i], NULL);
        tells += hs[i].told;
        end = hs[i].end_s > end ? hs[i].end_s : end;
        if (hs[i].error[0]) {
            fprintf(stderr, "bench_ask_tell_load: harness on job %lld: %s\n", hs[i].job,
                    hs[i].error);
            rc = 1;
        }
    }
    load_cpu cpu = load_cpu_since(cpu0);
    for (long i = 0; i < started; i++)
        if (!hs[i].done && hs[i].told < o->tells && load_cancel(c, o, hs[i].job, err, sizeof err)) {
            fprintf(stderr, "bench_ask_tell_load: %s\n", err);
            rc = 1;
        }
    if (rc == 0 && tells == 0) {
        fprintf(stderr,
                "bench_ask_tell_load: no trial leased in %.1f s (the server's --max-jobs "
                "slots taken by other jobs?)\n",
                end - t0);
        rc = 1;
    }
    for (long i = 0; rc == 0 && i < o->harnesses; i++)
        if (load_lat_merge(&all[0], &hs[i].first_ask) || load_lat_merge(&all[1], &hs[i].ask) ||
            load_lat_merge(&all[2], &hs[i].tell) || load_lat_merge(&all[3], &hs[i].tell_ask) ||
            load_lat_merge(&all[4], &hs[i].first_ask) || load_lat_merge(&all[4], &hs[i].ask) ||
            load_lat_merge(&all[4], &hs[i].tell) || load_lat_merge(&all[4], &hs[i].tell_ask))
            rc = 1;
    load_lat *kinds[] = {&all[0], &all[1], &all[2], &all[3], &all[4]};
    const char *names[] = {"first_ask", "ask", "tell", "tell_ask", "all"};
    if (rc == 0 && load_report(o, tells, end - t0, cpu, kinds, names, 5) != 0)
        rc = 1;
done:
    for (long i = 0; hs && i < o->harnesses; i++) {
        free(hs[i].first_ask.ms);
        free(hs[i].ask.ms);
        free(hs[i].tell.ms);
        free(hs[i].tell_ask.ms);
    }
    for (int i = 0; i < 5; i++)
        free(all[i].ms);
    free(hs);
    free(threads);
    return rc;
}

/* One harness, batch 1, --rounds rounds on a job of its own (bench_ask_tell.py's round_trip); 0
 * or 1. A round is an ask and a tell, or (--combined) one tell with "ask": 1. */
static int load_roundtrip(const load_opts *o, load_client *c)
{
    int rc = 1;
    char err[512] = "", path_ask[64], path_tell[64], body[256];
    load_lat round = {0}, ask = {0}, tell = {0};
    json_t *asked = NULL, *reply = NULL;
    long long job = load_create_job(c, o, "bench_rt_c", o->rounds + 10, 1, 1, err, sizeof err);
    if (job < 0)
        goto done;
    snprintf(path_ask, sizeof path_ask, "/v1/jobs/%lld/ask", job);
    snprintf(path_tell, sizeof path_tell, "/v1/jobs/%lld/tell", job);
    if (o->combined && load_request(c, o, path_ask, "{\"n\":1}", &asked, err, sizeof err) != 0)
        goto done;
    double t_start = kt_clock_s();
    load_cpu cpu0 = load_cpu_now();
    for (long i = 0; i < o->rounds; i++) {
        double t0 = kt_clock_ms();
        if (!o->combined) {
            if (load_request(c, o, path_ask, "{\"n\":1}", &asked, err, sizeof err) != 0 ||
                load_note(&ask, kt_clock_ms() - t0, err, sizeof err) != 0)
                goto done;
        }
        json_t *t = json_array_get(json_object_get(asked, "trials"), 0);
        if (!t) {
            snprintf(err, sizeof err, "round %ld: an empty ask", i);
            goto done;
        }
        snprintf(body, sizeof body,
                 "{\"trials\":[{\"id\":%" JSON_INTEGER_FORMAT
                 ",\"status\":\"ok\",\"time_ms\":%.1f}]%s}",
                 json_integer_value(json_object_get(t, "id")), 1.0 + (double)(i % 13),
                 o->combined ? ",\"ask\":1" : "");
        json_decref(asked);
        asked = NULL;
        double t1 = kt_clock_ms();
        if (load_request(c, o, path_tell, body, &reply, err, sizeof err) != 0 ||
            load_note(&tell, kt_clock_ms() - t1, err, sizeof err) != 0 ||
            load_note(&round, kt_clock_ms() - t0, err, sizeof err) != 0)
            goto done;
        if (o->combined)
            asked = json_incref(json_object_get(reply, "ask"));
        json_decref(reply);
        reply = NULL;
    }
    double seconds = kt_clock_s() - t_start;
    load_cpu cpu = load_cpu_since(cpu0);
    load_lat *kinds[] = {&round, &ask, &tell};
    const char *names[] = {"round", "ask", o->combined ? "tell_ask" : "tell"};
    rc = load_report(o, o->rounds, seconds, cpu, kinds, names, 3) != 0;
done:
    if (err[0])
        fprintf(stderr, "bench_ask_tell_load: %s\n", err);
    if (job >= 0 && load_cancel(c, o, job, err, sizeof err) != 0) {
        fprintf(stderr, "bench_ask_tell_load: %s\n", err);
        rc = 1;
    }
    json_decref(asked);
    json_decref(reply);
    free(round.ms);
    free(ask.ms);
    free(tell.ms);
    return rc;
}

/* A whole number in [lo, hi] from text, or -1 (the caller names the option). */
static long load_parse_long(const char *s, long lo, long hi)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    return v;
}

static int load_usage(void)
{
    fprintf(stderr,
            "usage: bench_ask_tell_load --url http://HOST:PORT [--token T] [--harnesses N]"
            " [--tells N] [--seconds S] [--combined] [--roundtrip [--rounds N]] [--json]\n");
    return 2;
}

int main(int argc, char **argv)
{
    load_opts o = {.harnesses = 8, .tells = 400, .rounds = 500, .token = getenv("KTUNE_TOKEN")};
    load_client c;
    char err[512];
    int rc = 1, open = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--combined"))
            o.combined = 1;
        else if (!strcmp(a, "--roundtrip"))
            o.roundtrip = 1;
        else if (!strcmp(a, "--json"))
            o.json = 1;
        else if (v && !strcmp(a, "--url"))
            o.url = argv[++i];
        else if (v && !strcmp(a, "--token"))
            o.token = argv[++i];
        else if (v && !strcmp(a, "--harnesses") &&
                 (o.harnesses = load_parse_long(argv[++i], 1, LOAD_MAX_HARNESSES)) > 0)
            ;
        else if (v && !strcmp(a, "--tells") &&
                 (o.tells = load_parse_long(argv[++i], 1, LOAD_GRID * LOAD_GRID)) > 0)
            ;
        else if (v && !strcmp(a, "--rounds") &&
                 (o.rounds = load_parse_long(argv[++i], 1, LOAD_GRID * LOAD_GRID - 10)) > 0)
            ;
        else if (v && !strcmp(a, "--seconds") &&
                 (o.seconds = load_parse_long(argv[++i], 1, 3600)) > 0)
            ;
        else
            return load_usage();
    }
    if (!o.url) {
        printf(
            "bench_ask_tell_load: no --url, nothing measured (tests/bench/bench_ask_tell.py runs "
            "it against its own ktuned; or give --url of a running one)\n");
        return 0;
    }
    if (strlen(o.url) > 400)
        return load_usage();
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
        fprintf(stderr, "bench_ask_tell_load: curl_global_init failed\n");
        return 1;
    }
    if (load_client_open(&c, &o, err, sizeof err) != 0) {
        fprintf(stderr, "bench_ask_tell_load: %s\n", err);
        goto done;
    }
    open = 1;
    rc = o.roundtrip ? load_roundtrip(&o, &c) : load_throughput(&o, &c);
done:
    if (open)
        load_client_close(&c);
    curl_global_cleanup();
    return rc;
}
