/* kernels/conv2d_neural/cuda.cu checked without a GPU: tests/unit/cuda_emulate.cpp runs it on the
 * CPU (a pthread per CUDA thread, a barrier for __syncthreads) for the identity and every
 * transformation kind, and compares its outputs with kernels/conv2d_neural/reference.c. This
 * checks the variant's indexing (a block's group or band, the weight offsets, the launch geometry
 * of spec.json), not its speed. Skipped, saying why, where no C++ compiler (c++) is found (exit 77,
 * kt_skip_all); a failure instead when KTUNE_REQUIRE_CUDA is set (make gpu-check runs every CUDA
 * check). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/file.h"
#include "skip_test_util.h"

#define DECL "extern __shared__ float4 kt_smem[];"

static int sh(const char *cmd)
{
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static void conv2d_neural_cuda_matches_reference(void **state)
{
    (void)state;
    if (sh("command -v c++ >/dev/null 2>&1") != 0)
        fail_msg("no C++ compiler (c++) and KTUNE_REQUIRE_CUDA is set"); /* main skips otherwise */
    char dir[] = "/tmp/ktune-cuda-emu-XXXXXX", path[512], cmd[4096];
    assert_non_null(mkdtemp(dir));
    /* the kernel with its shared memory declaration pointing at the emulator's buffer */
    snprintf(path, sizeof path, "%s/kernels/conv2d_neural/cuda.cu", KT_SOURCE_DIR);
    size_t len = 0;
    kt_error err;
    char *src = kt_file_read_all(path, 1 << 20, &len, &err);
    assert_non_null(src);
    char *at = strstr(src, DECL);
    assert_non_null(at);
    snprintf(path, sizeof path, "%s/kernel.inc", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "%.*sfloat4 *kt_smem = g_smem;%s", (int)(at - src), src, at + strlen(DECL));
    fclose(f);
    free(src);
    snprintf(cmd, sizeof cmd,
             "cc -std=gnu11 -O2 -fPIC -shared -o %s/ref.so %s/kernels/conv2d_neural/reference.c",
             dir, KT_SOURCE_DIR);
    assert_int_equal(sh(cmd), 0);
    /* GROUPS BOTTLENECK SEQ, then TH TW BK PH PW PK CB: blocks inside one group (BK divides
     * K'/g, 16/g, K'/(4g)) as spec.json's restrictions keep them */
    static const int cases[][10] = {
        {1, 1, 0, 4, 8, 8, 2, 2, 2, 4}, {4, 2, 0, 4, 8, 4, 2, 2, 2, 4},
        {1, 2, 0, 2, 4, 4, 1, 1, 2, 3}, {3, 1, 1, 4, 8, 4, 2, 2, 2, 4},
        {4, 1, 2, 2, 4, 4, 1, 1, 2, 3}, {2, 2, 3, 4, 8, 4, 2, 2, 2, 4},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int *c = cases[i];
        snprintf(cmd, sizeof cmd,
                 "c++ -std=c++17 -O1 -w -o %s/emu -DCUDA_SOURCE_INC='\"%s/kernel.inc\"' "
                 "-DGROUPS=%d -DBOTTLENECK=%d -DSEQ=%d -DTH=%d -DTW=%d -DBK=%d -DPH=%d -DPW=%d "
                 "-DPK=%d -DCB=%d %s/tests/unit/cuda_emulate.cpp -ldl -lpthread",
                 dir, dir, c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9],
                 KT_SOURCE_DIR);
        assert_int_equal(sh(cmd), 0);
        printf("  GROUPS %d BOTTLENECK %d SEQ %d: ", c[0], c[1], c[2]);
        fflush(stdout);
        snprintf(cmd, sizeof cmd, "%s/emu %s/ref.so 2 48 64 11 10 3 3 %d %d %d", dir, dir, c[0],
                 c[1], c[2]);
        if (sh(cmd) != 0)
            fail_msg("the emulated CUDA variant differs from the reference (GROUPS %d BOTTLENECK "
                     "%d SEQ %d)",
                     c[0], c[1], c[2]);
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    sh(cmd);
}

int main(void)
{
    if (!kt_skip_required("KTUNE_REQUIRE_CUDA") && sh("command -v c++ >/dev/null 2>&1") != 0)
        return kt_skip_all("no C++ compiler (c++): the CUDA variant is not emulated here");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(conv2d_neural_cuda_matches_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
