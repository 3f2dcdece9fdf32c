/* Unit tests of neural/nn_network and nn_presets: the shipped presets parse with the documented
 * conv shapes; parameter counts with and without transformations; where a bottleneck may apply
 * (residual adds); shape errors; refused descriptions name the layer; the hash ignores defaults
 * spelled out and changes with the network. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "neural/nn_network.h"

static nn_network *parse_text(const char *text, kt_error *err)
{
    json_error_t je;
    json_t *doc = json_loads(text, 0, &je);
    assert_non_null(doc);
    nn_network *n = nn_network_parse(doc, err);
    json_decref(doc);
    return n;
}

static void presets_load(void **state)
{
    (void)state;
    kt_error err;
    nn_presets *p = nn_presets_load(KT_SOURCE_DIR "/networks", &err);
    assert_non_null(p);
    assert_int_equal(nn_presets_count(p), 2);
    const nn_network *vgg = nn_presets_find(p, "vgg_fm");
    const nn_network *res = nn_presets_find(p, "resnet_fm");
    assert_non_null(vgg);
    assert_non_null(res);
    assert_null(nn_presets_find(p, "alexnet"));
    assert_int_equal(nn_network_conv_count(vgg), 6);
    assert_int_equal(nn_network_conv_count(res), 7);
    nn_conv_shape cs;
    assert_int_equal(nn_network_conv(vgg, 3, &cs), 0);
    assert_string_equal(cs.name, "conv4");
    assert_int_equal(cs.C, 32);
    assert_int_equal(cs.K, 64);
    assert_int_equal(cs.H, 16);
    assert_int_equal(cs.R, 3);
    assert_int_equal(cs.bottleneck_ok, 1);
    assert_int_equal(nn_network_conv(vgg, 6, &cs), -1);
    /* resnet: block convs at 14x14 (16 padded); conv1 of a block may bottleneck, conv2 not; nor the
     * stem nor conv2 (their outputs feed a block's skip). */
    int i = nn_network_find_conv(res, "res1_conv1");
    assert_int_equal(i, 1);
    nn_network_conv(res, i, &cs);
    assert_int_equal(cs.H, 16);
    assert_int_equal(cs.in_residual, 1);
    assert_int_equal(cs.bottleneck_ok, 1);
    nn_network_conv(res, nn_network_find_conv(res, "res1_conv2"), &cs);
    assert_int_equal(cs.bottleneck_ok, 0);
    nn_network_conv(res, nn_network_find_conv(res, "stem"), &cs);
    assert_int_equal(cs.bottleneck_ok, 0);
    assert_int_equal(cs.in_residual, 0);
    nn_network_conv(res, nn_network_find_conv(res, "conv3"), &cs);
    assert_int_equal(cs.bottleneck_ok, 1);
    assert_int_equal(cs.C, 64);
    assert_int_equal(cs.H, 9);
    assert_int_equal(nn_network_find_conv(res, "nope"), -1);
    assert_int_equal(strlen(nn_network_hash(vgg)), 16);
    assert_string_not_equal(nn_network_hash(vgg), nn_network_hash(res));
    nn_presets_free(p);
    assert_null(nn_presets_load(KT_SOURCE_DIR "/no-such-dir", &err));
    assert_int_equal(err.code, KT_ERR_CONFIG);
}

static const char *SMALL =
    "{\"name\": \"t\", \"input\": [2, 8, 8], \"classes\": 3, \"layers\": ["
    "{\"type\": \"conv\", \"name\": \"a\", \"out\": 16},"
    "{\"type\": \"batchnorm\"}, {\"type\": \"relu\"},"
    "{\"type\": \"conv\", \"name\": \"b\", \"out\": 32, \"kernel\": 3, \"pad\": 1},"
    "{\"type\": \"batchnorm\"}, {\"type\": \"relu\"}, {\"type\": \"avgpool\"},"
    "{\"type\": \"residual\", \"layers\": [{\"type\": \"conv\", \"name\": \"c\", \"out\": 32}]},"
    "{\"type\": \"maxpool\", \"size\": 2}, {\"type\": \"flatten\"},"
    "{\"type\": \"linear\", \"out\": 3}]}";

static void params_and_transforms(void **state)
{
    (void)state;
    kt_error err;
    nn_network *n = parse_text(SMALL, &err);
    assert_non_null(n);
    /* a: 2*16*9; bn 32; b: 16*32*9; bn 64; c: 32*32*9; linear: (32*2*2)*3 + 3 */
    long long base = 2 * 16 * 9 + 32 + 16 * 32 * 9 + 64 + 32 * 32 * 9 + 128 * 3 + 3;
    assert_int_equal(nn_network_params(n, NULL), base);
    nn_transform t[3] = {nn_transform_identity(), {4, 1, 0}, nn_transform_identity()};
    assert_int_equal(nn_network_transforms_valid(n, t, &err), 1);
    assert_int_equal(nn_network_params(n, t), base - 16 * 32 * 9 + 4 * 32 * 9);
    /* bottleneck on b: its output meets the residual block -> refused */
    t[1] = (nn_transform){1, 2, 0};
    assert_int_equal(nn_network_transforms_valid(n, t, &err), 0);
    assert_int_equal(err.code, KT_ERR_CONFIG);
    assert_non_null(strstr(err.message, "\"b\""));
    assert_int_equal(nn_network_params(n, t), -1);
    /* bottleneck on a: b sees 8 input channels */
    t[1] = nn_transform_identity();
    t[0] = (nn_transform){1, 2, 0};
    assert_int_equal(nn_network_transforms_valid(n, t, &err), 1);
    assert_int_equal(nn_network_params(n, t), base - 2 * 8 * 9 - 16 - 8 * 32 * 9);
    /* groups 16 on a: C = 2 not divisible */
    t[0] = (nn_transform){16, 1, 0};
    assert_int_equal(nn_network_transforms_valid(n, t, &err), 0);
    assert_non_null(strstr(err.message, "conv \"a\""));
    /* shapes */
    nn_shape in[NN_MAX_LAYERS], out[NN_MAX_LAYERS];
    assert_int_equal(nn_network_shapes(n, NULL, in, out, &err), 0);
    assert_int_equal(out[6].h, 4);    /* avgpool */
    assert_int_equal(out[7].c, 32);   /* residual */
    assert_int_equal(out[10].c, 128); /* flatten */
    assert_int_equal(out[11].c, 3);   /* linear */
    assert_int_equal(out[11].flat, 1);
    assert_int_equal(nn_network_layer(n, 7)->body, 1);
    assert_int_equal(nn_network_layer_count(n), 12);
    assert_null(nn_network_layer(n, 12));
    nn_network_free(n);
}

static void refused(void **state)
{
    (void)state;
    static const struct {
        const char *text, *needle;
    } cases[] = {
        {"[]", "object"},
        {"{\"name\": \"x\", \"input\": [1, 8], \"classes\": 2, \"layers\": []}", "input"},
        {"{\"name\": \"x\", \"input\": [1, 8, 8], \"classes\": 2, \"layers\": [{\"type\": "
         "\"conv\", \"out\": 4}]}",
         "layers[0]"},
        {"{\"name\": \"x\", \"input\": [1, 8, 8], \"classes\": 2, \"layers\": [{\"type\": "
         "\"conv\", \"name\": \"a\", \"out\": 4}, {\"type\": \"conv\", \"name\": \"a\", \"out\": "
         "4}]}",
         "twice"},
        {"{\"name\": \"x\", \"input\": [1, 8, 8], \"classes\": 2, \"layers\": [{\"type\": "
         "\"conv\", \"name\": \"a\", \"out\": 4, \"stride\": 2}]}",
         "stride"},
        {"{\"name\": \"x\", \"input\": [1, 8, 8], \"classes\": 2, \"layers\": [{\"type\": "
         "\"conv\", \"name\": \"a\", \"out\": 4}, {\"type\": \"linear\", \"out\": 2}]}",
         "flatten"},
        {"{\"name\": \"x\", \"input\": [1, 8, 8], \"classes\": 2, \"layers\": [{\"type\": "
         "\"conv\", \"name\": \"a\", \"out\": 4}, {\"type\": \"flatten\"}, {\"type\": \"linear\", "
         "\"out\": 3}]}",
         "2 outputs"},
        {"{\"name\": \"x\", \"input\": [1, 8, 8], \"classes\": 2, \"layers\": [{\"type\": "
         "\"residual\", \"layers\": [{\"type\": \"conv\", \"name\": \"a\", \"out\": 4}]}]}",
         "differs"},
        {"{\"name\": \"x\", \"input\": [1, 8, 8], \"classes\": 2, \"layers\": [{\"type\": "
         "\"softmax\"}]}",
         "type"},
        {"{\"name\": \"x\", \"input\": [1, 8, 8], \"classes\": 2, \"layers\": [{\"type\": "
         "\"flatten\"}, {\"type\": \"linear\", \"out\": 2}]}",
         "no conv"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kt_error err;
        kt_error_clear(&err);
        nn_network *n = parse_text(cases[i].text, &err);
        if (n || err.code != KT_ERR_BAD_REQUEST || !strstr(err.message, cases[i].needle))
            fail_msg("case %zu: %s", i, err.message);
    }
}

static void hash_canonical(void **state)
{
    (void)state;
    kt_error err;
    nn_network *a =
        parse_text("{\"name\": \"h\", \"input\": [1, 6, 6], \"classes\": 2, \"layers\": "
                   "[{\"type\": \"conv\", \"name\": \"a\", \"out\": 4}, {\"type\": "
                   "\"flatten\"}, {\"type\": \"linear\", \"out\": 2}]}",
                   &err);
    nn_network *b = parse_text("{\"layers\": [{\"out\": 4, \"pad\": 1, \"kernel\": 3, \"type\": "
                               "\"conv\", \"name\": \"a\"}, {\"type\": \"flatten\"}, {\"type\": "
                               "\"linear\", \"out\": 2}], \"name\": \"h\", \"input\": [1, 6, 6], "
                               "\"classes\": 2}",
                               &err);
    nn_network *c =
        parse_text("{\"name\": \"h\", \"input\": [1, 6, 6], \"classes\": 2, \"layers\": "
                   "[{\"type\": \"conv\", \"name\": \"a\", \"out\": 8}, {\"type\": "
                   "\"flatten\"}, {\"type\": \"linear\", \"out\": 2}]}",
                   &err);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    assert_string_equal(nn_network_hash(a), nn_network_hash(b));
    assert_string_not_equal(nn_network_hash(a), nn_network_hash(c));
    json_t *j = nn_network_json(a);
    nn_network *d = nn_network_parse(j, &err);
    assert_non_null(d);
    assert_string_equal(nn_network_hash(a), nn_network_hash(d));
    json_decref(j);
    nn_network_free(a);
    nn_network_free(b);
    nn_network_free(c);
    nn_network_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(presets_load),
        cmocka_unit_test(params_and_transforms),
        cmocka_unit_test(refused),
        cmocka_unit_test(hash_canonical),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
