/* kspec_test_util — the fixture shared by the kernel spec tests (test_catalog_kernel_spec.c) and
 * the real-device catalog and backend tests (test_measure_real.c) and the neural section tests
 * (test_catalog_kernel_neural.c): a temporary folder with a valid
 * kernel (vadd: cpu variant, reference, a cuda source), a fake ktune-runner (a Python script that
 * speaks the protocol) and a cache folder; setup creates it, teardown removes it. Every helper is
 * static inline so that each test uses what it needs. */
#ifndef KT_TESTS_KSPEC_TEST_UTIL_H
#define KT_TESTS_KSPEC_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog/kernel_spec.h"

typedef struct fixture {
    char root[64];    /* temporary folder */
    char kernels[96]; /* root/kernels */
    char dir[128];    /* root/kernels/vadd */
    char cache[96];   /* root/cache */
    char runner[96];  /* root/fake_runner.py */
} fixture;

static inline void write_file(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        fail_msg("cannot write %s: %s", path, strerror(errno));
    fputs(text, f);
    fclose(f);
}

static const char VALID_SPEC[] =
    "{\"name\": \"vadd\", \"summary\": \"y = x + x\","
    " \"problem\": [{\"name\": \"n\", \"min\": 1, \"max\": 1048576, \"default\": 1024},"
    "              {\"name\": \"m\", \"min\": 1, \"max\": 64, \"default\": 4}],"
    " \"problem_restrictions\": [\"n*m <= 1048576\"],"
    " \"buffers\": [{\"name\": \"x\", \"elements\": \"n*m\", \"role\": \"input\"},"
    "               {\"name\": \"y\", \"elements\": \"n*m\", \"role\": \"output\"}],"
    " \"flops\": \"2*n*m\", \"tolerance\": {\"rtol\": 1e-6, \"atol\": 1e-7},"
    " \"reference\": {\"kind\": \"c\", \"source\": \"reference.c\"},"
    " \"variants\": {\"cpu\": {\"source\": \"cpu.c\","
    "   \"parameters\": [{\"name\": \"U\", \"values\": [1, 2, 4, 8]},"
    "                    {\"name\": \"B\", \"values\": [16, 32, 64, 128]}],"
    "   \"restrictions\": [\"U*B <= 256\", \"B*4 <= l1d_bytes\", \"B <= n\"],"
    "   \"default\": {\"U\": 1, \"B\": 16}}},"
    " \"test_problem\": {\"n\": 64, \"m\": 1}}";

/* vadd with neural parameters G (the output thinned by G) and Z, and three transformations (the
 * kernel spec "neural" section, issue 14): test_catalog_kernel_neural.c, test_measure_real.c. */
static const char NEURAL_SPEC[] =
    "{\"name\": \"vadd\", \"summary\": \"y = x + x, thinned\","
    " \"problem\": [{\"name\": \"n\", \"min\": 1, \"max\": 4096, \"default\": 64},"
    "              {\"name\": \"m\", \"min\": 1, \"max\": 64, \"default\": 4}],"
    " \"buffers\": [{\"name\": \"x\", \"elements\": \"n*m\", \"role\": \"input\"},"
    "               {\"name\": \"y\", \"elements\": \"n*m//G\", \"role\": \"output\"}],"
    " \"flops\": \"2*n*m//G + Z\", \"tolerance\": {\"rtol\": 1e-6, \"atol\": 1e-7},"
    " \"reference\": {\"kind\": \"c\", \"source\": \"reference.c\"},"
    " \"variants\": {\"cpu\": {\"source\": \"cpu.c\","
    "   \"parameters\": [{\"name\": \"U\", \"values\": [1, 2, 4]},"
    "                    {\"name\": \"G\", \"values\": [1, 2, 4, 8]},"
    "                    {\"name\": \"Z\", \"values\": [0, 1]}],"
    "   \"restrictions\": [\"n % G == 0\", \"G <= 4 or Z == 1\"],"
    "   \"default\": {\"U\": 1, \"G\": 1, \"Z\": 0},"
    "   \"neural\": {\"parameters\": [\"G\", \"Z\"], \"identity\": {\"G\": 1, \"Z\": 0},"
    "     \"transformations\": [{\"name\": \"half\", \"when\": \"G == 2\"},"
    "                           {\"name\": \"thin\", \"when\": \"G >= 4\"},"
    "                           {\"name\": \"zed\", \"when\": \"Z == 1\"}]}}}}";

static const char CUDA_JSON[] =
    "{\"source\": \"cuda.cu\", \"entry\": \"vadd_kernel\","
    " \"parameters\": [{\"name\": \"T\", \"values\": [32, 64, 128, 256, 2048]}],"
    " \"restrictions\": [\"T <= max_threads_per_block\"],"
    " \"block\": [\"T\", \"1\", 1], \"grid\": [\"(n*m + T - 1)//T\", \"1\", \"1\"],"
    " \"shared_bytes\": \"4*T\", \"default\": {\"T\": 128}}";

/* A fake ktune-runner: answers probes (a cpu with a 256-byte L1, toolchain "gcc 12.9.1"; a GPU as
 * cuda:0 when KT_FAKE_CUDA is set, with KT_FAKE_CUDA's value as its toolchain unless it is "1":
 * then the probe has none; else no CUDA) and measures by the parameter U: 1 ok (0.1 s of "work"), 2
 * SIGSEGV, 4 hangs (after starting a child `sleep 600` whose pid it writes to hang_child.pid in its
 * cache folder: what a kill must reach too), 8 wrong_result (or, when the request has a call limit,
 * SIGALRM as the runner's timer); while a file kill_next in its cache folder holds a count N > 0 it
 * SIGKILLs itself on the next N measures (a kill from outside). The op "compile" takes 0.05 s
 * (compile_ms 7) and fails (compile_error) for U 8 with B 32. Logs every line it gets and the work
 * intervals (times.log: measures, compiles.log: compiles) into its cache folder. */
static const char FAKE_RUNNER[] =
    "#!/usr/bin/env python3\n"
    "import json, os, signal, sys, time\n"
    "a = sys.argv[1:]\n"
    "dev = a[a.index('--device') + 1]\n"
    "cache = a[a.index('--cache-dir') + 1]\n"
    "log = open(os.path.join(cache, 'requests.log'), 'a')\n"
    "log.write(json.dumps({'argv': a}) + '\\n'); log.flush()\n"
    "while True:\n"
    "    line = sys.stdin.readline()\n"
    "    if not line:\n"
    "        break\n"
    "    log.write(line); log.flush()\n"
    "    req = json.loads(line)\n"
    "    if req['op'] == 'probe':\n"
    "        if dev == 'cpu':\n"
    "            rep = {'ok': True, 'device': {'model': 'Fake CPU @ 3.0GHz', 'cores': 4,\n"
    "                   'isa': ['avx2'], 'vector_bits': 256, 'l1d_bytes': 256,\n"
    "                   'l2_bytes': 1048576, 'l3_bytes': 8388608, 'compiler': 'cc 12',\n"
    "                   'toolchain': 'gcc 12.9.1'}}\n"
    "        elif dev == 'cuda:0' and os.environ.get('KT_FAKE_CUDA'):\n"
    "            rep = {'ok': True, 'device': {'name': 'Fake GPU 80GB', 'compute_capability': 90,\n"
    "                   'sms': 132, 'memory_bytes': 85899345920, 'max_threads_per_block': 1024,\n"
    "                   'max_shared_memory_per_block': 49152, 'max_registers_per_block': 65536,\n"
    "                   'warp_size': 32, 'driver_version': 12040}}\n"
    "            if os.environ['KT_FAKE_CUDA'] != '1':\n"
    "                rep['device']['toolchain'] = os.environ['KT_FAKE_CUDA']\n"
    "        else:\n"
    "            rep = {'ok': False, 'reason': 'no CUDA driver (libcuda.so.1 not found)'}\n"
    "    elif req['op'] == 'compile':\n"
    "        d = req['defines']\n"
    "        t0 = time.time(); time.sleep(0.05); t1 = time.time()\n"
    "        with open(os.path.join(cache, 'compiles.log'), 'a') as f:\n"
    "            f.write('%.6f %.6f\\n' % (t0, t1))\n"
    "        if d.get('U') == 8 and d.get('B') == 32:\n"
    "            rep = {'ok': True, 'status': 'compile_error', 'compile_ms': 3.0, 'measure_ms': "
    "0,\n"
    "                   'extras': {'log': 'cpu.c:1: error: fake', 'cached_binary': False}}\n"
    "        else:\n"
    "            rep = {'ok': True, 'status': 'ok', 'compile_ms': 7.0, 'measure_ms': 0,\n"
    "                   'extras': {'cached_binary': False, 'binary': 'fake.so'}}\n"
    "    else:\n"
    "        kill_next = os.path.join(cache, 'kill_next')\n"
    "        if os.path.exists(kill_next):\n"
    "            left = int(open(kill_next).read() or '1')\n"
    "            if left <= 1:\n"
    "                os.remove(kill_next)\n"
    "            else:\n"
    "                open(kill_next, 'w').write(str(left - 1))\n"
    "            os.kill(os.getpid(), signal.SIGKILL)\n"
    "        u = req['defines'].get('U', 1)\n"
    "        if u == 2:\n"
    "            os.kill(os.getpid(), signal.SIGSEGV)\n"
    "        if u == 4:\n"
    "            import subprocess\n"
    "            child = subprocess.Popen(['sleep', '600'])\n"
    "            with open(os.path.join(cache, 'hang_child.pid'), 'w') as f:\n"
    "                f.write(str(child.pid))\n"
    "            time.sleep(600)\n"
    "        if u == 8 and req.get('call_limit_s'):\n"
    "            os.kill(os.getpid(), signal.SIGALRM)\n"
    "        if u == 8:\n"
    "            rep = {'ok': True, 'status': 'wrong_result', 'compile_ms': 1.0, 'measure_ms': "
    "2.0,\n"
    "                   'extras': {'max_abs_err': 1.0, 'first_bad_index': 0}}\n"
    "        else:\n"
    "            t0 = time.time(); time.sleep(0.1); t1 = time.time()\n"
    "            with open(os.path.join(cache, 'times.log'), 'a') as f:\n"
    "                f.write('%.6f %.6f\\n' % (t0, t1))\n"
    "            rep = {'ok': True, 'status': 'ok', 'time_ms': 1.5 * req['defines'].get('B', 1),\n"
    "                   'repeats': 5, 'noise_cv': 0.01, 'compile_ms': 10.0, 'measure_ms': 20.0,\n"
    "                   'extras': {'gflops': 1.0}, 'context_lost': False}\n"
    "    rep['id'] = req['id']\n"
    "    sys.stdout.write(json.dumps(rep) + '\\n'); sys.stdout.flush()\n";

static inline int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    snprintf(f->root, sizeof f->root, "/tmp/ktspec-XXXXXX");
    if (!f || !mkdtemp(f->root))
        return -1;
    snprintf(f->kernels, sizeof f->kernels, "%s/kernels", f->root);
    snprintf(f->dir, sizeof f->dir, "%s/vadd", f->kernels);
    snprintf(f->cache, sizeof f->cache, "%s/cache", f->root);
    snprintf(f->runner, sizeof f->runner, "%s/fake_runner.py", f->root);
    mkdir(f->kernels, 0755);
    mkdir(f->dir, 0755);
    write_file(f->dir, "spec.json", VALID_SPEC);
    write_file(f->dir, "cpu.c",
               "int ktune_kernel(float *const *b, const long long *p) { return 0; }\n");
    write_file(f->dir, "reference.c",
               "int ktune_reference(float *const *b, const long long *p) { return 0; }\n");
    write_file(f->dir, "cuda.cu", "extern \"C\" __global__ void vadd_kernel() {}\n");
    write_file(f->root, "fake_runner.py", FAKE_RUNNER);
    chmod(f->runner, 0755);
    *state = f;
    return 0;
}

static inline int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static inline int teardown(void **state)
{
    fixture *f = *state;
    nftw(f->root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(f);
    return 0;
}

#endif
