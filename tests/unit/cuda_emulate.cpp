// cuda_emulate — runs kernels/conv2d_neural/cuda.cu on the CPU (test_runner_cuda_emulated.c builds
// it): one pthread per CUDA thread of a block, a barrier for __syncthreads, the blocks one after
// another, shared memory one buffer per block. CUDA_SOURCE_INC is the kernel's source with its
// `extern __shared__` declaration turned into a pointer to that buffer; the configuration comes as
// -D defines. Usage: cuda_emulate <reference.so> N C K H W R S GROUPS BOTTLENECK SEQ; compares the
// outputs with the reference's and exits 0 when every element is within 1e-4 (abs + rel).
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <vector>

struct float4 {
    float x, y, z, w;
};
struct dim3_ {
    unsigned x, y, z;
};
static thread_local dim3_ threadIdx, blockIdx;
static thread_local float4 *g_smem;
static pthread_barrier_t *g_bar;
#define __global__
#define __device__
#define __launch_bounds__(x)
#define __syncthreads() pthread_barrier_wait(g_bar)
#include CUDA_SOURCE_INC

struct thread_arg {
    dim3_ t, b;
    float4 *smem;
    float *in, *w, *out;
    long long a[10];
};

static void *run(void *p)
{
    thread_arg *a = (thread_arg *)p;
    threadIdx = a->t;
    blockIdx = a->b;
    g_smem = a->smem;
    conv2d_neural_kernel(a->in, a->w, a->out, a->a[0], a->a[1], a->a[2], a->a[3], a->a[4], a->a[5],
                         a->a[6], a->a[7], a->a[8], a->a[9]);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 12)
        return 2;
    long long A[10];
    for (int i = 0; i < 10; i++)
        A[i] = atoll(argv[2 + i]);
    long long N = A[0], C = A[1], K = A[2], H = A[3], W = A[4], R = A[5], S = A[6], g = A[7];
    long long b = A[8], seq = A[9], P = H - R + 1, Q = W - S + 1, Kp = K / b;
    std::vector<float> in(N * C * H * W), w(K * C * R * S), got(N * Kp * P * Q, NAN),
        want(N * Kp * P * Q, NAN);
    srand(3);
    for (auto &x : in)
        x = rand() / (float)RAND_MAX - 0.5f;
    for (auto &x : w)
        x = rand() / (float)RAND_MAX - 0.5f;
    // the launch geometry of spec.json's cuda variant
    unsigned bx = TW / PW, by = TH / PH, bz = BK / PK, nt = bx * by * bz;
    long long gx = seq != 1 ? ((Q + TW - 1) / TW) * ((P + TH - 1) / TH)
                            : g * ((Q + TW - 1) / TW) * (((P + g - 1) / g + TH - 1) / TH);
    long long gy = (Kp + BK - 1) / BK;
    std::vector<float4> smem((CB * (TH + R - 1) * (TW + S - 1) + BK * CB * R * S) / 4 + 1);
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, 0, nt);
    g_bar = &bar;
    for (long long z = 0; z < N; z++)
        for (long long y = 0; y < gy; y++)
            for (long long x = 0; x < gx; x++) {
                std::vector<pthread_t> th(nt);
                std::vector<thread_arg> ta(nt);
                unsigned i = 0;
                for (unsigned tz = 0; tz < bz; tz++)
                    for (unsigned ty = 0; ty < by; ty++)
                        for (unsigned tx = 0; tx < bx; tx++, i++) {
                            ta[i] = thread_arg{{tx, ty, tz},
                                               {(unsigned)x, (unsigned)y, (unsigned)z},
                                               smem.data(),
                                               in.data(),
                                               w.data(),
                                               got.data(),
                                               {N, C, K, H, W, R, S, g, b, seq}};
                            if (pthread_create(&th[i], 0, run, &ta[i]) != 0)
                                return 3;
                        }
                for (auto &t : th)
                    pthread_join(t, 0);
            }
    void *h = dlopen(argv[1], RTLD_NOW);
    if (!h)
        return 4;
    typedef int (*ref_fn)(float *const *, const long long *);
    ref_fn ref = (ref_fn)dlsym(h, "ktune_reference");
    float *bufs[3] = {in.data(), w.data(), want.data()};
    if (!ref || ref(bufs, A) != 0)
        return 5;
    size_t bad = 0;
    double worst = 0;
    for (size_t i = 0; i < got.size(); i++) {
        double e = fabs(got[i] - want[i]);
        bad += !(e <= 1e-4 + 1e-4 * fabs(want[i]));
        worst = e > worst ? e : worst;
    }
    printf("grid %lldx%lldx%lld block %ux%ux%u: max |cuda - reference| %.2g, %zu of %zu wrong\n",
           gx, gy, N, bx, by, bz, worst, bad, got.size());
    return bad != 0;
}
