/* A kernel's precompiled prelude (issue 32, "compile cheaper"): two thirds of the CPU time of a
 * catalog gemm compile went to GCC parsing <immintrin.h> (63,000 lines once preprocessed), the same
 * text for every configuration. The prelude is the source's leading system includes
 * (cpu_prelude_text: comments, blanks, `#include <...>` and conditionals on compiler-predefined
 * macros, cut where the conditionals balance). Its first kernel compile writes it to
 * `<cache-dir>/pch-<hash>.h` and compiles plainly; the next one precompiles it (`cc <kernel flags>
 * -x c-header` into `pch-<hash>.h.gch`); every compile after that adds `-include pch-<hash>.h`,
 * which GCC serves from the .gch.
 *
 * Why the object is the same: the prelude's headers come first, in the source's order, under the
 * same defines, as the source's own first lines would include them; when the source then reaches
 * those lines, each header finds its include guard and each condition (predefined macros only)
 * decides as before, so nothing is added twice. A -D define that the headers test makes GCC
 * refuse the .gch (it reads the header's text: still the same unit; -Winvalid-pch says so in the
 * log, and the reply says "refused"). The binaries are byte-identical with and without it
 * (test_runner_cpu), so the binary's key is unchanged. The .gch's own key: the compiler's version
 * line, the CPU (model, isa: -march=native), the flags and the prelude's text.
 *
 * Call order: cpu_prelude_prepare before a kernel compile (cpu_compile.c); the header stays (a
 * few hundred bytes: what marks a prelude as seen), the .gch is bounded and evicted like a binary
 * (cpu_cache.c). */
#include "core/hash.h"
#include "runner/runner.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"

#define PRELUDE_COMPILER      "cc"
#define PRELUDE_TIMEOUT_SHARE 4 /* a precompile gets at most 1/4 of the compile timeout */

typedef struct span {
    const char *p, *end;
} span;

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

static int is_ident(char c, int first)
{
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (!first && c >= '0' && c <= '9');
}

static const char *skip_space(const char *p, const char *end)
{
    while (p < end && is_space(*p))
        p++;
    return p;
}

static const char *find2(const char *p, const char *end, char a, char b)
{
    for (; p + 1 < end; p++)
        if (p[0] == a && p[1] == b)
            return p;
    return NULL;
}

/* 1 when [p, end) holds nothing but blanks and comments closed on the line. */
static int rest_is_blank(const char *p, const char *end)
{
    for (;;) {
        p = skip_space(p, end);
        if (p == end || (end - p >= 2 && p[0] == '/' && p[1] == '/'))
            return 1;
        if (end - p < 2 || p[0] != '/' || p[1] != '*')
            return 0;
        const char *close = find2(p + 2, end, '*', '/');
        if (!close)
            return 0;
        p = close + 2;
    }
}

/* A macro the compiler defines before any header, whose value is the same wherever it is read:
 * `__AVX2__`, `__x86_64__`, `__GNUC__`; not those that change with the place (__LINE__,
 * __COUNTER__, __INCLUDE_LEVEL__, ...). */
static int predefined(const char *p, size_t n)
{
    static const char *const moving[] = {
        "__LINE__",      "__COUNTER__", "__INCLUDE_LEVEL__", "__FILE__",      "__BASE_FILE__",
        "__FILE_NAME__", "__DATE__",    "__TIME__",          "__TIMESTAMP__", "__has_include__"};
    if (n < 5 || p[0] != '_' || p[1] != '_' || p[n - 1] != '_' || p[n - 2] != '_')
        return 0;
    for (size_t i = 0; i < sizeof moving / sizeof *moving; i++)
        if (strlen(moving[i]) == n && memcmp(moving[i], p, n) == 0)
            return 0;
    return 1;
}

/* An #if / #elif expression of `defined`, predefined macros, numbers and operators only. */
static int condition_ok(const char *p, const char *end)
{
    int tokens = 0;
    while (p < end) {
        char c = *p;
        if (is_space(c)) {
            p++;
        } else if (is_ident(c, 1)) {
            const char *s = p;
            while (p < end && is_ident(*p, 0))
                p++;
            size_t n = (size_t)(p - s);
            if (!(n == 7 && memcmp(s, "defined", 7) == 0) && !predefined(s, n))
                return 0;
            tokens++;
        } else if (c >= '0' && c <= '9') {
            while (p < end && (is_ident(*p, 0) || *p == '.'))
                p++;
            tokens++;
        } else if (c == '/') {
            return tokens > 0 && rest_is_blank(p, end);
        } else if (strchr("()!&|<>=+-*%?:~^", c)) {
            p++;
            tokens++;
        } else {
            return 0;
        }
    }
    return tokens > 0;
}

typedef enum { LINE_SKIP, LINE_INCLUDE, LINE_OPEN, LINE_ELSE, LINE_CLOSE, LINE_STOP } line_kind;

/* What a directive line (p after its '#') is, for the prelude. */
static line_kind directive(const char *p, const char *end)
{
    p = skip_space(p, end);
    const char *k = p;
    while (p < end && is_ident(*p, 0))
        p++;
    size_t n = (size_t)(p - k);
#define KW(s) (n == sizeof s - 1 && memcmp(k, s, n) == 0)
    if (KW("include")) {
        p = skip_space(p, end);
        if (p == end || *p != '<')
            return LINE_STOP; /* "quoted" and computed includes: the source's own files */
        const char *close = memchr(p, '>', (size_t)(end - p));
        return close && close > p + 1 && rest_is_blank(close + 1, end) ? LINE_INCLUDE : LINE_STOP;
    }
    if (KW("ifdef") || KW("ifndef")) {
        p = skip_space(p, end);
        const char *s = p;
        while (p < end && is_ident(*p, 0))
            p++;
        return predefined(s, (size_t)(p - s)) && rest_is_blank(p, end) ? LINE_OPEN : LINE_STOP;
    }
    if (KW("if"))
        return condition_ok(p, end) ? LINE_OPEN : LINE_STOP;
    if (KW("elif"))
        return condition_ok(p, end) ? LINE_ELSE : LINE_STOP;
    if (KW("else"))
        return rest_is_blank(p, end) ? LINE_ELSE : LINE_STOP;
    if (KW("endif"))
        return rest_is_blank(p, end) ? LINE_CLOSE : LINE_STOP;
#undef KW
    return LINE_STOP; /* #define, #pragma, #error, ...: the source's own code begins */
}

/* The kind of one line (without its newline); *in_comment carries a block comment across lines. */
static line_kind classify(span l, int *in_comment)
{
    const char *p = l.p, *end = l.end;
    const char *last = end;
    while (last > p && is_space(last[-1]))
        last--;
    if ((last > p && last[-1] == '\\') || memchr(p, '\0', (size_t)(end - p)))
        return LINE_STOP; /* a continued line, a NUL byte: not worth following */
    if (*in_comment) {
        const char *close = find2(p, end, '*', '/');
        if (!close)
            return LINE_SKIP;
        *in_comment = 0;
        return rest_is_blank(close + 2, end) ? LINE_SKIP : LINE_STOP;
    }
    p = skip_space(p, end);
    if (p == end || (end - p >= 2 && p[0] == '/' && p[1] == '/'))
        return LINE_SKIP;
    if (end - p >= 2 && p[0] == '/' && p[1] == '*') {
        const char *close = find2(p + 2, end, '*', '/');
        if (!close) {
            *in_comment = 1;
            return LINE_SKIP;
        }
        return rest_is_blank(close + 2, end) ? LINE_SKIP : LINE_STOP;
    }
    if (*p == '#')
        return directive(p + 1, end);
    return LINE_STOP;
}

size_t cpu_prelude_text(const char *src, size_t len, char *out, size_t cap)
{
    const char *p = src, *end = src + len;
    size_t used = 0, committed = 0;
    int depth = 0, in_comment = 0, includes = 0, committed_includes = 0;
    if (cap == 0)
        return 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        span l = {p, nl ? nl : end};
        p = nl ? nl + 1 : end;
        line_kind k = classify(l, &in_comment);
        if (k == LINE_STOP || (k == LINE_ELSE && depth == 0) || (k == LINE_CLOSE && depth == 0))
            break;
        if (k == LINE_SKIP)
            continue;
        size_t n = (size_t)(l.end - l.p);
        if (used + n + 1 >= cap)
            break;
        memcpy(out + used, l.p, n);
        used += n;
        out[used++] = '\n';
        includes += k == LINE_INCLUDE;
        depth += k == LINE_OPEN ? 1 : k == LINE_CLOSE ? -1 : 0;
        if (depth == 0) {
            committed = used;
            committed_includes = includes;
        }
    }
    if (committed_includes == 0)
        committed = 0;
    out[committed] = '\0';
    return committed;
}

const char *cpu_prelude_state_name(cpu_prelude_state s)
{
    static const char *const names[] = {"none", "noted", "made", "used", "refused"};
    return names[s];
}

/* Precompiles out->header into gch (through a temporary name). 1 when it is there now. */
static int precompile(const char *gch, char *const *flags, int n_flags, double timeout_s,
                      cpu_prelude *out)
{
    char tmp[RUNNER_PATH_MAX + 64], log[512];
    char *argv[24];
    int argc = 0, ws = 0, made = 0;
    struct timespec ts = kt_clock_wall();
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%ld", gch, (long)getpid(), (long)ts.tv_nsec);
    argv[argc++] = (char *)PRELUDE_COMPILER;
    for (int i = 0; i < n_flags && argc < 18; i++)
        argv[argc++] = flags[i];
    argv[argc++] = (char *)"-x";
    argv[argc++] = (char *)"c-header";
    argv[argc++] = (char *)"-o";
    argv[argc++] = tmp;
    argv[argc++] = out->header;
    argv[argc] = NULL;
    kt_error err = {0};
    double t0 = kt_clock_s();
    int run = cpu_run_command(argv, timeout_s, log, sizeof log, &ws, &out->cpu_ms, &err);
    out->ms = (kt_clock_s() - t0) * 1000.0;
    if (run == 0 && WIFEXITED(ws) && WEXITSTATUS(ws) == 0 && rename(tmp, gch) == 0)
        made = 1;
    else
        log_info("prelude %s not precompiled (%s): compiling without it", out->header,
                 run < 0    ? err.message
                 : run == 1 ? "timed out"
                            : log);
    unlink(tmp); /* gone after a successful rename; a leftover otherwise */
    return made;
}

void cpu_prelude_prepare(const runner *r, const char *src, size_t len, char *const *flags,
                         int n_flags, double timeout_s, cpu_prelude *out)
{
    char *text = NULL, gch[RUNNER_PATH_MAX + 8];
    memset(out, 0, sizeof *out);
    if (r->no_pch || !(text = malloc(CPU_PRELUDE_MAX)))
        goto out;
    if (cpu_prelude_text(src, len, text, CPU_PRELUDE_MAX) == 0)
        goto out;
    const char *tag = "ktune-cpu-prelude-v1";
    uint64_t h = cpu_toolchain_hash(r, tag, (const char *const *)flags, (size_t)n_flags);
    h = kt_fnv1a_field(h, text, strlen(text));
    snprintf(out->name, sizeof out->name, "pch-%016llx.h.gch", (unsigned long long)h);
    int n = snprintf(out->header, sizeof out->header, "%s/pch-%016llx.h", r->cache_dir,
                     (unsigned long long)h);
    if (n < 0 || (size_t)n >= sizeof out->header)
        goto out;
    snprintf(gch, sizeof gch, "%s.gch", out->header);
    if (access(out->header, R_OK) != 0) {
        /* first sight: what marks it as seen; a one-off compile does not pay a precompile */
        kt_error err = {0};
        if (cpu_write_file(out->header, text, &err) < 0)
            log_info("prelude not noted: %s", err.message);
        else
            out->state = CPU_PRELUDE_NOTED;
        goto out;
    }
    if (access(gch, R_OK) == 0) {
        cpu_cache_touch(gch);
        out->state = CPU_PRELUDE_USED;
        goto out;
    }
    if (precompile(gch, flags, n_flags, timeout_s / PRELUDE_TIMEOUT_SHARE, out))
        out->state = CPU_PRELUDE_MADE;
out:
    if (out->state != CPU_PRELUDE_MADE && out->state != CPU_PRELUDE_USED)
        out->name[0] = '\0';
    free(text);
}
