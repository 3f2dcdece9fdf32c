/* Bench of GET /v1/best: the server-side cost of one lookup (the route's time in /metrics divided
 * by the requests sent), for a cpu kernel whose space is large (gemm), a replay device and a miss
 * (404) and a predicted answer (the same miss once a model of the key is ready: cached per model
 * and problem, so answered from the key alone), against GET /healthz (one database round trip)
 * measured in the same run as the reference. Starts a real ktuned with its embedded PostgreSQL in a
 * temporary folder, seeds one best entry per target (an import for cpu, a short replay job), then
 * times lookups on one keep-alive connection; trains the model before the predicted case. Prints;
 * asserts nothing. Needs the ktuned binary (KT_KTUNED_PATH). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "../unit/http_test_client.h"
#include "core/clock.h"

#define BENCH_LOOKUPS 2000
#define BENCH_WARMUP  200
#define BENCH_READY_S 180

extern char **environ;

typedef struct bench_server {
    pid_t pid;
    int port;
    char dir[64];
} bench_server;

/* Reads ktuned's stdout until its ready line names the port; -1 on exit or after BENCH_READY_S. */
static int wait_ready(int fd, int *port)
{
    char buf[8192];
    size_t len = 0;
    double deadline = kt_clock_s() + BENCH_READY_S;
    while (kt_clock_s() < deadline) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 500) <= 0)
            continue;
        ssize_t r = read(fd, buf + len, sizeof buf - 1 - len);
        if (r <= 0)
            return -1;
        len += (size_t)r;
        buf[len] = '\0';
        const char *m = strstr(buf, "dashboard http://127.0.0.1:");
        if (m && sscanf(m, "dashboard http://127.0.0.1:%d/", port) == 1)
            return 0;
        if (len > sizeof buf / 2) { /* keep the tail: the ready line comes last */
            memmove(buf, buf + len / 2, len - len / 2);
            len -= len / 2;
        }
    }
    return -1;
}

static int server_start(bench_server *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->dir, sizeof s->dir, "/tmp/ktune-bench-best-XXXXXX");
    /* 0755: run as root, the embedded PostgreSQL runs as postgres and must reach the folder. */
    if (!mkdtemp(s->dir) || chmod(s->dir, 0755) != 0)
        return -1;
    int out[2];
    if (pipe(out) != 0)
        return -1;
    char data[128];
    snprintf(data, sizeof data, "%s/data", s->dir);
    char *const argv[] = {(char *)KT_KTUNED_PATH,
                          "--listen",
                          "127.0.0.1:0",
                          "--data-dir",
                          data,
                          "--datasets",
                          KT_SOURCE_DIR "/datasets",
                          "--kernels",
                          KT_SOURCE_DIR "/kernels",
                          "--web-dir",
                          KT_SOURCE_DIR "/web",
                          "--workers",
                          "1",
                          "--log-level",
                          "warn",
                          NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    char log[128];
    snprintf(log, sizeof log, "%s/ktuned.log", s->dir);
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int rc = posix_spawn(&s->pid, KT_KTUNED_PATH, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    if (rc != 0) {
        close(out[0]);
        return -1;
    }
    rc = wait_ready(out[0], &s->port);
    close(out[0]);
    return rc;
}

static void server_stop(bench_server *s)
{
    if (s->pid > 0) {
        kill(s->pid, SIGTERM);
        waitpid(s->pid, NULL, 0);
    }
    if (s->dir[0]) {
        pid_t rm;
        char *const argv[] = {"rm", "-rf", s->dir, NULL};
        if (posix_spawnp(&rm, "rm", NULL, NULL, argv, environ) == 0)
            waitpid(rm, NULL, 0);
    }
}

/* One request on c; body may be NULL. Returns the status, or -1; *reply gets the parsed body. */
static int call(hc_conn *c, const char *method, const char *path, const char *body, json_t **reply)
{
    char head[1024];
    size_t blen = body ? strlen(body) : 0;
    snprintf(head, sizeof head,
             "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
             "Content-Length: %zu\r\n\r\n",
             method, path, blen);
    hc_resp r;
    if (hc_send_str(c, head) != 0 || (blen && hc_send(c, body, blen) != 0) ||
        hc_read(c, &r, 0) != 0)
        return -1;
    if (reply)
        *reply = json_loadb(r.body, r.body_len, 0, NULL);
    int status = r.status;
    hc_resp_free(&r);
    return status;
}

/* The route's duration sum from /metrics, in seconds; -1 when absent. */
static double route_seconds(hc_conn *c, const char *route)
{
    hc_resp r;
    if (hc_send_str(c, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n") != 0 ||
        hc_read(c, &r, 0) != 0)
        return -1;
    char key[128];
    snprintf(key, sizeof key, "ktune_http_request_duration_seconds_sum{route=\"%s\"} ", route);
    const char *m = strstr(r.body, key);
    double s = m ? strtod(m + strlen(key), NULL) : 0;
    hc_resp_free(&r);
    return s;
}

/* Mean server-side and client-side microseconds of n GETs of path (expecting status). */
static int time_route(hc_conn *c, const char *route, const char *path, int expect,
                      double *server_us, double *client_us)
{
    for (int i = 0; i < BENCH_WARMUP; i++)
        if (call(c, "GET", path, NULL, NULL) != expect)
            return -1;
    double s0 = route_seconds(c, route), t0 = kt_clock_s();
    for (int i = 0; i < BENCH_LOOKUPS; i++)
        if (call(c, "GET", path, NULL, NULL) != expect)
            return -1;
    double t1 = kt_clock_s(), s1 = route_seconds(c, route);
    *server_us = (s1 - s0) * 1e6 / BENCH_LOOKUPS;
    *client_us = (t1 - t0) * 1e6 / BENCH_LOOKUPS;
    return 0;
}

/* An import of one ok trial of the kernel's default configuration on cpu (default problem). */
static int seed_cpu(hc_conn *c, const char *kernel)
{
    json_t *kernels = NULL, *config = NULL;
    int rc = -1;
    if (call(c, "GET", "/v1/kernels", NULL, &kernels) != 200 || !kernels)
        goto out;
    size_t i, j;
    json_t *k, *d;
    json_array_foreach(json_object_get(kernels, "kernels"), i, k)
    {
        if (strcmp(json_string_value(json_object_get(k, "name")), kernel) != 0)
            continue;
        json_array_foreach(json_object_get(k, "devices"), j, d)
        {
            if (strcmp(json_string_value(json_object_get(d, "device")), "cpu") == 0)
                config = json_object_get(d, "default");
        }
    }
    if (!config)
        goto out;
    /* Trusted (issue 26): an untrusted import is no training data for the model seeded below. */
    json_t *req =
        json_pack("{s:s, s:s, s:b, s:[{s:O, s:s, s:f}]}", "kernel", kernel, "device", "cpu",
                  "trusted", 1, "trials", "config", config, "status", "ok", "time_ms", 12.5);
    char *text = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    rc = text && call(c, "POST", "/v1/imports", text, NULL) / 100 == 2 ? 0 : -1;
    free(text);
out:
    json_decref(kernels);
    return rc;
}

/* A ready model of gemm on cpu (algorithm nearest: trained in milliseconds on the imported entry),
 * waited for, so that a miss is answered by a prediction. */
static int seed_model(hc_conn *c)
{
    json_t *model = NULL;
    char path[64];
    int rc = -1;
    if (call(c, "POST", "/v1/models",
             "{\"kernel\":\"gemm\",\"device\":\"cpu\",\"kind\":\"predictor\","
             "\"algorithm\":\"nearest\"}",
             &model) != 202 ||
        !model)
        goto out;
    snprintf(path, sizeof path, "/v1/models/%lld",
             (long long)json_integer_value(json_object_get(model, "id")));
    for (int tries = 0; tries < 600; tries++) {
        json_decref(model);
        model = NULL;
        if (call(c, "GET", path, NULL, &model) != 200 || !model)
            goto out;
        const char *st = json_string_value(json_object_get(model, "status"));
        if (st && strcmp(st, "ready") == 0) {
            rc = 0;
            goto out;
        }
        if (st && strcmp(st, "training") != 0)
            goto out;
        usleep(100000);
    }
out:
    json_decref(model);
    return rc;
}

/* A short random job on the replay device, waited for. */
static int seed_replay(hc_conn *c, const char *kernel, const char *device)
{
    char body[256], path[64];
    snprintf(body, sizeof body,
             "{\"kernel\":\"%s\",\"device\":\"%s\",\"strategy\":\"random\","
             "\"budget\":{\"evaluations\":8},\"seed\":1}",
             kernel, device);
    json_t *job = NULL;
    int rc = -1;
    if (call(c, "POST", "/v1/tune", body, &job) != 202 || !job)
        goto out;
    snprintf(path, sizeof path, "/v1/jobs/%lld",
             (long long)json_integer_value(json_object_get(job, "id")));
    for (int tries = 0; tries < 600; tries++) {
        json_decref(job);
        job = NULL;
        if (call(c, "GET", path, NULL, &job) != 200 || !job)
            goto out;
        const char *st = json_string_value(json_object_get(job, "status"));
        if (st && strcmp(st, "succeeded") == 0) {
            rc = 0;
            goto out;
        }
        if (st && (strcmp(st, "failed") == 0 || strcmp(st, "cancelled") == 0))
            goto out;
        usleep(100000);
    }
out:
    json_decref(job);
    return rc;
}

int main(void)
{
    bench_server s;
    hc_conn c = {.fd = -1};
    int rc = 1;
    if (server_start(&s) != 0) {
        printf("bench_api_best: ktuned did not start (%s)\n", KT_KTUNED_PATH);
        goto out;
    }
    if (hc_connect(&c, s.port) != 0 || seed_cpu(&c, "gemm") != 0 ||
        seed_replay(&c, "convolution", "replay:convolution_milo-A4000") != 0) {
        printf("bench_api_best: could not seed the best table\n");
        goto out;
    }
    static const struct {
        const char *label, *route, *path;
        int status;
    } cases[] = {
        {"healthz (reference)", "/healthz", "/healthz", 200},
        {"best cpu gemm hit", "/v1/best", "/v1/best?kernel=gemm&device=cpu&M=1024&N=1024&K=1024",
         200},
        {"best cpu gemm miss", "/v1/best", "/v1/best?kernel=gemm&device=cpu&M=512&N=512&K=512",
         404},
        {"best replay hit", "/v1/best",
         "/v1/best?kernel=convolution&device=replay:convolution_milo-A4000", 200},
        /* After seed_model: the miss above, now answered by the model (cached after the first). */
        {"best gemm predicted", "/v1/best", "/v1/best?kernel=gemm&device=cpu&M=512&N=512&K=512",
         200},
    };
    const size_t before_model = 4;
    double ref = 0;
    printf("GET /v1/best, server-side time per lookup (route time in /metrics / %d requests; one "
           "keep-alive connection)\n",
           BENCH_LOOKUPS);
    printf("%-22s %12s %12s %10s\n", "case", "server us", "client us", "x healthz");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double server_us, client_us;
        if (i == before_model && seed_model(&c) != 0) {
            printf("bench_api_best: the gemm model did not become ready\n");
            goto out;
        }
        if (time_route(&c, cases[i].route, cases[i].path, cases[i].status, &server_us,
                       &client_us) != 0) {
            printf("%-22s failed (expected status %d)\n", cases[i].label, cases[i].status);
            goto out;
        }
        if (i == 0)
            ref = server_us;
        printf("%-22s %12.1f %12.1f %10.2f\n", cases[i].label, server_us, client_us,
               ref > 0 ? server_us / ref : 0);
    }
    rc = 0;
out:
    hc_close(&c);
    server_stop(&s);
    return rc;
}
