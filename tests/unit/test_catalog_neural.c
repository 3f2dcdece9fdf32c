/* Unit tests of a problem's "neural" member (catalog/catalog_neural.c, issue 14), on the shipped
 * kernels/conv2d_neural spec and networks/ presets, in a catalog over a handed cpu record: a plain
 * problem passes through untouched; a neural one fills the layer's arguments and is canonical
 * (allow in the spec's order, defaults, network_hash); every bad member is refused naming its
 * field; the target's kernel problem leaves the member out; catalog_neural_check judges a
 * configuration that changes the network (and only those) with a Fisher ratio, cached the second
 * time; catalog_neural_mark flags /v1/best answers, refusing a network change to a plain problem;
 * /v1/networks lists the presets' layers. Issue 26: the first request of the issue (an inline
 * network whose layers are each within limits, ~171 GiB of activations together) is refused as
 * bad_problem naming neural.network, the limit and the figure; a check whose stop check says stop
 * returns CATALOG_NEURAL_STOPPED. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog/catalog.h"
#include "catalog/catalog_neural.h"
#include "catalog/kernel_spec.h"

static const kspec_limits CPU_LIMITS = {{2, 32768, 1048576, 8388608, 256}};

typedef struct fixture {
    catalog *cat;
    const kernel_spec *k;
    char cache[64];
} fixture;

/* A catalog over kernels/ with a handed cpu record (no runner is started) and the presets. */
static int setup(void **state)
{
    static fixture f;
    char kernels[4096], networks[4096];
    kt_error err;
    snprintf(kernels, sizeof kernels, "%s/kernels", KT_SOURCE_DIR);
    snprintf(networks, sizeof networks, "%s/networks", KT_SOURCE_DIR);
    snprintf(f.cache, sizeof f.cache, "/tmp/kt-catalog-neural-XXXXXX");
    if (!mkdtemp(f.cache))
        fail_msg("mkdtemp");
    const char *kdirs[] = {kernels};
    catalog_options opt = {.n_dataset_dirs = 0, .networks_dir = networks};
    catalog_real_options real = {.kernel_dirs = kdirs,
                                 .n_kernel_dirs = 1,
                                 .runner = "/nonexistent/ktune-runner",
                                 .cache_dir = f.cache,
                                 .cpu_core = -1};
    catalog_device *d = calloc(1, sizeof *d);
    assert_non_null(d);
    snprintf(d->name, sizeof d->name, "cpu");
    d->kind = KSPEC_CPU;
    d->available = 1;
    d->klass = strdup("cpu:Handed_CPU:256");
    d->toolchain = strdup("gcc 12.2.0");
    d->description_text = strdup("{}");
    d->limits = CPU_LIMITS;
    f.cat = catalog_new_real(&opt, &real, d, 1, &err);
    if (!f.cat)
        fail_msg("catalog_new_real: %s", err.message);
    f.k = catalog_find_kernel(f.cat, "conv2d_neural");
    assert_non_null(f.k);
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    catalog_free(f->cat);
    rmdir(f->cache);
    return 0;
}

/* Parses problem text; returns 0 or -1 with err. */
static int parse(const fixture *f, const char *text, json_t **plain, catalog_neural **n,
                 json_t **canon, kt_error *err)
{
    json_error_t je;
    json_t *problem = json_loads(text, 0, &je);
    if (!problem)
        fail_msg("bad test JSON %s: %s", text, je.text);
    kt_error_clear(err);
    int rc = catalog_neural_parse(f->cat, f->k, KSPEC_CPU, problem, plain, n, canon, err);
    json_decref(problem);
    return rc;
}

static void plain_problem_passes(void **state)
{
    json_t *plain, *canon;
    catalog_neural *n;
    kt_error err;
    assert_int_equal(parse(*state, "{\"N\": 2, \"C\": 32}", &plain, &n, &canon, &err), 0);
    assert_null(n);
    assert_null(canon);
    assert_int_equal(json_integer_value(json_object_get(plain, "C")), 32);
    assert_null(json_object_get(plain, "neural"));
    json_decref(plain);
}

static void neural_member_is_canonical(void **state)
{
    json_t *plain, *canon;
    catalog_neural *n;
    kt_error err;
    int rc = parse(*state,
                   "{\"N\": 1, \"neural\": {\"allow\": [\"split_group\", \"group\"], \"network\": "
                   "\"vgg_fm\", \"layer\": \"conv4\"}}",
                   &plain, &n, &canon, &err);
    if (rc)
        fail_msg("%s", err.message);
    /* conv4 of vgg_fm: 32 -> 64 channels at 14x14, padded to 16x16, 3x3. */
    assert_int_equal(n->layer.C, 32);
    assert_int_equal(n->layer.K, 64);
    const char *args[] = {"C", "K", "H", "W", "R", "S"};
    const int want[] = {32, 64, 16, 16, 3, 3};
    for (int i = 0; i < 6; i++)
        assert_int_equal(json_integer_value(json_object_get(plain, args[i])), want[i]);
    assert_null(json_object_get(plain, "neural"));
    char *text = json_dumps(canon, JSON_COMPACT | JSON_SORT_KEYS);
    char expect[512];
    snprintf(expect, sizeof expect,
             "{\"allow\":[\"group\",\"split_group\"],\"data\":\"fashion-mnist\",\"layer\":"
             "\"conv4\",\"network\":\"vgg_fm\",\"network_hash\":\"%s\",\"threshold\":1.0}",
             nn_network_hash(n->net));
    assert_string_equal(text, expect);
    assert_int_equal(n->allow_mask, (1u << 0) | (1u << 4));
    free(text);
    json_decref(plain);
    json_decref(canon);
    catalog_neural_free(n);
}

static void bad_members_are_refused(void **state)
{
    static const struct {
        const char *neural, *needle;
    } cases[] = {
        {"\"group\"", "neural must be an object"},
        {"{\"allow\": [], \"network\": \"vgg_fm\", \"layer\": \"conv4\"}", "neural.allow"},
        {"{\"allow\": [\"prune\"], \"network\": \"vgg_fm\", \"layer\": \"conv4\"}",
         "neural.allow[0]"},
        {"{\"allow\": [\"group\"], \"network\": \"alexnet\", \"layer\": \"conv4\"}",
         "neural.network 'alexnet'"},
        {"{\"allow\": [\"group\"], \"network\": 7, \"layer\": \"conv4\"}", "neural.network"},
        {"{\"allow\": [\"group\"], \"network\": {\"name\": \"x\"}, \"layer\": \"conv4\"}",
         "neural.network"},
        {"{\"allow\": [\"group\"], \"network\": \"vgg_fm\", \"layer\": \"fc\"}", "neural.layer"},
        {"{\"allow\": [\"group\"], \"network\": \"vgg_fm\"}", "neural.layer"},
        {"{\"allow\": [\"group\"], \"network\": \"vgg_fm\", \"layer\": \"conv4\", \"data\": "
         "\"mnist\"}",
         "neural.data"},
        {"{\"allow\": [\"group\"], \"network\": \"vgg_fm\", \"layer\": \"conv4\", \"threshold\": "
         "11}",
         "neural.threshold"},
        {"{\"allow\": [\"group\"], \"network\": \"vgg_fm\", \"layer\": \"conv4\", \"seed\": 1}",
         "neural.seed"},
        {"{\"allow\": [\"group\"], \"network\": \"vgg_fm\", \"layer\": \"conv4\", "
         "\"network_hash\": \"0000000000000000\"}",
         "neural.network_hash"},
    };
    char text[1024];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *plain, *canon;
        catalog_neural *n;
        kt_error err;
        snprintf(text, sizeof text, "{\"neural\": %s}", cases[i].neural);
        assert_int_equal(parse(*state, text, &plain, &n, &canon, &err), -1);
        assert_int_equal(err.code, KT_ERR_BAD_PROBLEM);
        if (!strstr(err.message, cases[i].needle))
            fail_msg("case %zu: '%s' lacks '%s'", i, err.message, cases[i].needle);
        assert_null(plain);
    }
    /* A layer argument that is not the layer's. */
    json_t *plain, *canon;
    catalog_neural *n;
    kt_error err;
    assert_int_equal(parse(*state,
                           "{\"K\": 48, \"neural\": {\"allow\": [\"group\"], \"network\": "
                           "\"vgg_fm\", \"layer\": \"conv4\"}}",
                           &plain, &n, &canon, &err),
                     -1);
    assert_non_null(strstr(err.message, "problem argument K"));
}

static void bottleneck_needs_a_free_output(void **state)
{
    const fixture *f = *state;
    const nn_network *net = nn_presets_find(catalog_networks(f->cat), "resnet_fm");
    assert_non_null(net);
    int tested = 0;
    for (int i = 0; i < nn_network_conv_count(net); i++) {
        nn_conv_shape l;
        assert_int_equal(nn_network_conv(net, i, &l), 0);
        char text[512];
        snprintf(text, sizeof text,
                 "{\"neural\": {\"allow\": [\"bottleneck\"], \"network\": \"resnet_fm\", "
                 "\"layer\": \"%s\"}}",
                 l.name);
        json_t *plain = NULL, *canon = NULL;
        catalog_neural *n = NULL;
        kt_error err;
        int rc = parse(f, text, &plain, &n, &canon, &err);
        assert_int_equal(rc, l.bottleneck_ok ? 0 : -1);
        if (rc)
            assert_non_null(strstr(err.message, "cannot take a bottleneck"));
        tested += !l.bottleneck_ok;
        json_decref(plain);
        json_decref(canon);
        catalog_neural_free(n);
    }
    assert_true(tested > 0);
}

/* A target of vgg_fm's conv4 with group and bottleneck allowed, through catalog_resolve. */
static void make_target(const fixture *f, target *t)
{
    kt_error err;
    json_t *problem =
        json_loads("{\"N\": 1, \"neural\": {\"allow\": [\"bottleneck\", \"group\"], \"network\": "
                   "\"vgg_fm\", \"layer\": \"conv4\", \"data\": \"fashion-mnist-small\"}}",
                   0, NULL);
    if (catalog_resolve(f->cat, "conv2d_neural", "cpu", problem, t, &err) < 0)
        fail_msg("%s", err.message);
    json_decref(problem);
    assert_non_null(t->neural);
    assert_non_null(strstr(t->key.problem_key, "\"neural\":{\"allow\":[\"group\",\"bottleneck\"]"));
}

/* The first configuration of t whose neural values are (g, b, s). */
static config_id find_config(const target *t, int g, int b, int s)
{
    for (config_id id = 0; id < space_count(t->sp); id++) {
        json_t *c = space_config_json(t->sp, id);
        int hit = json_integer_value(json_object_get(c, "GROUPS")) == g &&
                  json_integer_value(json_object_get(c, "BOTTLENECK")) == b &&
                  json_integer_value(json_object_get(c, "SEQ")) == s;
        json_decref(c);
        if (hit)
            return id;
    }
    fail_msg("no configuration (%d, %d, %d)", g, b, s);
    return 0;
}

static void check_judges_changes_only(void **state)
{
    const fixture *f = *state;
    target t;
    kt_error err;
    kspec_problem p;
    make_target(f, &t);
    assert_int_equal(catalog_target_problem(f->k, &t, &p, &err), 0);
    assert_int_equal(p.values[1], 32); /* C */
    catalog_neural_verdict v;
    assert_int_equal(
        catalog_neural_check(f->cat, &t, find_config(&t, 1, 1, 0), NULL, NULL, &v, &err), 0);
    assert_int_equal(v.changes, 0);
    assert_string_equal(v.describe, "none");
    config_id g4 = find_config(&t, 4, 1, 0);
    if (catalog_neural_check(f->cat, &t, g4, NULL, NULL, &v, &err) < 0)
        fail_msg("%s", err.message);
    assert_int_equal(v.changes, 1);
    assert_string_equal(v.describe, "group");
    assert_true(v.v.ratio > 0 && v.v.fisher > 0 && v.v.fisher_original > 0);
    assert_true(v.v.legal == (v.v.ratio >= 1.0));
    assert_true(v.params < v.params_original); /* conv4's weights divided by 4 */
    assert_int_equal(v.v.cached, 0);
    catalog_neural_verdict again;
    assert_int_equal(catalog_neural_check(f->cat, &t, g4, NULL, NULL, &again, &err), 0);
    assert_int_equal(again.v.cached, 1);
    assert_true(again.v.ratio == v.v.ratio);
    assert_int_equal(
        catalog_neural_check(f->cat, &t, find_config(&t, 2, 2, 0), NULL, NULL, &v, &err), 0);
    assert_string_equal(v.describe, "group+bottleneck");
    target_release(&t);
}

/* Issue 26, break 1: conv t of 16 channels, then 15 x {"type":"conv","out":1024,"kernel":1,
 * "pad":7}, layer t, all five transformations. */
static void unbounded_network_is_refused(void **state)
{
    char text[4096];
    int used = snprintf(text, sizeof text,
                        "{\"N\": 1, \"neural\": {\"allow\": [\"group\", \"bottleneck\", "
                        "\"spatial_group\", \"unroll_group\", \"split_group\"], \"layer\": \"t\", "
                        "\"data\": \"fashion-mnist-small\", \"network\": {\"name\": \"grow\", "
                        "\"input\": [1, 28, 28], \"classes\": 10, \"layers\": [{\"type\": "
                        "\"conv\", \"name\": \"t\", \"out\": 16}");
    for (int i = 1; i <= 15; i++)
        used += snprintf(text + used, sizeof text - (size_t)used,
                         ", {\"type\": \"conv\", \"name\": \"c%d\", \"out\": 1024, \"kernel\": 1, "
                         "\"pad\": 7}",
                         i);
    snprintf(text + used, sizeof text - (size_t)used,
             ", {\"type\": \"global_avgpool\"}, {\"type\": \"flatten\"}, {\"type\": "
             "\"linear\", \"out\": 10}]}}}");
    json_t *plain, *canon;
    catalog_neural *n;
    kt_error err;
    assert_int_equal(parse(*state, text, &plain, &n, &canon, &err), -1);
    print_message("%s | %s\n", err.message, err.hint);
    assert_int_equal(err.code, KT_ERR_BAD_PROBLEM);
    assert_non_null(strstr(err.message, "neural.network: network \"grow\" is too large for a "
                                        "Fisher check: it needs 171 GiB of memory"));
    assert_non_null(strstr(err.message, "limit of 512 MiB"));
    assert_true(err.hint[0] != '\0');
    assert_null(plain);
    assert_null(n);
}

static int stop_now(void *arg)
{
    ++*(int *)arg;
    return 1;
}

static void check_stops_when_asked(void **state)
{
    const fixture *f = *state;
    target t;
    kt_error err;
    make_target(f, &t);
    catalog_neural_verdict v;
    int asked = 0;
    /* group 8: not judged by the other cases, so nothing cached answers it */
    assert_int_equal(
        catalog_neural_check(f->cat, &t, find_config(&t, 8, 1, 0), stop_now, &asked, &v, &err),
        CATALOG_NEURAL_STOPPED);
    assert_int_equal(asked, 1);
    assert_true(catalog_neural_check_timeout_s(f->cat) == CATALOG_NEURAL_CHECK_TIMEOUT_S);
    target_release(&t);
}

static void mark_flags_answers(void **state)
{
    const fixture *f = *state;
    target t;
    make_target(f, &t);
    json_t *answer = json_pack("{s:{s:i, s:i, s:i, s:i}}", "config", "TK", 6, "GROUPS", 1,
                               "BOTTLENECK", 1, "SEQ", 0);
    assert_int_equal(catalog_neural_mark(f->cat, &t, answer), 0);
    assert_true(json_is_false(json_object_get(answer, "changes_network")));
    assert_string_equal(json_string_value(json_object_get(answer, "transformation")), "none");
    json_object_set_new(json_object_get(answer, "config"), "GROUPS", json_integer(2));
    assert_int_equal(catalog_neural_mark(f->cat, &t, answer), 0); /* t opted in */
    assert_true(json_is_true(json_object_get(answer, "changes_network")));
    catalog_neural *n = t.neural;
    t.neural = NULL; /* the same answer to a plain problem: refused */
    assert_int_equal(catalog_neural_mark(f->cat, &t, answer), 1);
    t.neural = n;
    json_t *other = json_pack("{s:{s:i}}", "config", "MR", 6);
    target g = {.key = {.kernel = "gemm"}};
    assert_int_equal(catalog_neural_mark(f->cat, &g, other), 0); /* no neural section */
    assert_null(json_object_get(other, "changes_network"));
    json_decref(other);
    json_decref(answer);
    target_release(&t);
}

static void networks_json_lists_layers(void **state)
{
    const fixture *f = *state;
    json_t *arr = catalog_networks_json(f->cat);
    assert_int_equal(json_array_size(arr), 2);
    size_t i;
    json_t *n;
    json_array_foreach(arr, i, n)
    {
        assert_true(json_array_size(json_object_get(n, "convs")) >= 4);
        assert_int_equal(strlen(json_string_value(json_object_get(n, "hash"))), 16);
        assert_true(json_integer_value(json_object_get(n, "params")) > 0);
    }
    json_decref(arr);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plain_problem_passes),
        cmocka_unit_test(neural_member_is_canonical),
        cmocka_unit_test(bad_members_are_refused),
        cmocka_unit_test(bottleneck_needs_a_free_output),
        cmocka_unit_test(check_judges_changes_only),
        cmocka_unit_test(unbounded_network_is_refused),
        cmocka_unit_test(check_stops_when_asked),
        cmocka_unit_test(mark_flags_answers),
        cmocka_unit_test(networks_json_lists_layers),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
