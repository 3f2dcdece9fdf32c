/* ktune-runner: compiles, runs, verifies and times kernels for one device, one JSON request per
 * line on stdin, one reply per line on stdout, until stdin closes (service/runner/PROTOCOL.md).
 * A kernel that crashes takes this process with it, on purpose: the backend sees EOF and restarts
 * a runner. Logs go to stderr. */
#include <cblas.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/device_name.h"
#include "core/log.h"
#include "core/number.h"
#include "runner/privileges.h"
#include "runner/runner.h"

static void usage(FILE *f)
{
    fputs(
        "usage: ktune-runner --device cpu|cuda:N --cache-dir DIR [--cpu-core N]\n"
        "                    [--log-level debug|info|warn|error] [--user NAME]\n"
        "                    [--version-uid VERSION] [--cache-max-bytes N] [--no-pch]\n"
        "Started as root, it takes namespaces of its own (network, mount, pid) and switches to\n"
        "--user (else $KTUNE_RUNNER_USER, else nobody) before it compiles or runs anything; with\n"
        "--version-uid (a submitted kernel's version, hex), to a uid of that version's own\n"
        "($KTUNE_RUNNER_UID_BASE + hash mod $KTUNE_RUNNER_UIDS) with a cache folder and /tmp of\n"
        "its own. It always sets no-new-privs, resource limits and (cpu) a seccomp filter.\n"
        "--cache-max-bytes bounds the compiled binaries in DIR (least recently used go first;\n"
        "0: unbounded; default 2 GiB).\n"
        "--no-pch compiles kernels without their precompiled prelude (the same binaries, slower).\n"
        "Reads one JSON request per line on stdin and writes one JSON reply per line on stdout\n"
        "(see service/runner/PROTOCOL.md).\n",
        f);
}

static void die_usage(const char *fmt, const char *arg)
{
    fputs("ktune-runner: ", stderr);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    usage(stderr);
    exit(2);
}

static int parse_nonneg_int(const char *s, int *out)
{
    return kt_parse_int(s, 0, INT_MAX, out);
}

/* mkdir -p for the cache folder. */
static int make_dirs(const char *path)
{
    char buf[RUNNER_PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(buf, 0755) < 0 && errno != EEXIST)
        return -1;
    struct stat st;
    return stat(buf, &st) == 0 && S_ISDIR(st.st_mode) && access(buf, W_OK | X_OK) == 0 ? 0 : -1;
}

/* A kernel version: 1..64 hex digits. */
static int is_version(const char *s)
{
    size_t n = strlen(s);
    return n > 0 && n <= 64 && strspn(s, "0123456789abcdef") == n;
}

static void parse_args(int argc, char **argv, runner *r, const char **user, const char **version)
{
    const char *device = NULL, *cache = NULL, *level = "info";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        }
        if (strcmp(a, "--no-pch") == 0) {
            r->no_pch = 1;
            continue;
        }
        if (i + 1 >= argc)
            die_usage("%s needs a value (or is unknown)", a);
        const char *v = argv[++i];
        if (strcmp(a, "--device") == 0)
            device = v;
        else if (strcmp(a, "--cache-dir") == 0)
            cache = v;
        else if (strcmp(a, "--cpu-core") == 0) {
            if (parse_nonneg_int(v, &r->cpu_core) < 0 || r->cpu_core >= CPU_SETSIZE)
                die_usage("--cpu-core must be a core number (got '%s')", v);
        } else if (strcmp(a, "--cache-max-bytes") == 0) {
            if (kt_parse_ll(v, 0, LLONG_MAX, &r->cache_max_bytes) < 0)
                die_usage("--cache-max-bytes must be a number of bytes (got '%s')", v);
        } else if (strcmp(a, "--log-level") == 0)
            level = v;
        else if (strcmp(a, "--user") == 0)
            *user = v;
        else if (strcmp(a, "--version-uid") == 0) {
            if (!is_version(v))
                die_usage("--version-uid must be a kernel version (hex digits; got '%s')", v);
            *version = v;
        } else
            die_usage("unknown argument '%s'", a);
    }
    kt_log_level lvl;
    if (kt_log_parse_level(level, &lvl) < 0)
        die_usage("--log-level must be debug, info, warn or error (got '%s')", level);
    kt_log_init(lvl);
    if (!device)
        die_usage("%s", "--device is required");
    kt_device dev;
    if (kt_device_parse(device, &dev, NULL) < 0 ||
        (dev.kind != KT_DEVICE_CPU && dev.kind != KT_DEVICE_CUDA))
        die_usage("--device must be cpu or cuda:N (got '%s')", device);
    r->cuda_ordinal = dev.kind == KT_DEVICE_CPU ? -1 : dev.ordinal;
    if (!cache)
        die_usage("%s", "--cache-dir is required");
    if (strlen(cache) + 64 >= sizeof r->cache_dir)
        die_usage("--cache-dir is too long: %s", cache);
    snprintf(r->cache_dir, sizeof r->cache_dir, "%s", cache);
    if (make_dirs(r->cache_dir) < 0)
        die_usage("--cache-dir %s is not a writable folder and cannot be created", cache);
}

static json_t *probe(runner *r, kt_error *err)
{
    /* "process": who the runner runs as and its limits (runner/privileges.h). */
    if (r->cuda_ordinal < 0)
        return json_pack("{s:b, s:o, s:o}", "ok", 1, "device", cpu_probe_json(r), "process",
                         runner_process_json(r->sandbox));
    if (!r->cuda)
        return json_pack("{s:b, s:s, s:s}", "ok", 0, "reason", r->cuda_reason, "error",
                         r->cuda_reason);
    json_t *dev = cuda_device_probe(r->cuda);
    if (!dev) {
        kt_error_set(err, KT_ERR_MEASURE, "the CUDA probe failed");
        return NULL;
    }
    return json_pack("{s:b, s:o, s:o}", "ok", 1, "device", dev, "process",
                     runner_process_json(r->sandbox));
}

/* ops "measure" and "compile" (compile_only: build, run nothing; the CPU device only). */
static json_t *measure(runner *r, const json_t *req, int compile_only, kt_error *err)
{
    json_t *reply = NULL;
    runner_measure_req *q = NULL;
    /* A backstop under the backend's wall-clock deadlines: twice the request's own timeouts. */
    json_t *ct = json_object_get(req, "compile_timeout_s"),
           *ms = json_object_get(req, "max_seconds");
    double budget = json_is_number(ct) && json_is_number(ms)
                        ? 2 * (json_number_value(ct) + json_number_value(ms)) + 60
                        : 0;
    runner_cpu_budget(budget > RUNNER_CPU_DEFAULT_S ? budget : RUNNER_CPU_DEFAULT_S);
    /* "files" (checked by the parser below): the source texts the builds read (sources.c) */
    const json_t *files = json_object_get(req, "files");
    runner_sources_begin(r->sources, json_is_object(files) ? files : NULL);
    if (r->cuda_ordinal >= 0 && compile_only) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "op 'compile' is for the cpu device only");
        goto out;
    }
    if (r->cuda_ordinal >= 0) {
        if (!r->cuda) {
            reply = runner_status_reply("runtime_error", 0.0);
            json_object_set_new(json_object_get(reply, "extras"), "error",
                                json_string(r->cuda_reason));
            goto out;
        }
        reply = cuda_device_measure(r->cuda, req, r->cache_dir);
        if (!reply)
            kt_error_set(err, KT_ERR_MEASURE, "the CUDA measure returned no reply");
        else if (!json_object_get(reply, "ok") && json_object_get(reply, "status"))
            json_object_set_new(reply, "ok", json_true());
        goto out;
    }
    /* uploaded data files (data.c): held from "data"; one named but not held is asked for
     * (a compile reads none) */
    json_t *missing = NULL;
    if (!compile_only && runner_data_take(&r->data, req, &missing, err) < 0)
        goto out;
    if (missing) {
        reply = json_pack("{s:b, s:o}", "ok", 1, "need_data", missing);
        if (!reply)
            kt_error_set(err, KT_ERR_NO_MEMORY, "cannot build the need_data reply");
        goto out;
    }
    q = malloc(sizeof *q);
    if (!q) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "cannot allocate the request");
        goto out;
    }
    if (runner_parse_measure(req, q, err) < 0)
        goto out;
    reply = compile_only ? cpu_compile_only(r, q, err) : cpu_measure(r, q, err);
out:
    runner_sources_done(r->sources);
    runner_sources_begin(r->sources, NULL);
    free(q);
    return reply;
}

/* op "compile_check": NVRTC only, so any runner answers it, with or without a CUDA device. */
static json_t *compile_check(runner *r, const json_t *req, kt_error *err)
{
    char source[RUNNER_PATH_MAX];
    const json_t *defines = NULL, *files = NULL;
    double timeout_s = 0;
    json_t *reply = NULL;
    char *text = NULL;
    size_t len = 0;
    if (runner_parse_compile_check(req, source, &defines, &files, &timeout_s, err) < 0)
        goto out;
    runner_sources_begin(r->sources, files);
    if (!(text = runner_sources_read(r->sources, source, RUNNER_MAX_SOURCE_BYTES, &len, err)))
        goto out;
    runner_cpu_budget(2 * timeout_s + 60 > RUNNER_CPU_DEFAULT_S ? 2 * timeout_s + 60
                                                                : RUNNER_CPU_DEFAULT_S);
    const char *base = strrchr(source, '/');
    if (!(reply = cuda_compile_check(base ? base + 1 : source, text, len, defines, timeout_s)))
        kt_error_set(err, KT_ERR_NO_MEMORY, "cannot build the compile_check reply");
out:
    runner_sources_begin(r->sources, NULL);
    free(text);
    return reply;
}

/* Answers one request line. Returns -1 when the reply cannot be written (stdout is gone). */
static int serve_line(runner *r, FILE *out, const char *line, size_t len)
{
    kt_error err;
    kt_error_clear(&err);
    const char *op = NULL;
    json_t *reply = NULL;
    json_t *req = runner_parse_line(line, len, &err);
    json_t *id = req ? runner_request_id(req) : json_null();
    if (req && runner_parse_header(req, &op, &err) == 0)
        reply = strcmp(op, "probe") == 0 ? probe(r, &err)
                : strcmp(op, "compile_check") == 0
                    ? compile_check(r, req, &err)
                    : measure(r, req, strcmp(op, "compile") == 0, &err);
    if (!reply) {
        if (err.code == KT_OK)
            kt_error_set(&err, KT_ERR_INTERNAL, "the request produced no reply");
        log_warn("request rejected: %s", err.message);
        reply = runner_error_reply(&err);
    }
    int rc = runner_write_reply(out, id, reply);
    json_decref(reply);
    json_decref(id);
    json_decref(req);
    return rc;
}

/* The protocol moves to private descriptors (close-on-exec): fd 0 becomes /dev/null and fd 1 a copy
 * of stderr, so that a kernel that reads stdin or prints cannot corrupt the request/reply stream.
 */
static int protocol_streams(FILE **in, FILE **out)
{
    int pin = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
    int pout = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (pin < 0 || pout < 0 || null < 0 || dup2(null, STDIN_FILENO) < 0 ||
        dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
        return -1;
    close(null);
    *in = fdopen(pin, "r");
    *out = fdopen(pout, "w");
    return *in && *out ? 0 : -1;
}

static int is_blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return 0;
    return 1;
}

int main(int argc, char **argv)
{
    runner r;
    memset(&r, 0, sizeof r);
    runner_sources sources;
    memset(&sources, 0, sizeof sources);
    r.cuda_ordinal = -1;
    r.cpu_core = -1;
    r.cache_max_bytes = RUNNER_CACHE_MAX_DEFAULT;

    r.sources = &sources;
    runner_sandbox sandbox;
    r.sandbox = &sandbox;
    const char *user = getenv("KTUNE_RUNNER_USER"), *version = NULL;
    parse_args(argc, argv, &r, &user, &version);
    /* Issue 32: the allocator's state fixed before any kernel runs, so that a kernel's malloc
     * takes the same path in a fresh runner and after others (runner.h; a sanitizer's allocator
     * ignores it, and has no dynamic threshold); the floating-point environment of now is what
     * every kernel starts from (cpu_measure). */
    if (!mallopt(M_MMAP_THRESHOLD, RUNNER_MMAP_THRESHOLD) ||
        !mallopt(M_TRIM_THRESHOLD, RUNNER_TRIM_THRESHOLD))
        log_debug("ktune-runner: the allocator keeps its own mmap and trim thresholds");
    r.have_fenv = fegetenv(&r.fenv) == 0;
    /* Before anything is compiled or run: never as root (issue #11), confined (issue 27). */
    char why[512];
    if (runner_harden(user, version, r.cache_dir, sizeof r.cache_dir, r.cuda_ordinal >= 0, &sandbox,
                      why, sizeof why) != 0) {
        fprintf(stderr, "ktune-runner: %s\n", why);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN); /* a closed stdout becomes a write error, then a clean exit */
    if (r.cpu_core >= 0) {
        cpu_set_t set;
        if (sched_getaffinity(0, sizeof r.wide, &r.wide) == 0) {
            CPU_SET(r.cpu_core, &r.wide);
            r.have_wide = 1;
        }
        CPU_ZERO(&set);
        CPU_SET(r.cpu_core, &set);
        if (sched_setaffinity(0, sizeof set, &set) < 0) {
            fprintf(stderr, "ktune-runner: cannot pin to core %d: %s\n", r.cpu_core,
                    strerror(errno));
            return 2;
        }
    }
    if (r.cuda_ordinal < 0) {
        cpu_info_read(&r.cpu);
        openblas_set_num_threads(1);
        log_info("ktune-runner: cpu '%s', %d cores, isa [%s], cache %s%s", r.cpu.model, r.cpu.cores,
                 r.cpu.isa, r.cache_dir, r.cpu.compiler[0] ? "" : " (cc --version failed)");
    } else {
        r.cuda = cuda_device_open(r.cuda_ordinal, r.cuda_reason, sizeof r.cuda_reason);
        if (!r.cuda)
            log_warn("ktune-runner: cuda:%d unavailable: %s", r.cuda_ordinal, r.cuda_reason);
        else
            log_info("ktune-runner: cuda:%d open, cache %s", r.cuda_ordinal, r.cache_dir);
        cuda_device_use_sources(r.cuda, &sources);
    }
    FILE *in = NULL, *out = NULL;
    if (protocol_streams(&in, &out) < 0) {
        log_error("ktune-runner: cannot set up the protocol streams: %s", strerror(errno));
        return 1;
    }
    size_t cap = (size_t)RUNNER_LINE_MAX + 1, len = 0;
    char *line = malloc(cap);
    if (!line) {
        log_error("ktune-runner: cannot allocate the request buffer");
        return 1;
    }
    for (;;) {
        int got = runner_read_line(in, line, cap, &len);
        if (got == 0)
            break;
        int wrote;
        if (got < 0) {
            kt_error err;
            kt_error_set(&err, KT_ERR_BODY_TOO_LARGE, "request line exceeds %d bytes",
                         RUNNER_LINE_MAX);
            log_warn("request rejected: %s", err.message);
            json_t *reply = runner_error_reply(&err), *id = json_null();
            wrote = runner_write_reply(out, id, reply);
            json_decref(reply);
            json_decref(id);
        } else if (is_blank(line, len)) {
            continue;
        } else {
            wrote = serve_line(&r, out, line, len);
        }
        if (wrote < 0) {
            log_warn("ktune-runner: cannot write a reply (stdout closed?); exiting");
            break;
        }
    }
    free(line);
    fclose(in);
    fclose(out);
    cpu_problem_release_all(&r);
    runner_data_release(&r.data);
    if (r.cuda)
        cuda_device_close(r.cuda);
    return 0;
}
