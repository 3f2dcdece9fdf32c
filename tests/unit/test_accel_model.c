/* Unit tests of accel/accel_model: hand-computed mappings (the arithmetic in the comments), the
 * limits that make a mapping invalid, the lower bound against random valid mappings of every
 * Table 1 preset on both shipped devices, and monotonicity properties of reuse. */
#include "accel_test_util.h"
#include "accel/accel_kernel_impl.h"

#include <math.h>
#include <time.h>

#include "core/clock.h"

/* a <= b, but for rounding */
#define LE(a, b) ((a) <= (b) * (1 + 1e-12))

/* Doubles equal within a relative 1e-12 (cmocka's float assertion rounds to float). */
#define assert_close(a, b)                                                                         \
    do {                                                                                           \
        double a_ = (a), b_ = (b);                                                                 \
        if (!(fabs(a_ - b_) <= 1e-12 * fmax(fabs(a_), fabs(b_))))                                  \
            fail_msg("%s = %.17g, expected %.17g", #a, a_, b_);                                    \
    } while (0)

/* A toy device: 4 PEs, 4 banks of 256 B at L1 and of 2 KiB at L2, energies 1 / 10 / 100 pJ per
 * word, MAC 1 pJ, bandwidths 4 (per PE) / 8 / 2 words per cycle, 1 GHz. */
static accel_device toy_device(void)
{
    accel_device d;
    memset(&d, 0, sizeof d);
    snprintf(d.name, sizeof d.name, "toy");
    d.pes = 4;
    d.l1_bytes = 1024;
    d.l2_bytes = 8192;
    d.l1_banks = d.l2_banks = 4;
    d.word_bytes = 2;
    d.clock_ghz = 1.0;
    d.mac_pj = 1.0;
    d.access_pj[0] = 1.0;
    d.access_pj[1] = 10.0;
    d.access_pj[2] = 100.0;
    d.words_per_cycle[0] = 4.0;
    d.words_per_cycle[1] = 8.0;
    d.words_per_cycle[2] = 2.0;
    return d;
}

static void problem_of(const char *kernel, const char *args, accel_problem *p)
{
    json_error_t je;
    json_t *j = json_loads(args, 0, &je);
    assert_non_null(j);
    kt_error err;
    if (accel_problem_parse(accel_kernel_find(kernel), j, p, &err) < 0)
        fail_msg("%s", err.message);
    json_decref(j);
}

/* Every factor 1 but the DRAM one; orders = dims in kernel order; one bank per tensor. */
static void trivial_mapping(const accel_problem *p, accel_mapping *m)
{
    memset(m, 0, sizeof *m);
    int nd = strcmp(accel_kernel_name(p->kernel), "cnn_layer") == 0 ? 7 : 4;
    for (int d = 0; d < nd; d++) {
        m->factor[d][0] = m->factor[d][1] = m->factor[d][2] = 1;
        m->factor[d][3] = p->dim[d];
        for (int l = 0; l < ACCEL_LEVELS; l++)
            m->order[l][d] = d;
    }
    for (int l = 0; l < 2; l++)
        for (int t = 0; t < ACCEL_MAX_TENSORS; t++)
            m->banks[l][t] = 1;
}

/* mttkrp I=4 J=2 K=2 L=1 (M = 16 iterations) on the toy device. I: PE 2, DRAM 2; J: L1 2; K: L2 2.
 * U = 2 PEs. Extents L1 {I1 J2 K1 L1}, PE array {I2 J2 K1 L1}, L2 {I2 J2 K2 L1}.
 * Footprints fp1/fpU/fp2: A(I,K,L) 1/2/4, B(K,J) 2/2/4, C(L,J) 2/2/2, O(I,J) 2/4/4.
 * Temporal loops with factor > 1: DRAM I:2, then L2 K:2; L1 J:2.
 *   F2: A 2 (I relevant), B 1, C 1, O 2.  F1: A 4 (K), B 4 (K), C 1, O 2 (I).
 *   M/R1: A 16/2 = 8 (J irrelevant, innermost), B, C, O 16.
 * A: DRAM 2*4 = 8, L2 8 + 4*2 = 16, L1 4*1*2 + 8 = 16.
 * B: DRAM 1*4 = 4, L2 4 + 4*2 = 12, L1 4*2*2 + 16 = 32.
 * C: DRAM 1*2 = 2, L2 2 + 1*2 = 4, L1 1*2*2 + 16 = 20.
 * O: D2 = 2, D1 = 2: DRAM (4-2)*4 = 8, L2 8 + (4-2)*4 = 16, L1 (4-2)*2*2 + 2*16 = 40.
 * Levels: L1 108, L2 48, DRAM 22 words: energy 108 + 480 + 2200 + MACs 16*2*1 = 2820 pJ.
 * Cycles: max(16/2 = 8, L1 108/2/4 = 13.5, L2 48/8 = 6, DRAM 22/2 = 11) = 13.5.
 * Lower bound: words A 8 + B 4 + C 2 + O 8 = 22, x 111 pJ = 2442 + 32 = 2474 pJ, 16/4 = 4 cycles.
 */
static void mttkrp_by_hand(void **state)
{
    (void)state;
    accel_device d = toy_device();
    accel_problem p;
    problem_of("mttkrp", "{\"I\": 4, \"J\": 2, \"K\": 2, \"L\": 1}", &p);
    accel_mapping m;
    trivial_mapping(&p, &m);
    long long f[4][4] = {{1, 2, 1, 2}, {2, 1, 1, 1}, {1, 1, 2, 1}, {1, 1, 1, 1}};
    memcpy(m.factor, f, sizeof f);
    accel_stats s;
    assert_int_equal(accel_evaluate(&d, &p, &m, &s), 1);
    const double acc[3][4] = {{16, 32, 20, 40}, {16, 12, 4, 16}, {8, 4, 2, 8}};
    for (int l = 0; l < 3; l++)
        for (int t = 0; t < 4; t++) {
            assert_close(s.accesses[l][t], acc[l][t]);
            assert_close(s.energy_pj[l][t], acc[l][t] * d.access_pj[l]);
        }
    assert_close(s.mac_pj, 32.0);
    assert_close(s.energy_pj_total, 2820.0);
    assert_close(s.cycles, 13.5);
    assert_close(s.utilisation, 0.5);
    assert_close(s.edp, 2820e-12 * 13.5e-9);
    accel_stats lb;
    accel_lower_bound(&d, &p, &lb);
    assert_close(lb.energy_pj_total, 2474.0);
    assert_close(lb.cycles, 4.0);
    assert_true(lb.edp <= s.edp);
    double meta[16], w[16];
    assert_int_equal(accel_meta(&p, &s, &lb, meta, 16), 15);
    assert_int_equal(accel_meta_objective(&p, w, 16), 15);
    double sum = 0;
    for (int i = 0; i < 15; i++)
        sum += w[i] * meta[i];
    assert_close(sum, log(s.edp / lb.edp));
    assert_string_equal(accel_meta_name(&p, 0), "energy_L1_A");
    assert_string_equal(accel_meta_name(&p, 11), "energy_DRAM_O");
    assert_string_equal(accel_meta_name(&p, 12), "energy_total");
    assert_string_equal(accel_meta_name(&p, 14), "cycles");
    assert_null(accel_meta_name(&p, 15));
    assert_close(meta[13], 0.5);
}

/* cnn_layer N=K=C=Q=S=1, P=4, R=3, stride 1 (M = 12): a sliding window. P: L1 2, PE 2; R: L1 3.
 * U = 2. I footprints: L1 (2-1)*1+3 = 4 rows, PE array (4-1)+3 = 6, L2 6; W 3/3/3; O 2/4/4.
 * No temporal loop above L1 has a factor > 1: F1 = F2 = 1, D1 = D2 = 1 for O.
 * L1 order NPQ>K>CRS (P outer, R inner): M/R1: I 12, W 12, O 12/3 = 4 (R innermost).
 * I: DRAM 6, L2 6 + 6 = 12, L1 1*4*2 + 12 = 20.   W: DRAM 3, L2 3 + 3 = 6, L1 1*3*2 + 12 = 18.
 * O: DRAM (2-1)*4 = 4, L2 4 + (2-1)*4 = 8, L1 (2-1)*2*2 + 2*4 = 12.
 * Energy: L1 50 + L2 26*10 + DRAM 13*100 + 12 MACs = 1622 pJ. Cycles max(6, 50/2/4 = 6.25,
 * 26/8, 13/2 = 6.5) = 6.5.
 * With CRS>K>NPQ at L1 (R outer, P inner): W's innermost loop P is irrelevant: M/R1 = 12/2 = 6,
 * W L1 6 + 6 = 12; O's innermost P is relevant: M/R1 = 12, O L1 4 + 24 = 28; I unchanged:
 * L1 60, energy 1632 pJ. */
static void cnn_window_by_hand(void **state)
{
    (void)state;
    accel_device d = toy_device();
    accel_problem p;
    problem_of("cnn_layer",
               "{\"N\":1,\"K\":1,\"C\":1,\"P\":4,\"Q\":1,\"R\":3,\"S\":1,\"stride\":1}", &p);
    accel_mapping m;
    trivial_mapping(&p, &m);
    m.factor[3][0] = 2; /* P */
    m.factor[3][1] = 2;
    m.factor[3][3] = 1;
    m.factor[5][0] = 3; /* R */
    m.factor[5][3] = 1;
    int npq_k_crs[7] = {0, 3, 4, 1, 2, 5, 6};
    memcpy(m.order[0], npq_k_crs, sizeof npq_k_crs);
    accel_stats s;
    assert_int_equal(accel_evaluate(&d, &p, &m, &s), 1);
    const double acc[3][3] = {{20, 18, 12}, {12, 6, 8}, {6, 3, 4}};
    for (int l = 0; l < 3; l++)
        for (int t = 0; t < 3; t++)
            assert_close(s.accesses[l][t], acc[l][t]);
    assert_close(s.energy_pj_total, 1622.0);
    assert_close(s.cycles, 6.5);
    int crs_k_npq[7] = {2, 5, 6, 1, 0, 3, 4};
    memcpy(m.order[0], crs_k_npq, sizeof crs_k_npq);
    assert_int_equal(accel_evaluate(&d, &p, &m, &s), 1);
    assert_close(s.accesses[0][1], 12.0);
    assert_close(s.accesses[0][2], 28.0);
    assert_close(s.energy_pj_total, 1632.0);
    /* the lower bound: I 6 words, W 3, O 4: 13 x 111 + 12 = 1455 pJ, 12/4 = 3 cycles */
    accel_stats lb;
    accel_lower_bound(&d, &p, &lb);
    assert_close(lb.energy_pj_total, 1455.0);
    assert_close(lb.cycles, 3.0);
}

/* Mappings breaking a limit are invalid, with a reason naming it. */
static void limits_make_mappings_invalid(void **state)
{
    (void)state;
    accel_device d = toy_device();
    accel_problem p;
    problem_of("mttkrp", "{\"I\": 8, \"J\": 256, \"K\": 2, \"L\": 1}", &p);
    accel_mapping m;
    accel_stats s;
    trivial_mapping(&p, &m);
    assert_int_equal(accel_evaluate(&d, &p, &m, &s), 1);
    m.factor[0][1] = 8; /* 8 PEs > 4 */
    m.factor[0][3] = 1;
    assert_int_equal(accel_evaluate(&d, &p, &m, &s), 0);
    assert_int_equal(s.valid, 0);
    assert_non_null(strstr(s.reason, "PEs: 8 used (I 8), the device has 4"));
    trivial_mapping(&p, &m);
    m.factor[1][0] = 256; /* B's L1 tile: 256 words = 512 B > 1 bank of 256 B */
    m.factor[1][3] = 1;
    assert_int_equal(accel_evaluate(&d, &p, &m, &s), 0);
    assert_non_null(strstr(s.reason, "L1 tile of B: 256 words (512 bytes) > its 1 of 4 banks"));
    m.banks[0][1] = 2; /* two banks hold it, but 5 banks are more than the device has */
    assert_int_equal(accel_evaluate(&d, &p, &m, &s), 0);
    assert_non_null(strstr(s.reason, "L1 banks: 5 allocated, the device has 4"));
    m.banks[0][0] = 0;
    m.banks[0][2] = 1;
    assert_int_equal(accel_evaluate(&d, &p, &m, &s), 0);
    assert_non_null(strstr(s.reason, "L1 banks of A: 0"));
    m.banks[0][0] = 1;
    m.banks[0][3] = 0;
    m.banks[0][2] = 1;
    assert_int_equal(accel_evaluate(&d, &p, &m, &s), 0);
    assert_non_null(strstr(s.reason, "L1 banks of O: 0"));
    m.banks[0][3] = 1;
    m.banks[0][1] = 1;
    m.factor[1][0] = 128; /* 128 words = 256 B: B, C and O fit their bank */
    m.factor[1][3] = 2;
    assert_int_equal(accel_evaluate(&d, &p, &m, &s), 1);
    trivial_mapping(&p, &m);
    m.banks[1][3] = 2;
    assert_int_equal(accel_evaluate(&d, &p, &m, &s), 0);
    assert_non_null(strstr(s.reason, "L2 banks: 5 allocated, the device has 4"));
    trivial_mapping(&p, &m);
    m.factor[1][3] = 128;
    assert_int_equal(accel_evaluate(&d, &p, &m, &s), 0);
    assert_non_null(strstr(s.reason, "factors of J"));
    trivial_mapping(&p, &m);
    m.order[2][1] = 0;
    assert_int_equal(accel_evaluate(&d, &p, &m, &s), 0);
    assert_non_null(strstr(s.reason, "loop order at DRAM"));
}

/* The lower bound is below every valid mapping's energy, cycles and EDP (each level and tensor's
 * energy too): random valid mappings of every preset on both shipped devices. Prints the valid
 * fraction of uniform samples and the evaluation speed (not asserted). */
static void lower_bound_holds_on_random_valid_mappings(void **state)
{
    (void)state;
    int nd;
    accel_device *devs = load_shipped(&nd);
    /* KT_ACCEL_LB_VALID lowers the count (the sanitizer build); 100,000 by default */
    long long want = 100000;
    const char *env = getenv("KT_ACCEL_LB_VALID");
    if (env) {
        char *end;
        long long v = strtoll(env, &end, 10);
        if (*end == '\0' && v >= 1000)
            want = v;
    }
    const long long max_draws = 200 * want;
    kt_rng rng;
    kt_rng_seed(&rng, 13);
    for (int di = 0; di < nd; di++)
        for (int i = 0; i < N_ACCEL_PRESETS; i++) {
            accel_problem p;
            parse_preset(accel_presets[i].kernel, accel_presets[i].preset, &p);
            space *sp = space_of(&p, &devs[di]);
            accel_stats lb, s;
            accel_lower_bound(&devs[di], &p, &lb);
            accel_mapping m;
            long long drawn = 0, valid = 0;
            double best = INFINITY, sum_log = 0;
            double t0 = kt_clock_ms();
            while (valid < want && drawn < max_draws) {
                kt_error err;
                drawn++;
                if (accel_mapping_decode(&p, sp, space_sample(sp, &rng), &m, &err) < 0)
                    fail_msg("decode: %s", err.message);
                int quick = accel_mapping_valid(&devs[di], &p, &m);
                if (drawn <= 20000) /* the quick check is accel_evaluate's verdict */
                    assert_int_equal(quick, accel_evaluate(&devs[di], &p, &m, &s));
                if (!quick)
                    continue;
                assert_int_equal(accel_evaluate(&devs[di], &p, &m, &s), 1);
                valid++;
                for (int l = 0; l < ACCEL_LEVELS; l++)
                    for (int t = 0; t < ACCEL_MAX_TENSORS; t++)
                        assert_true(LE(lb.energy_pj[l][t], s.energy_pj[l][t]));
                assert_true(LE(lb.energy_pj_total, s.energy_pj_total));
                assert_true(LE(lb.cycles, s.cycles));
                assert_true(LE(lb.edp, s.edp));
                assert_true(s.utilisation > 0 && s.utilisation <= 1);
                best = fmin(best, s.edp / lb.edp);
                sum_log += log(s.edp / lb.edp);
            }
            double ms = kt_clock_ms() - t0;
            printf("  %-14s %-16s valid %lld of %lld uniform samples (%.2f%%); EDP/min best %.2f, "
                   "geomean %.1f; %.0f ns per draw\n",
                   devs[di].name, accel_presets[i].preset, valid, drawn, 100.0 * valid / drawn,
                   best, exp(sum_log / valid), ms * 1e6 / drawn);
            assert_int_equal(valid, want);
            space_free(sp);
        }
    accel_devices_free(devs, nd);
}

/* Strided windows (stride above, equal to and below the filter size) and odd shapes: the lower
 * bound's window rows, (P - 1) * min(stride, R) + R, still hold under every valid mapping. */
static void lower_bound_holds_with_strides(void **state)
{
    (void)state;
    int nd;
    accel_device *devs = load_shipped(&nd);
    static const char *const problems[] = {
        "{\"N\":4,\"K\":32,\"C\":16,\"P\":14,\"Q\":14,\"R\":1,\"S\":1,\"stride\":2}",
        "{\"N\":2,\"K\":64,\"C\":8,\"P\":12,\"Q\":10,\"R\":3,\"S\":2,\"stride\":4}",
        "{\"N\":8,\"K\":16,\"C\":24,\"P\":9,\"Q\":9,\"R\":5,\"S\":5,\"stride\":2}",
        "{\"N\":1,\"K\":96,\"C\":3,\"P\":55,\"Q\":55,\"R\":11,\"S\":11,\"stride\":4}",
        "{\"N\":3,\"K\":5,\"C\":7,\"P\":4,\"Q\":6,\"R\":2,\"S\":3,\"stride\":3}"};
    kt_rng rng;
    kt_rng_seed(&rng, 31);
    for (size_t i = 0; i < sizeof problems / sizeof problems[0]; i++)
        for (int di = 0; di < nd; di++) {
            accel_problem p;
            problem_of("cnn_layer", problems[i], &p);
            space *sp = space_of(&p, &devs[di]);
            accel_stats lb, s;
            accel_mapping m;
            accel_lower_bound(&devs[di], &p, &lb);
            for (int r = 0; r < 20000; r++) {
                long long drawn = 0;
                assert_true(random_valid(&p, &devs[di], sp, &rng, 100000, &m, &s, &drawn));
                for (int l = 0; l < ACCEL_LEVELS; l++)
                    for (int t = 0; t < 3; t++)
                        assert_true(LE(lb.energy_pj[l][t], s.energy_pj[l][t]));
                assert_true(LE(lb.edp, s.edp));
            }
            space_free(sp);
        }
    accel_devices_free(devs, nd);
}

/* The JSON view: valid (energies per level and tensor, the MACs, edp over the minimum) and not. */
static void stats_json_shows_the_costs(void **state)
{
    (void)state;
    accel_device d = toy_device();
    accel_problem p;
    problem_of("mttkrp", "{\"I\": 4, \"J\": 2, \"K\": 2, \"L\": 1}", &p);
    accel_mapping m;
    trivial_mapping(&p, &m);
    accel_stats s, lb;
    assert_int_equal(accel_evaluate(&d, &p, &m, &s), 1);
    accel_lower_bound(&d, &p, &lb);
    json_t *j = accel_stats_json(&p, &s, &lb);
    assert_true(json_is_true(json_object_get(j, "valid")));
    assert_close(json_real_value(json_object_get(j, "edp")), s.edp);
    assert_close(json_real_value(json_object_get(j, "edp_over_min")), s.edp / lb.edp);
    assert_close(json_real_value(json_object_get(j, "energy_pj")), s.energy_pj_total);
    json_t *e = json_object_get(j, "energy");
    assert_close(json_real_value(json_object_get(json_object_get(e, "DRAM"), "C")),
                 s.energy_pj[2][2]);
    assert_close(json_real_value(json_object_get(e, "MAC")), s.mac_pj);
    assert_close(json_real_value(
                     json_object_get(json_object_get(json_object_get(j, "accesses"), "L1"), "O")),
                 s.accesses[0][3]);
    json_decref(j);
    j = accel_stats_json(&p, &s, NULL);
    assert_null(json_object_get(j, "edp_over_min"));
    json_decref(j);
    m.factor[0][1] = 4;
    m.factor[0][3] = 1;
    m.factor[1][1] = 2;
    m.factor[1][3] = 1;
    assert_int_equal(accel_evaluate(&d, &p, &m, &s), 0);
    assert_int_equal(accel_mapping_valid(&d, &p, &m), 0);
    j = accel_stats_json(&p, &s, &lb);
    assert_true(json_is_false(json_object_get(j, "valid")));
    assert_string_equal(json_string_value(json_object_get(j, "reason")),
                        "PEs: 8 used (I 4 x J 2), the device has 4");
    json_decref(j);
}

/* A copy of m with the dims of class mask `cls` moved innermost at level l (the others keep their
 * relative order). */
static accel_mapping move_innermost(const accel_mapping *m, int l, unsigned cls, int n_dims)
{
    accel_mapping r = *m;
    int n = 0;
    for (int i = 0; i < n_dims; i++)
        if (!(cls & (1u << m->order[l][i])))
            r.order[l][n++] = m->order[l][i];
    for (int i = 0; i < n_dims; i++)
        if (cls & (1u << m->order[l][i]))
            r.order[l][n++] = m->order[l][i];
    return r;
}

static long long smallest_prime_factor(long long n)
{
    for (long long q = 2; q * q <= n; q++)
        if (n % q == 0)
            return q;
    return n;
}

/* Over random valid mappings of every preset on both devices:
 * 1. more reuse never costs more: moving a reuse class irrelevant to tensor t innermost at any
 *    level never increases t's accesses at any level (t's tiles stay put while the class runs);
 * 2. a larger L2 tile (a prime factor of a dim moved from DRAM into L2), when it still fits, never
 *    increases any tensor's DRAM accesses;
 * 3. a larger L1 tile (a prime factor moved from L2 into L1), when it still fits, never increases
 *    any tensor's L2 or DRAM accesses;
 * 4. the model is the device's: scaling DRAM's energy per word scales DRAM energy and nothing
 *    else; halving DRAM's bandwidth never shortens the run. */
static void reuse_and_tiles_are_monotone(void **state)
{
    (void)state;
    int nd;
    accel_device *devs = load_shipped(&nd);
    kt_rng rng;
    kt_rng_seed(&rng, 2026);
    long long checks[4] = {0, 0, 0, 0};
    for (int di = 0; di < nd; di++)
        for (int i = 0; i < N_ACCEL_PRESETS; i++) {
            accel_problem p;
            parse_preset(accel_presets[i].kernel, accel_presets[i].preset, &p);
            const accel_kernel *k = p.kernel;
            const accel_device *d = &devs[di];
            space *sp = space_of(&p, d);
            accel_device d2 = *d;
            d2.access_pj[2] *= 3.0;
            d2.words_per_cycle[2] /= 2.0;
            for (int r = 0; r < (di == 0 ? 3000 : 1000); r++) {
                accel_mapping m, x;
                accel_stats s, s2;
                long long drawn = 0;
                assert_true(random_valid(&p, d, sp, &rng, 1000000, &m, &s, &drawn));
                /* 1 */
                for (int l = 0; l < ACCEL_LEVELS; l++)
                    for (int c = 0; c < k->n_classes; c++) {
                        x = move_innermost(&m, l, k->class_mask[c], k->n_dims);
                        assert_int_equal(accel_evaluate(d, &p, &x, &s2), 1);
                        for (int t = 0; t < k->n_tensors; t++) {
                            if (k->tensors[t].rel & k->class_mask[c])
                                continue;
                            for (int ll = 0; ll < ACCEL_LEVELS; ll++)
                                assert_true(LE(s2.accesses[ll][t], s.accesses[ll][t]));
                            checks[0]++;
                        }
                    }
                /* 2 and 3 */
                for (int dim = 0; dim < k->n_dims; dim++)
                    for (int from = 3; from >= 2; from--) {
                        if (m.factor[dim][from] == 1)
                            continue;
                        long long q = smallest_prime_factor(m.factor[dim][from]);
                        x = m;
                        x.factor[dim][from] /= q;
                        x.factor[dim][from == 3 ? 2 : 0] *= q;
                        if (!accel_evaluate(d, &p, &x, &s2))
                            continue;
                        for (int t = 0; t < k->n_tensors; t++) {
                            assert_true(LE(s2.accesses[2][t], s.accesses[2][t]));
                            if (from == 2)
                                assert_true(LE(s2.accesses[1][t], s.accesses[1][t]));
                        }
                        checks[from == 3 ? 1 : 2]++;
                    }
                /* 4 */
                assert_int_equal(accel_evaluate(&d2, &p, &m, &s2), 1);
                for (int t = 0; t < k->n_tensors; t++) {
                    for (int l = 0; l < ACCEL_LEVELS; l++)
                        assert_true(s2.accesses[l][t] == s.accesses[l][t]);
                    assert_close(s2.energy_pj[2][t], 3.0 * s.energy_pj[2][t]);
                    assert_true(s2.energy_pj[1][t] == s.energy_pj[1][t]);
                }
                assert_true(s2.cycles >= s.cycles);
                accel_evaluate(d, &p, &m, &s2);
                assert_memory_equal(&s, &s2, sizeof s);
                checks[3]++;
            }
            space_free(sp);
        }
    printf("  checked: %lld reuse moves, %lld larger L2 tiles, %lld larger L1 tiles, %lld device "
           "scalings\n",
           checks[0], checks[1], checks[2], checks[3]);
    assert_true(checks[1] > 1000 && checks[2] > 1000);
    accel_devices_free(devs, nd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mttkrp_by_hand),
        cmocka_unit_test(cnn_window_by_hand),
        cmocka_unit_test(limits_make_mappings_invalid),
        cmocka_unit_test(reuse_and_tiles_are_monotone),
        cmocka_unit_test(lower_bound_holds_on_random_valid_mappings),
        cmocka_unit_test(lower_bound_holds_with_strides),
        cmocka_unit_test(stats_json_shows_the_costs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
