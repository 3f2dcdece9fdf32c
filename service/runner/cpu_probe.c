/* What the CPU device is: model, cores, the instruction-set flags kernels care about, the vector
 * width, the cache sizes and the compiler that builds the kernels. Read once at start-up into
 * r->cpu; the probe reply and the binary-cache hash both use it. */
#include "runner/runner.h"

#include <cblas.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/target_key.h"

#define CPUINFO_LINE_MAX (64 * 1024)

/* Flags reported by the probe, in this order, when /proc/cpuinfo lists them (x86 "flags", Arm
 * "Features"). */
static const char *const isa_of_interest[] = {
    "sse4_2",     "avx",         "avx2",        "fma",         "f16c",     "bmi2",
    "avx512f",    "avx512dq",    "avx512cd",    "avx512bw",    "avx512vl", "avx512ifma",
    "avx512vbmi", "avx512_vnni", "avx512_bf16", "avx512_fp16", "avx_vnni", "amx_tile",
    "amx_bf16",   "amx_int8",    "asimd",       "asimdhp",     "sve",      "sve2",
};

/* Copies src, truncated to fit cap bytes with the NUL. */
static void copy_text(char *dst, size_t cap, const char *src)
{
    size_t n = strnlen(src, cap - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* Value of a "key<tabs>: value" line, trimmed; NULL when the line is not that key. */
static char *cpuinfo_value(char *line, const char *key)
{
    size_t n = strlen(key);
    if (strncmp(line, key, n) != 0)
        return NULL;
    char *p = line + n;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p != ':')
        return NULL;
    p++;
    while (*p == ' ')
        p++;
    size_t len = strlen(p);
    while (len > 0 && (p[len - 1] == '\n' || p[len - 1] == ' '))
        p[--len] = '\0';
    return p;
}

static int has_token(const char *list, const char *tok)
{
    size_t n = strlen(tok);
    const char *p = list;
    while (*p) {
        while (*p == ' ')
            p++;
        const char *e = p;
        while (*e && *e != ' ')
            e++;
        if ((size_t)(e - p) == n && strncmp(p, tok, n) == 0)
            return 1;
        p = e;
    }
    return 0;
}

static void read_cpuinfo(cpu_info *info)
{
    char *line = malloc(CPUINFO_LINE_MAX);
    FILE *f = fopen("/proc/cpuinfo", "r");
    int have_flags = 0;
    if (!line || !f)
        goto out;
    while (fgets(line, CPUINFO_LINE_MAX, f)) {
        char *v;
        if (line[0] == '\n' && info->model[0] && have_flags)
            break; /* the first processor is enough */
        if (!info->model[0] && (v = cpuinfo_value(line, "model name")))
            copy_text(info->model, sizeof info->model, v);
        if (!have_flags &&
            ((v = cpuinfo_value(line, "flags")) || (v = cpuinfo_value(line, "Features")))) {
            have_flags = 1;
            size_t used = 0;
            for (size_t i = 0; i < sizeof isa_of_interest / sizeof *isa_of_interest; i++) {
                if (!has_token(v, isa_of_interest[i]))
                    continue;
                int n = snprintf(info->isa + used, sizeof info->isa - used, "%s%s", used ? " " : "",
                                 isa_of_interest[i]);
                if (n < 0 || (size_t)n >= sizeof info->isa - used)
                    break;
                used += (size_t)n;
            }
        }
    }
out:
    if (f)
        fclose(f);
    free(line);
    if (!info->model[0])
        copy_text(info->model, sizeof info->model, "unknown");
}

/* Reads a one-line sysfs file (trimmed) into buf; -1 when missing. */
static int read_small_file(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char *ok = fgets(buf, (int)cap, f);
    fclose(f);
    if (!ok)
        return -1;
    size_t n = strlen(buf);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
        buf[--n] = '\0';
    return 0;
}

void cpu_topology_read(cpu_info *info, const char *dir)
{
    char path[PATH_MAX], text[256];
    int cores = 0;
    info->physical_cores = 0;
    info->max_mhz = 0;
    for (int n = 0; n < 16384; n++) {
        snprintf(path, sizeof path, "%s/cpu%d/topology/thread_siblings_list", dir, n);
        if (read_small_file(path, text, sizeof text) < 0) {
            snprintf(path, sizeof path, "%s/cpu%d", dir, n);
            if (access(path, F_OK) != 0)
                break; /* past the last CPU */
            continue;  /* an offline CPU has no topology */
        }
        /* "0,32" or "0-1": the first sibling stands for the core */
        if (strtol(text, NULL, 10) == n)
            cores++;
    }
    info->physical_cores = cores;
    snprintf(path, sizeof path, "%s/cpu0/cpufreq/cpuinfo_max_freq", dir);
    if (read_small_file(path, text, sizeof text) == 0) {
        char *end;
        double khz = strtod(text, &end);
        if (end != text && khz > 0 && khz < 1e8)
            info->max_mhz = khz / 1000.0;
    }
}

/* "32K", "1024K", "32M", "512" -> bytes; -1 when malformed. */
static long long parse_size(const char *s)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || v < 0)
        return -1;
    if (*end == 'K')
        return v * 1024;
    if (*end == 'M')
        return v * 1024 * 1024;
    if (*end == 'G')
        return v * 1024 * 1024 * 1024;
    return *end == '\0' ? v : -1;
}

/* A sysfs cache level ("2\n"): 0..9, or -1 for anything else (sysfs never writes that). */
static int parse_cache_level(const char *text)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    while (end && (*end == ' ' || *end == '\n' || *end == '\t'))
        end++;
    if (errno || end == text || *end != '\0' || v < 0 || v > 9)
        return -1;
    return (int)v;
}

/* The cache descriptions of cpu0 under dir (/sys/devices/system/cpu/cpu0/cache on Linux); sets
 * l1d/l2/l3 from the data or unified entries. Some VMs expose no such folder. */
void cpu_caches_from_sysfs(cpu_info *info, const char *dir)
{
    for (int i = 0; i < RUNNER_MAX_CACHES && info->n_caches < RUNNER_MAX_CACHES; i++) {
        char path[RUNNER_PATH_MAX], level[32], type[32], size[32];
        snprintf(path, sizeof path, "%s/index%d/level", dir, i);
        if (read_small_file(path, level, sizeof level) < 0)
            break;
        snprintf(path, sizeof path, "%s/index%d/type", dir, i);
        if (read_small_file(path, type, sizeof type) < 0)
            continue;
        snprintf(path, sizeof path, "%s/index%d/size", dir, i);
        if (read_small_file(path, size, sizeof size) < 0)
            continue;
        int lv = parse_cache_level(level);
        if (lv < 0)
            continue; /* not a level number: the entry says nothing usable */
        cpu_cache_desc *c = &info->caches[info->n_caches++];
        c->level = lv;
        copy_text(c->type, sizeof c->type, type);
        c->bytes = parse_size(size);
        if (c->bytes < 0)
            c->bytes = 0;
        int data = strcmp(c->type, "Instruction") != 0;
        if (c->level == 1 && data && !info->l1d_bytes)
            info->l1d_bytes = c->bytes;
        else if (c->level == 2 && data && !info->l2_bytes)
            info->l2_bytes = c->bytes;
        else if (c->level == 3 && data && !info->l3_bytes)
            info->l3_bytes = c->bytes;
    }
    if (info->l1d_bytes || info->l2_bytes || info->l3_bytes)
        copy_text(info->cache_source, sizeof info->cache_source, "sysfs");
}

/* Sets each of l1d/l2/l3 still unknown (0) from sizes[0..2] (bytes, <= 0: not known either);
 * names the source when it gave any. */
static void fill_unknown_caches(cpu_info *info, const long long sizes[3], const char *source)
{
    long long *dst[3] = {&info->l1d_bytes, &info->l2_bytes, &info->l3_bytes};
    int used = 0;
    for (int i = 0; i < 3; i++) {
        if (*dst[i] == 0 && sizes[i] > 0) {
            *dst[i] = sizes[i];
            used = 1;
        }
    }
    if (!used)
        return;
    if (!info->cache_source[0]) {
        copy_text(info->cache_source, sizeof info->cache_source, source);
    } else {
        size_t n = strlen(info->cache_source);
        snprintf(info->cache_source + n, sizeof info->cache_source - n, "+%s", source);
    }
}

/* glibc answers these from CPUID on x86 and from the auxiliary vector or /sys elsewhere; 0 or
 * -1 when it cannot tell. */
static void caches_from_sysconf(cpu_info *info)
{
    long long sizes[3] = {0, 0, 0};
#if defined(_SC_LEVEL1_DCACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE) &&                           \
    defined(_SC_LEVEL3_CACHE_SIZE)
    sizes[0] = sysconf(_SC_LEVEL1_DCACHE_SIZE);
    sizes[1] = sysconf(_SC_LEVEL2_CACHE_SIZE);
    sizes[2] = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
    fill_unknown_caches(info, sizes, "sysconf");
}

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

/* The deterministic cache parameters of CPUID (leaf 4 on Intel, 0x8000001D on AMD with
 * TOPOEXT): one subleaf per cache, type 0 ends the list. */
static void caches_from_cpuid(cpu_info *info)
{
    unsigned a, b, c, d, leaf = 4;
    long long sizes[3] = {0, 0, 0};
    if (!__get_cpuid(0, &a, &b, &c, &d))
        return;
    if (b == 0x68747541u /* "Auth"enticAMD */ || b == 0x6f677948u /* "Hygo"nGenuine */) {
        if (!__get_cpuid(0x80000001u, &a, &b, &c, &d) || !(c & (1u << 22)))
            return; /* no TOPOEXT: no per-cache leaf */
        leaf = 0x8000001Du;
    } else if (a < 4) {
        return;
    }
    for (unsigned sub = 0; sub < 16; sub++) {
        __cpuid_count(leaf, sub, a, b, c, d);
        unsigned type = a & 0x1f, level = (a >> 5) & 0x7;
        if (type == 0)
            break;
        if (type == 2 || level < 1 || level > 3)
            continue; /* instruction cache, or a level the limits do not name */
        long long ways = ((b >> 22) & 0x3ff) + 1, parts = ((b >> 12) & 0x3ff) + 1;
        long long line = (b & 0xfff) + 1, sets = (long long)c + 1;
        if (!sizes[level - 1])
            sizes[level - 1] = ways * parts * line * sets;
    }
    fill_unknown_caches(info, sizes, "cpuid");
}
#else
static void caches_from_cpuid(cpu_info *info)
{
    (void)info;
}
#endif

void cpu_caches_read(cpu_info *info, const char *sysfs_dir)
{
    info->n_caches = 0;
    info->l1d_bytes = info->l2_bytes = info->l3_bytes = 0;
    info->cache_source[0] = '\0';
    cpu_caches_from_sysfs(info, sysfs_dir);
    /* CPUID before sysconf: Linux fills sysfs from the same CPUID leaves, so the sizes mean the
     * same (the cache one core sees), while glibc's sysconf may report an L3 summed over the
     * chip (256 MiB on an EPYC whose per-CCX L3 sysfs gives as 32 MiB). */
    if (!info->l1d_bytes || !info->l2_bytes || !info->l3_bytes)
        caches_from_cpuid(info);
    if (!info->l1d_bytes || !info->l2_bytes || !info->l3_bytes)
        caches_from_sysconf(info);
    if (!info->cache_source[0])
        copy_text(info->cache_source, sizeof info->cache_source, "unknown");
}

/* The version token at p: starts with a digit, then digits, letters, '.', '+', '-', '_' (at most
 * 63 of them, copied into tok); 0 when p holds none. */
static int version_token(const char *p, char *tok, size_t cap)
{
    size_t n = 0;
    if (!p || *p < '0' || *p > '9')
        return 0;
    while (p[n] &&
           strchr("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.+-_", p[n]) &&
           n + 1 < cap)
        n++;
    if (p[n] && p[n] != ' ' && p[n] != '\t')
        return 0; /* too long, or another character inside the token */
    memcpy(tok, p, n);
    tok[n] = '\0';
    return 1;
}

/* The first token of line[0..len) that starts with a digit, after position from. */
static int first_version(const char *line, size_t from, size_t len, char *tok, size_t cap)
{
    for (size_t i = from; i < len; i++) {
        if ((i == from || line[i - 1] == ' ') && version_token(line + i, tok, cap))
            return 1;
    }
    return 0;
}

void runner_cpu_toolchain(const char *version_output, char *out, size_t cap)
{
    char line[RUNNER_TEXT_MAX], tok[64];
    const char *text = version_output ? version_output : "";
    size_t len = strcspn(text, "\n");
    const char *family = NULL;
    int found = 0;

    if (len > TARGET_TOOLCHAIN_MAX) /* the longest toolchain a key holds */
        len = TARGET_TOOLCHAIN_MAX;
    for (size_t i = 0; i < len; i++) /* the key is printable ASCII */
        line[i] = text[i] >= 0x20 && text[i] < 0x7f ? text[i] : '?';
    while (len > 0 && line[len - 1] == ' ')
        len--;
    line[len] = '\0';
    if (len == 0) {
        snprintf(out, cap, "unknown");
        return;
    }
    if (strstr(line, "clang")) {
        /* "Debian clang version 14.0.6", "clang version 17.0.6 (https://...)" */
        family = "clang";
        const char *v = strstr(line, "version ");
        found = v && version_token(v + strlen("version "), tok, sizeof tok);
    } else if (strstr(line, "gcc") || strstr(line, "GCC") ||
               strstr(text, "Free Software Foundation")) {
        /* "<program> (<package version>) <version> [<date>] [(<more>)]": "cc (Debian 12.2.0-14)
         * 12.2.0", "gcc (GCC) 13.2.1 20230801", "cc (GCC) 8.5.0 20210514 (Red Hat 8.5.0-20)" */
        family = "gcc";
        const char *paren = strchr(line, ')');
        found = first_version(line, paren ? (size_t)(paren - line) + 1 : 0, len, tok, sizeof tok);
    }
    if (family && found)
        snprintf(out, cap, "%s %s", family, tok);
    else
        snprintf(out, cap, "%s", line);
}

static void read_compiler(cpu_info *info)
{
    char out[1024];
    int ws = 0;
    char *argv[] = {(char *)"cc", (char *)"--version", NULL};
    kt_error err;
    info->compiler[0] = '\0';
    snprintf(info->toolchain, sizeof info->toolchain, "unknown");
    if (cpu_run_command(argv, 10.0, out, sizeof out, &ws, NULL, &err) != 0 || !WIFEXITED(ws) ||
        WEXITSTATUS(ws) != 0)
        return;
    runner_cpu_toolchain(out, info->toolchain, sizeof info->toolchain);
    out[strcspn(out, "\n")] = '\0';
    copy_text(info->compiler, sizeof info->compiler, out);
}

void cpu_info_read(cpu_info *info)
{
    memset(info, 0, sizeof *info);
    read_cpuinfo(info);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    info->cores = n > 0 ? (int)n : 1;
    if (has_token(info->isa, "avx512f"))
        info->vector_bits = 512;
    else if (has_token(info->isa, "avx2"))
        info->vector_bits = 256;
    else
        info->vector_bits = 128;
    cpu_caches_read(info, CPU_SYSFS_CACHE_DIR);
    cpu_topology_read(info, CPU_SYSFS_DIR);
    read_compiler(info);
}

/* A cache size as the probe reports it: bytes, or null when nothing could tell (never 0). */
static json_t *cache_size_json(long long bytes)
{
    return bytes > 0 ? json_integer((json_int_t)bytes) : json_null();
}

json_t *cpu_probe_json(const runner *r)
{
    const cpu_info *c = &r->cpu;
    json_t *isa = json_array();
    json_t *caches = json_array();
    const char *p = c->isa;
    while (*p) {
        size_t n = strcspn(p, " ");
        json_array_append_new(isa, json_stringn(p, n));
        p += n;
        p += strspn(p, " ");
    }
    for (int i = 0; i < c->n_caches; i++)
        json_array_append_new(caches, json_pack("{s:i, s:s, s:I}", "level", c->caches[i].level,
                                                "type", c->caches[i].type, "bytes",
                                                (json_int_t)c->caches[i].bytes));
    const char *blas = openblas_get_config();
    json_t *o = json_pack(
        "{s:s, s:s, s:i, s:o, s:i, s:o, s:o, s:o, s:s, s:o, s:o, s:s, s:o, s:s}", "kind", "cpu",
        "model", c->model, "cores", c->cores, "isa", isa, "vector_bits", c->vector_bits,
        "l1d_bytes", cache_size_json(c->l1d_bytes), "l2_bytes", cache_size_json(c->l2_bytes),
        "l3_bytes", cache_size_json(c->l3_bytes), "cache_source", c->cache_source, "caches", caches,
        "compiler", runner_json_text(c->compiler, strlen(c->compiler)), "toolchain", c->toolchain,
        "cpu_core", r->cpu_core >= 0 ? json_integer(r->cpu_core) : json_null(), "blas",
        blas ? blas : "");
    /* What a peak rate needs (issue 31): null where the host does not tell. */
    if (o) {
        json_object_set_new(o, "physical_cores",
                            c->physical_cores > 0 ? json_integer(c->physical_cores) : json_null());
        json_object_set_new(o, "max_mhz", c->max_mhz > 0 ? json_real(c->max_mhz) : json_null());
    }
    return o;
}
