/* model/surrogate_io — surrogate_save / surrogate_load.
 * Layout, integers and doubles little-endian:
 *   "KSUR" | u32 format (1) | u32 n_pf, n_params, n_out, n_hidden, activation |
 *   u32 hidden[n_hidden] | per parameter: u32 name_len, name, u32 numeric, u32 n_cats, per
 *   category u32 len, key | f64 in_mean[n_in], in_sd[n_in], out_mean[n_out], out_sd[n_out],
 *   obj_w[n_out], obj_sd | u64 n_weights | f64 weights[n_weights] | u64 FNV-1a of every byte before
 * it. */
#include "model/surrogate_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/codec.h"
#include "core/hash.h"

#define SUR_MAGIC  "KSUR"
#define SUR_FORMAT 1u

/* The checksum: FNV-1a (core/hash.h) from this offset, as format 1 has always written it. */
#define SUR_CHECKSUM_OFFSET 1469598103934665603ull

int surrogate_save(const surrogate *s, strbuf *out, kt_error *err)
{
    size_t start = out->len;
    size_t n_w = learn_mlp_num_params(s->mlp);
    if (strbuf_reserve(out, 64 + 16 * (size_t)s->n_in + 24 * (size_t)s->n_out + 8 * n_w) < 0)
        goto fail;
    strbuf_append(out, SUR_MAGIC, 4);
    codec_put_uint(out, SUR_FORMAT, 4);
    codec_put_uint(out, (uint64_t)s->n_pf, 4);
    codec_put_uint(out, (uint64_t)s->n_params, 4);
    codec_put_uint(out, (uint64_t)s->n_out, 4);
    codec_put_uint(out, (uint64_t)s->n_hidden, 4);
    codec_put_uint(out, (uint64_t)s->act, 4);
    for (int l = 0; l < s->n_hidden; l++)
        codec_put_uint(out, (uint64_t)s->hidden[l], 4);
    for (int j = 0; j < s->n_params; j++) {
        codec_put_text(out, s->params[j].name);
        codec_put_uint(out, (uint64_t)s->params[j].numeric, 4);
        codec_put_uint(out, (uint64_t)s->params[j].n_cats, 4);
        for (int c = 0; c < s->params[j].n_cats; c++)
            codec_put_text(out, s->params[j].cats[c]);
    }
    for (int i = 0; i < s->n_in; i++)
        codec_put_f64(out, s->in_mean[i]);
    for (int i = 0; i < s->n_in; i++)
        codec_put_f64(out, s->in_sd[i]);
    for (int k = 0; k < s->n_out; k++)
        codec_put_f64(out, s->out_mean[k]);
    for (int k = 0; k < s->n_out; k++)
        codec_put_f64(out, s->out_sd[k]);
    for (int k = 0; k < s->n_out; k++)
        codec_put_f64(out, s->obj_w[k]);
    codec_put_f64(out, s->obj_sd);
    codec_put_uint(out, (uint64_t)n_w, 8);
    const double *w = learn_mlp_params(s->mlp);
    for (size_t i = 0; i < n_w; i++)
        codec_put_f64(out, w[i]);
    if (out->failed)
        goto fail;
    codec_put_uint(out, kt_fnv1a(SUR_CHECKSUM_OFFSET, out->data + start, out->len - start), 8);
    if (out->failed)
        goto fail;
    return 0;
fail:
    kt_error_set(err, out->failed == STRBUF_TOO_LONG ? KT_ERR_BAD_REQUEST : KT_ERR_NO_MEMORY,
                 "the surrogate (%zu weights) does not fit in the output buffer", n_w);
    return -1;
}

static int read_params(codec_reader *r, surrogate *s)
{
    s->params = calloc((size_t)s->n_params, sizeof *s->params);
    if (!s->params)
        return -1;
    for (int j = 0; j < s->n_params && !r->bad; j++) {
        surrogate_param *par = &s->params[j];
        par->name = codec_get_text(r, SURROGATE_MAX_NAME);
        uint64_t numeric = codec_get_uint(r, 4), n_cats = codec_get_uint(r, 4);
        if (r->bad || numeric > 1 || n_cats > SURROGATE_MAX_CATEGORIES || (numeric && n_cats) ||
            (!numeric && !n_cats))
            return -1;
        par->numeric = (int)numeric;
        par->cats = calloc((size_t)n_cats, sizeof *par->cats);
        if (!par->cats)
            return -1;
        par->cap_cats = (int)n_cats;
        for (uint64_t c = 0; c < n_cats; c++) {
            par->cats[c] = codec_get_text(r, SURROGATE_MAX_KEY);
            if (!par->cats[c])
                return -1;
            par->n_cats++;
        }
    }
    return r->bad ? -1 : 0;
}

surrogate *surrogate_load(const void *bytes, size_t n, kt_error *err)
{
    surrogate *s = NULL;
    codec_reader r = codec_reader_at(bytes, n, 0);
    if (!bytes || n < 4 + 8 || memcmp(bytes, SUR_MAGIC, 4) != 0) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "the bytes do not hold a surrogate");
        kt_error_hint(err, "give bytes written by surrogate_save");
        goto fail;
    }
    r.pos = n - 8;
    uint64_t sum = codec_get_uint(&r, 8);
    if (kt_fnv1a(SUR_CHECKSUM_OFFSET, bytes, n - 8) != sum) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "the surrogate's checksum does not match");
        kt_error_hint(err, "the bytes are truncated or corrupted: retrain the surrogate");
        goto fail;
    }
    r.len = n - 8;
    r.pos = 4;
    s = calloc(1, sizeof *s);
    if (!s) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto fail;
    }
    uint64_t format = codec_get_uint(&r, 4), n_pf = codec_get_uint(&r, 4),
             n_params = codec_get_uint(&r, 4), n_out = codec_get_uint(&r, 4),
             n_hidden = codec_get_uint(&r, 4), act = codec_get_uint(&r, 4);
    if (r.bad || format != SUR_FORMAT || n_pf > SURROGATE_MAX_PROBLEM_FEATURES || n_params < 1 ||
        n_params > SURROGATE_MAX_PARAMS || n_out < 1 || n_out > SURROGATE_MAX_OUTPUTS ||
        n_hidden > SURROGATE_MAX_HIDDEN || act > LEARN_ACT_RELU)
        goto corrupt;
    s->n_pf = (int)n_pf;
    s->n_out = (int)n_out;
    s->n_hidden = (int)n_hidden;
    s->act = (learn_activation)act;
    for (int l = 0; l < s->n_hidden; l++) {
        uint64_t h = codec_get_uint(&r, 4);
        if (h < 1 || h > 4096)
            goto corrupt;
        s->hidden[l] = (int)h;
    }
    s->n_params = (int)n_params;
    if (read_params(&r, s) < 0)
        goto corrupt;
    /* Every double the sizes imply must be in the buffer before the network is allocated: sizes
     * cannot make the load allocate more than the bytes hold. */
    uint64_t width = 0, doubles = 0;
    for (int j = 0; j < s->n_params; j++)
        width += s->params[j].numeric ? 1 : (uint64_t)s->params[j].n_cats;
    uint64_t prev = (uint64_t)s->n_pf + width;
    doubles = 2 * prev + 3 * (uint64_t)s->n_out + 1;
    for (int l = 0; l <= s->n_hidden; l++) {
        uint64_t next = l < s->n_hidden ? (uint64_t)s->hidden[l] : (uint64_t)s->n_out;
        doubles += (prev + 1) * next;
        prev = next;
    }
    if ((r.len - r.pos) / 8 < doubles)
        goto corrupt;
    if (surrogate_finish(s, 0, err) < 0)
        goto fail;
    for (int i = 0; i < s->n_in; i++)
        s->in_mean[i] = codec_get_f64(&r);
    for (int i = 0; i < s->n_in; i++)
        s->in_sd[i] = codec_get_f64(&r);
    for (int k = 0; k < s->n_out; k++)
        s->out_mean[k] = codec_get_f64(&r);
    for (int k = 0; k < s->n_out; k++)
        s->out_sd[k] = codec_get_f64(&r);
    for (int k = 0; k < s->n_out; k++)
        s->obj_w[k] = codec_get_f64(&r);
    s->obj_sd = codec_get_f64(&r);
    uint64_t n_w = codec_get_uint(&r, 8);
    if (r.bad || n_w != learn_mlp_num_params(s->mlp) || (r.len - r.pos) / 8 != n_w ||
        (r.len - r.pos) % 8 != 0)
        goto corrupt;
    double *w = learn_mlp_params(s->mlp);
    for (uint64_t i = 0; i < n_w; i++)
        w[i] = codec_get_f64(&r);
    for (int i = 0; i < s->n_in; i++) {
        if (!isfinite(s->in_mean[i]) || !(s->in_sd[i] > 0) || !isfinite(s->in_sd[i]))
            goto corrupt;
    }
    for (int k = 0; k < s->n_out; k++) {
        if (!isfinite(s->out_mean[k]) || !(s->out_sd[k] > 0) || !isfinite(s->out_sd[k]) ||
            !isfinite(s->obj_w[k]))
            goto corrupt;
    }
    for (uint64_t i = 0; i < n_w; i++) {
        if (!isfinite(w[i]))
            goto corrupt;
    }
    if (!(s->obj_sd > 0) || !isfinite(s->obj_sd))
        goto corrupt;
    return s;
corrupt:
    kt_error_set(err, KT_ERR_BAD_REQUEST, "the surrogate's bytes are not valid");
    kt_error_hint(err, "the bytes are corrupted or from another format: retrain the surrogate");
fail:
    surrogate_free(s);
    return NULL;
}
