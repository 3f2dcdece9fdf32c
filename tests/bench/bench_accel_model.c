/* Bench of accel/: per Table 1 preset and shipped device, the space build time, the cost per call
 * of a uniform sample, sample + decode, the cost model on valid mappings and the lower bound, and
 * the valid fraction of uniform samples. Times are process CPU time. Prints; asserts nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel_device.h"
#include "accel/accel_kernel.h"
#include "accel/accel_model.h"
#include <time.h>

#define N_VALID 20000

/* Process CPU time in ms: the machine may be shared, and CPU time is what a call costs. */
static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(void)
{
    static const char *const presets[][2] = {
        {"cnn_layer", "resnet_conv3"},    {"cnn_layer", "resnet_conv4"},
        {"cnn_layer", "inception_conv2"}, {"cnn_layer", "vgg_conv2"},
        {"cnn_layer", "alexnet_conv2"},   {"cnn_layer", "alexnet_conv4"},
        {"mttkrp", "mttkrp_0"},           {"mttkrp", "mttkrp_1"}};
    accel_device *devs;
    int nd;
    kt_error err;
    if (accel_devices_load(KT_SOURCE_DIR "/accel/devices.json", &devs, &nd, &err) < 0) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    accel_mapping *maps = malloc(N_VALID * sizeof *maps);
    printf("%-14s %-16s %9s %9s %9s %9s %11s %9s %8s\n", "device", "preset", "build ms",
           "sample ns", "+dec ns", "eval ns", "+valid? ns", "lb ns", "valid %");
    for (int di = 0; di < nd; di++)
        for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
            accel_problem p;
            json_t *j = json_pack("{s:s}", "preset", presets[i][1]);
            accel_problem_parse(accel_kernel_find(presets[i][0]), j, &p, &err);
            json_decref(j);
            double t0 = cpu_ms();
            space *sp = accel_space_new(&p, &devs[di], &err);
            double build = cpu_ms() - t0;
            kt_rng rng;
            kt_rng_seed(&rng, 1);
            const int ns = 200000;
            uint64_t sink = 0;
            t0 = cpu_ms();
            for (int r = 0; r < ns; r++)
                sink += space_sample(sp, &rng);
            double sample = (cpu_ms() - t0) * 1e6 / ns;
            accel_mapping m;
            accel_stats s;
            long long drawn = 0;
            int nv = 0;
            t0 = cpu_ms();
            for (int r = 0; r < ns; r++)
                sink += accel_mapping_decode(&p, sp, space_sample(sp, &rng), &m, &err) == 0;
            double dec = (cpu_ms() - t0) * 1e6 / ns;
            while (nv < N_VALID) {
                accel_mapping_decode(&p, sp, space_sample(sp, &rng), &maps[nv], &err);
                drawn++;
                nv += accel_evaluate(&devs[di], &p, &maps[nv], &s);
            }
            double e = 0;
            t0 = cpu_ms();
            for (int rep = 0; rep < 10; rep++)
                for (int r = 0; r < N_VALID; r++) {
                    accel_evaluate(&devs[di], &p, &maps[r], &s);
                    e += s.edp;
                }
            double eval = (cpu_ms() - t0) * 1e6 / (10.0 * N_VALID);
            t0 = cpu_ms();
            for (int r = 0; r < ns; r++) {
                accel_lower_bound(&devs[di], &p, &s);
                e += s.edp;
            }
            double lb = (cpu_ms() - t0) * 1e6 / ns;
            t0 = cpu_ms();
            for (int r = 0; r < ns; r++) {
                accel_mapping_decode(&p, sp, space_sample(sp, &rng), &m, &err);
                sink += (uint64_t)accel_mapping_valid(&devs[di], &p, &m);
            }
            double chk = (cpu_ms() - t0) * 1e6 / ns;
            printf("%-14s %-16s %9.2f %9.0f %9.0f %9.0f %11.0f %9.0f %8.2f%s\n", devs[di].name,
                   presets[i][1], build, sample, dec, eval, chk, lb,
                   100.0 * N_VALID / (double)drawn, sink == 0 && e == 0 ? " " : "");
            space_free(sp);
        }
    free(maps);
    accel_devices_free(devs, nd);
    return 0;
}
