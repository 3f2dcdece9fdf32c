/* Unit tests of accel/accel_kernel and accel_space: the kernels and their JSON, problem parsing
 * (presets, defaults, every error), the training distribution, the mapping spaces of every Table 1
 * preset on both shipped devices (counts against an independent count, printed), and decoding
 * configurations (round trip through the space's values, refusal of another problem's space). */
#include "accel_test_util.h"

#include <math.h>

static json_t *jparse(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &e);
    if (!j)
        fail_msg("bad test JSON %s: %s", text, e.text);
    return j;
}

static void kernels_are_listed(void **state)
{
    (void)state;
    assert_int_equal(accel_kernel_count(), 2);
    const accel_kernel *cnn = accel_kernel_find("cnn_layer");
    const accel_kernel *mtt = accel_kernel_find("mttkrp");
    assert_non_null(cnn);
    assert_non_null(mtt);
    assert_null(accel_kernel_find("gemm"));
    assert_null(accel_kernel_find(NULL));
    assert_ptr_equal(accel_kernel_at(0), cnn);
    assert_ptr_equal(accel_kernel_at(1), mtt);
    assert_null(accel_kernel_at(2));
    assert_string_equal(accel_kernel_name(mtt), "mttkrp");
    assert_true(accel_kernel_hash(cnn) != accel_kernel_hash(mtt));
    assert_true(accel_kernel_hash(cnn) == accel_kernel_hash(accel_kernel_find("cnn_layer")));
    json_t *j = accel_kernel_json(cnn);
    char *text = json_dumps(j, JSON_SORT_KEYS);
    assert_non_null(strstr(text, "\"resnet_conv3\": {\"C\": 128, \"K\": 128, \"N\": 16, \"P\": "
                                 "28, \"Q\": 28, \"R\": 3, \"S\": 3, \"stride\": 1}"));
    assert_non_null(strstr(text, "{\"dims\": [\"N\", \"C\", \"P\", \"Q\", \"R\", \"S\"], "
                                 "\"name\": \"I\", \"output\": false}"));
    assert_non_null(strstr(text, "\"reuse_classes\": [\"NPQ\", \"K\", \"CRS\"]"));
    assert_non_null(strstr(text, "{\"default\": 1, \"max\": 4, \"min\": 1, \"name\": \"stride\"}"));
    assert_int_equal(json_object_size(json_object_get(j, "presets")), 6);
    free(text);
    json_decref(j);
    j = accel_kernel_json(mtt);
    text = json_dumps(j, JSON_SORT_KEYS);
    assert_non_null(
        strstr(text, "\"mttkrp_1\": {\"I\": 2048, \"J\": 4096, \"K\": 1024, \"L\": 128}"));
    free(text);
    json_decref(j);
}

static void problems_parse(void **state)
{
    (void)state;
    const accel_kernel *cnn = accel_kernel_find("cnn_layer");
    accel_problem p;
    kt_error err;
    assert_int_equal(accel_problem_parse(cnn, NULL, &p, &err), 0);
    long long def[7] = {16, 256, 256, 14, 14, 3, 3};
    for (int d = 0; d < 7; d++)
        assert_int_equal(p.dim[d], def[d]);
    json_t *j = jparse("{\"K\": 64, \"P\": 7, \"stride\": 2}");
    assert_int_equal(accel_problem_parse(cnn, j, &p, &err), 0);
    json_decref(j);
    json_t *c = accel_problem_json(&p);
    char *text = json_dumps(c, JSON_SORT_KEYS);
    assert_string_equal(text, "{\"C\": 256, \"K\": 64, \"N\": 16, \"P\": 7, \"Q\": 14, \"R\": 3, "
                              "\"S\": 3, \"stride\": 2}");
    /* the canonical form parses to the same problem */
    accel_problem q;
    assert_int_equal(accel_problem_parse(cnn, c, &q, &err), 0);
    assert_memory_equal(&p, &q, sizeof p);
    free(text);
    json_decref(c);
    parse_preset("cnn_layer", "alexnet_conv2", &p);
    assert_int_equal(p.dim[1], 256);
    assert_int_equal(p.dim[2], 96);
    assert_int_equal(p.dim[3], 27);
    assert_int_equal(p.dim[5], 5);
    parse_preset("mttkrp", "mttkrp_0", &p);
    assert_int_equal(p.dim[0], 128);
    assert_int_equal(p.dim[3], 2048);
}

static void expect_bad(const char *kernel, const char *problem, const char *needle)
{
    json_t *j = jparse(problem);
    accel_problem p;
    kt_error err;
    kt_error_clear(&err);
    assert_int_equal(accel_problem_parse(accel_kernel_find(kernel), j, &p, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_PROBLEM);
    if (!strstr(err.message, needle))
        fail_msg("'%s' not in '%s'", needle, err.message);
    json_decref(j);
}

static void bad_problems_are_refused(void **state)
{
    (void)state;
    expect_bad("cnn_layer", "{\"H\": 28}",
               "unknown problem argument 'H'; accepted: N, K, C, P, Q, R, S, stride, or preset");
    expect_bad("cnn_layer", "{\"K\": 0}", "problem argument K must be an integer in [1, 4096]");
    expect_bad("cnn_layer", "{\"R\": 12}", "problem argument R must be an integer in [1, 11]");
    expect_bad("cnn_layer", "{\"N\": 1.5}", "problem argument N must be an integer");
    expect_bad("cnn_layer", "{\"preset\": \"resnet_conv9\"}", "unknown preset 'resnet_conv9'");
    expect_bad("cnn_layer", "{\"preset\": \"mttkrp_0\"}", "unknown preset 'mttkrp_0'");
    expect_bad("cnn_layer", "{\"preset\": 3}", "unknown preset (not a string)");
    expect_bad("cnn_layer", "{\"preset\": \"vgg_conv2\", \"N\": 2}",
               "a problem with \"preset\" takes no other field");
    expect_bad("cnn_layer", "[1]", "the problem is not an object");
    /* dims rich in divisors: 720 = 2^4 3^2 5 has 1400 ordered 4-factorisations */
    expect_bad("cnn_layer",
               "{\"N\": 240, \"K\": 720, \"C\": 720, \"P\": 720, \"Q\": 720, \"R\": 5, \"S\": 5}",
               "more than 64-bit ids hold");
    expect_bad("mttkrp", "{\"I\": 0}", "problem argument I must be an integer in [1, 16384]");
    json_t *j = jparse("{\"preset\": \"x\"}");
    accel_problem p;
    kt_error err;
    assert_int_equal(accel_problem_parse(accel_kernel_find("mttkrp"), j, &p, &err), -1);
    assert_non_null(strstr(err.hint, "mttkrp_0, mttkrp_1"));
    json_decref(j);
}

/* The space's configurations counted without the space engine: per dim the (L1, PE, L2) triples
 * whose product divides the dim, L1 within the biggest L1 allocation, PE within the PEs, the L2
 * extent within the biggest L2 allocation; orders^3; allocations with sum <= banks per level. */
static double independent_count(const accel_problem *p, const accel_device *d, int n_dims,
                                int n_tensors, int orders)
{
    long long l1max = (long long)floor((double)d->l1_bytes / d->word_bytes *
                                       (d->l1_banks - n_tensors + 1) / d->l1_banks);
    long long l2max = (long long)floor((double)d->l2_bytes / d->word_bytes *
                                       (d->l2_banks - n_tensors + 1) / d->l2_banks);
    double count = 1;
    for (int i = 0; i < n_dims; i++) {
        long long n = p->dim[i], c = 0;
        for (long long a = 1; a <= n; a++)
            for (long long b = 1; a * b <= n; b++)
                for (long long e = 1; a * b * e <= n; e++)
                    c += n % (a * b * e) == 0 && a <= l1max && b <= d->pes && a * b * e <= l2max;
        count *= (double)c;
    }
    count *= (double)orders * orders * orders;
    for (int l = 0; l < 2; l++) {
        int banks = l ? d->l2_banks : d->l1_banks;
        long long alloc = 0;
        /* allocations of n_tensors tensors, each >= 1, sum <= banks: C(banks, n_tensors) */
        double c = 1;
        for (int i = 1; i <= n_tensors; i++)
            c = c * (banks - n_tensors + i) / i;
        alloc = llround(c);
        count *= (double)alloc;
    }
    return count;
}

static void preset_spaces_have_the_expected_counts(void **state)
{
    (void)state;
    int nd;
    accel_device *devs = load_shipped(&nd);
    for (int di = 0; di < nd; di++)
        for (int i = 0; i < N_ACCEL_PRESETS; i++) {
            accel_problem p;
            parse_preset(accel_presets[i].kernel, accel_presets[i].preset, &p);
            int cnn = strcmp(accel_presets[i].kernel, "cnn_layer") == 0;
            space *sp = space_of(&p, &devs[di]);
            double want = independent_count(&p, &devs[di], cnn ? 7 : 4, cnn ? 3 : 4, cnn ? 6 : 24);
            printf("  %-14s %-16s %d parameters, %d groups, %llu configurations (raw grid %.3g)\n",
                   devs[di].name, accel_presets[i].preset, space_num_params(sp),
                   space_num_groups(sp), (unsigned long long)space_count(sp), space_raw_size(sp));
            assert_true((double)space_count(sp) == want);
            assert_int_equal(space_num_params(sp), cnn ? 3 * 7 + 3 + 6 : 3 * 4 + 3 + 8);
            assert_int_equal(space_num_groups(sp), (cnn ? 7 : 4) + 3 + 2);
            space_free(sp);
        }
    accel_devices_free(devs, nd);
}

static void space_names_and_restrictions_are_the_contract(void **state)
{
    (void)state;
    int nd;
    accel_device *devs = load_shipped(&nd);
    accel_problem p;
    parse_preset("cnn_layer", "resnet_conv4", &p);
    space *sp = space_of(&p, &devs[0]);
    const char *names[] = {"N_L1",     "N_PE",     "N_L2",     "K_L1",     "K_PE",     "K_L2",
                           "C_L1",     "C_PE",     "C_L2",     "P_L1",     "P_PE",     "P_L2",
                           "Q_L1",     "Q_PE",     "Q_L2",     "R_L1",     "R_PE",     "R_L2",
                           "S_L1",     "S_PE",     "S_L2",     "order_L1", "order_L2", "order_DRAM",
                           "buf_L1_I", "buf_L1_W", "buf_L1_O", "buf_L2_I", "buf_L2_W", "buf_L2_O"};
    for (int i = 0; i < 30; i++)
        assert_string_equal(space_param_name(sp, i), names[i]);
    /* orders: the 6 permutations of the reuse classes */
    const char *orders[] = {"NPQ>K>CRS", "NPQ>CRS>K", "K>NPQ>CRS",
                            "K>CRS>NPQ", "CRS>NPQ>K", "CRS>K>NPQ"};
    assert_int_equal(space_param_num_values(sp, 21), 6);
    for (int v = 0; v < 6; v++) {
        json_t *j = space_param_value_json(sp, 23, v);
        assert_string_equal(json_string_value(j), orders[v]);
        json_decref(j);
    }
    assert_string_equal(space_restriction_text(sp, 0), "N % (N_L1 * N_PE) == 0");
    assert_string_equal(space_restriction_text(sp, 1),
                        "N % (N_L1 * N_PE * N_L2) == 0 and N_L1 * N_PE * N_L2 <= l2_extent_max");
    assert_string_equal(space_restriction_text(sp, 14),
                        "buf_L1_I + buf_L1_W + buf_L1_O <= l1_banks");
    /* pruned lists: PE factors <= 256 PEs; banks 1..6 (8 banks, two other tensors) */
    assert_int_equal(space_param_num_values(sp, space_param_index(sp, "buf_L2_W")), 6);
    assert_int_equal(space_param_num_values(sp, space_param_index(sp, "K_PE")), 9); /* 1..256 */
    space_free(sp);
    accel_problem m;
    parse_preset("mttkrp", "mttkrp_1", &m);
    sp = space_of(&m, &devs[1]);
    assert_string_equal(space_param_name(sp, 12), "order_L1");
    assert_string_equal(space_param_name(sp, 15), "buf_L1_A");
    assert_string_equal(space_param_name(sp, 22), "buf_L2_O");
    assert_int_equal(space_param_num_values(sp, 14), 24);
    json_t *j = space_param_value_json(sp, 14, 23);
    assert_string_equal(json_string_value(j), "L>K>J>I");
    json_decref(j);
    /* 64 PEs: J_PE over 1..64 */
    assert_int_equal(space_param_num_values(sp, 4), 7);
    space_free(sp);
    accel_devices_free(devs, nd);
}

/* Value index of the number x in parameter pi. */
static int value_index(const space *sp, int pi, double x)
{
    for (int v = 0; v < space_param_num_values(sp, pi); v++)
        if (space_param_value_number(sp, pi, v) == x)
            return v;
    fail_msg("value %g not in parameter %s", x, space_param_name(sp, pi));
    return -1;
}

/* Decoded mappings re-encode to their id through the space's values (factors, the order strings
 * rebuilt from the dims' order, the banks). */
static void decode_round_trips(void **state)
{
    (void)state;
    int nd;
    accel_device *devs = load_shipped(&nd);
    kt_rng rng;
    kt_rng_seed(&rng, 7);
    for (int i = 0; i < N_ACCEL_PRESETS; i++) {
        accel_problem p;
        parse_preset(accel_presets[i].kernel, accel_presets[i].preset, &p);
        int cnn = strcmp(accel_presets[i].kernel, "cnn_layer") == 0;
        int n_dims = cnn ? 7 : 4, n_t = cnn ? 3 : 4;
        json_t *kj = accel_kernel_json(p.kernel);
        json_t *classes = json_object_get(kj, "reuse_classes");
        json_t *dims = json_object_get(kj, "dims");
        space *sp = space_of(&p, &devs[i % 2]);
        for (int r = 0; r < 2000; r++) {
            config_id id = r == 0 ? 0 : r == 1 ? space_count(sp) - 1 : space_sample(sp, &rng);
            accel_mapping m;
            kt_error err;
            assert_int_equal(accel_mapping_decode(&p, sp, id, &m, &err), 0);
            int idx[40];
            for (int d = 0; d < n_dims; d++) {
                long long prod = 1;
                for (int l = 0; l < 4; l++) {
                    assert_true(m.factor[d][l] >= 1);
                    prod *= m.factor[d][l];
                }
                assert_int_equal(prod, p.dim[d]);
                for (int l = 0; l < 3; l++)
                    idx[3 * d + l] = value_index(sp, 3 * d + l, (double)m.factor[d][l]);
            }
            for (int l = 0; l < 3; l++) {
                /* the order string: classes in the order their dims appear */
                char text[64] = "";
                size_t used = 0;
                int seen = 0;
                for (int o = 0; o < n_dims; o++) {
                    const char *dn = json_string_value(json_array_get(dims, m.order[l][o]));
                    for (size_t c = 0; c < json_array_size(classes); c++) {
                        const char *cn = json_string_value(json_array_get(classes, c));
                        if (strchr(cn, dn[0]) && !(seen & (1 << c)) &&
                            (strlen(dn) == 1 && strlen(cn) >= 1)) {
                            seen |= 1 << c;
                            int w = snprintf(text + used, sizeof text - used, "%s%s",
                                             used ? ">" : "", cn);
                            used += (size_t)w;
                        }
                    }
                }
                int pi = 3 * n_dims + l, found = -1;
                for (int v = 0; v < space_param_num_values(sp, pi) && found < 0; v++) {
                    json_t *jv = space_param_value_json(sp, pi, v);
                    if (strcmp(json_string_value(jv), text) == 0)
                        found = v;
                    json_decref(jv);
                }
                assert_true(found >= 0);
                idx[pi] = found;
            }
            for (int l = 0; l < 2; l++)
                for (int t = 0; t < n_t; t++) {
                    int pi = 3 * n_dims + 3 + l * n_t + t;
                    idx[pi] = value_index(sp, pi, m.banks[l][t]);
                }
            config_id back;
            assert_int_equal(space_encode(sp, idx, &back), 0);
            assert_true(back == id);
        }
        space_free(sp);
        json_decref(kj);
    }
    accel_devices_free(devs, nd);
}

static void decode_refuses_other_spaces(void **state)
{
    (void)state;
    int nd;
    accel_device *devs = load_shipped(&nd);
    accel_problem a, b, c;
    parse_preset("cnn_layer", "resnet_conv3", &a);
    parse_preset("cnn_layer", "resnet_conv4", &b);
    parse_preset("mttkrp", "mttkrp_0", &c);
    space *sa = space_of(&a, &devs[0]);
    space *sc = space_of(&c, &devs[0]);
    accel_mapping m;
    kt_error err;
    assert_int_equal(accel_mapping_decode(&a, sa, 5, &m, &err), 0);
    assert_int_equal(accel_mapping_decode(&b, sa, 5, &m, &err), -1);
    assert_int_equal(err.code, KT_ERR_INTERNAL);
    assert_non_null(strstr(err.message, "not one of this problem's (dims)"));
    assert_int_equal(accel_mapping_decode(&c, sa, 5, &m, &err), -1);
    assert_non_null(strstr(err.message, "parameter count"));
    assert_int_equal(accel_mapping_decode(&a, sc, 5, &m, &err), -1);
    assert_int_equal(accel_mapping_decode(&a, sa, space_count(sa), &m, &err), -1);
    assert_non_null(strstr(err.message, "out of range"));
    space_free(sa);
    space_free(sc);
    accel_devices_free(devs, nd);
}

/* The training distribution: deterministic for a seed, shapes from the documented lists, spaces
 * that build on both devices (within SPACE_MAX_COUNT). */
static void sampled_problems_build(void **state)
{
    (void)state;
    int nd;
    accel_device *devs = load_shipped(&nd);
    for (int ki = 0; ki < accel_kernel_count(); ki++) {
        const accel_kernel *k = accel_kernel_at(ki);
        kt_rng r1, r2;
        kt_rng_seed(&r1, 99);
        kt_rng_seed(&r2, 99);
        int distinct = 0;
        accel_problem prev;
        memset(&prev, 0, sizeof prev);
        for (int i = 0; i < 400; i++) {
            accel_problem p, q;
            accel_problem_sample(k, &r1, &p);
            accel_problem_sample(k, &r2, &q);
            assert_memory_equal(&p, &q, sizeof p);
            distinct += memcmp(&p, &prev, sizeof p) != 0;
            prev = p;
            /* the canonical JSON parses back to the same problem */
            json_t *j = accel_problem_json(&p);
            accel_problem back;
            kt_error err;
            assert_int_equal(accel_problem_parse(k, j, &back, &err), 0);
            assert_memory_equal(&p, &back, sizeof p);
            json_decref(j);
            /* Every draw builds (a bound past signed 64-bit ids is redrawn, issue 26): all of
             * mttkrp's on both devices (about 3% of its draws were past it), the first of cnn's. */
            int mttkrp = strcmp(accel_kernel_name(k), "mttkrp") == 0;
            for (int d = 0; d < nd && (mttkrp || i < 12); d++) {
                if (!mttkrp && d != i % 2)
                    continue;
                space *sp = space_of(&p, &devs[d]);
                assert_true(space_count(sp) > 0);
                space_free(sp);
            }
        }
        assert_true(distinct > 300);
    }
    accel_devices_free(devs, nd);
}

/* Issue 26: mttkrp at I = J = K = L = 16384 passes the bound (below 2^64) but its mapping space on
 * accel:mindmap has more configurations than a signed 64-bit id holds: refused with a hint, where
 * it once built (a negative space_size and negative config ids in the database); the presets
 * still build (preset_spaces_have_the_expected_counts). */
static void a_space_past_signed_64_bit_ids_is_refused(void **state)
{
    (void)state;
    int nd;
    accel_device *devs = load_shipped(&nd);
    const accel_kernel *k = accel_kernel_find("mttkrp");
    json_t *j = json_pack("{s:i, s:i, s:i, s:i}", "I", 16384, "J", 16384, "K", 16384, "L", 16384);
    accel_problem p;
    kt_error err;
    kt_error_clear(&err);
    assert_int_equal(accel_problem_parse(k, j, &p, &err), 0);
    json_decref(j);
    for (int d = 0; d < nd; d++) {
        if (strcmp(devs[d].name, "mindmap") != 0)
            continue;
        kt_error_clear(&err);
        space *sp = accel_space_new(&p, &devs[d], &err);
        if (sp)
            fail_msg("mttkrp 16384^4 on accel:mindmap built a space of %llu configurations",
                     (unsigned long long)space_count(sp));
        assert_int_equal(err.code, KT_ERR_SPACE_TOO_LARGE);
        assert_non_null(strstr(err.message, "accel mttkrp on accel:mindmap"));
        assert_non_null(strstr(err.message, "2^63 - 1"));
        assert_non_null(strstr(err.hint, "signed 64-bit"));
    }
    accel_devices_free(devs, nd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kernels_are_listed),
        cmocka_unit_test(problems_parse),
        cmocka_unit_test(bad_problems_are_refused),
        cmocka_unit_test(preset_spaces_have_the_expected_counts),
        cmocka_unit_test(space_names_and_restrictions_are_the_contract),
        cmocka_unit_test(decode_round_trips),
        cmocka_unit_test(decode_refuses_other_spaces),
        cmocka_unit_test(sampled_problems_build),
        cmocka_unit_test(a_space_past_signed_64_bit_ids_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
