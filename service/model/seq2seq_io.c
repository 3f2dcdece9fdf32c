/* model/seq2seq_io — seq2seq_save / seq2seq_load. Layout, every integer and double little-endian:
 *   "S2SQ" | u32 format (1) | u32 token_dim, n_params, hidden, epochs, batch | f64 lr, l2 |
 *   u64 seed, train_calls | u32 n_values[n_params] | u64 n_weights | f64 weights[n_weights]
 * with the weights in seq2seq_weight order (encoder GRU, decoder GRU, output layers). */
#include <math.h>
#include <string.h>

#include "core/codec.h"
#include "model/seq2seq_internal.h"

#define S2S_MAGIC  "S2SQ"
#define S2S_FORMAT 1u

int seq2seq_save(const seq2seq *m, strbuf *out, kt_error *err)
{
    size_t n_w = m->enc->n_params + m->dec->n_params + m->n_head;
    if (strbuf_reserve(out, 64 + 4 * (size_t)m->n_params + 8 * n_w) < 0)
        goto fail;
    strbuf_append(out, S2S_MAGIC, 4);
    codec_put_uint(out, S2S_FORMAT, 4);
    codec_put_uint(out, (uint64_t)m->token_dim, 4);
    codec_put_uint(out, (uint64_t)m->n_params, 4);
    codec_put_uint(out, (uint64_t)m->hyper.hidden, 4);
    codec_put_uint(out, (uint64_t)m->hyper.epochs, 4);
    codec_put_uint(out, (uint64_t)m->hyper.batch, 4);
    codec_put_f64(out, m->hyper.lr);
    codec_put_f64(out, m->hyper.l2);
    codec_put_uint(out, m->seed, 8);
    codec_put_uint(out, (uint64_t)m->train_calls, 8);
    for (int p = 0; p < m->n_params; p++)
        codec_put_uint(out, (uint64_t)m->n_values[p], 4);
    codec_put_uint(out, (uint64_t)n_w, 8);
    const double *blocks[3] = {m->enc->params, m->dec->params, m->head};
    size_t sizes[3] = {m->enc->n_params, m->dec->n_params, m->n_head};
    for (int b = 0; b < 3; b++)
        for (size_t i = 0; i < sizes[b]; i++)
            codec_put_f64(out, blocks[b][i]);
    if (out->failed)
        goto fail;
    return 0;
fail:
    kt_error_set(err, out->failed == STRBUF_TOO_LONG ? KT_ERR_BAD_REQUEST : KT_ERR_NO_MEMORY,
                 "the seq2seq model (%zu weights) does not fit in the output buffer", n_w);
    kt_error_hint(err, "give a buffer of at least %zu bytes",
                  64 + 4 * (size_t)m->n_params + 8 * n_w);
    return -1;
}

seq2seq *seq2seq_load(const unsigned char *buf, size_t len, size_t *pos, kt_error *err)
{
    seq2seq *m = NULL;
    int n_values[SEQ2SEQ_MAX_PARAMS];
    if (!buf || !pos || *pos > len) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "no seq2seq model to read");
        kt_error_hint(err, "give bytes written by seq2seq_save and a position inside them");
        goto fail;
    }
    codec_reader r = codec_reader_at(buf, len, *pos);
    if (len - r.pos < 4 || memcmp(buf + r.pos, S2S_MAGIC, 4) != 0) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "the buffer does not hold a seq2seq model");
        kt_error_hint(err, "give bytes written by seq2seq_save");
        goto fail;
    }
    r.pos += 4;
    uint64_t format = codec_get_uint(&r, 4);
    if (!r.bad && format != S2S_FORMAT) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "seq2seq model format %llu, this build reads %u",
                     (unsigned long long)format, S2S_FORMAT);
        kt_error_hint(err, "retrain the model");
        goto fail;
    }
    uint64_t token_dim = codec_get_uint(&r, 4), n_params = codec_get_uint(&r, 4);
    seq2seq_hyper h;
    h.hidden = (int)(codec_get_uint(&r, 4) & 0x7fffffff);
    h.epochs = (int)(codec_get_uint(&r, 4) & 0x7fffffff);
    h.batch = (int)(codec_get_uint(&r, 4) & 0x7fffffff);
    h.lr = codec_get_f64(&r);
    h.l2 = codec_get_f64(&r);
    uint64_t seed = codec_get_uint(&r, 8), train_calls = codec_get_uint(&r, 8);
    if (r.bad)
        goto truncated;
    if (n_params < 1 || n_params > SEQ2SEQ_MAX_PARAMS || token_dim > SEQ2SEQ_MAX_TOKEN_DIM ||
        h.hidden < 1 || h.epochs < 1 || h.batch < 1 || !(h.lr > 0) || !(h.l2 > 0) ||
        train_calls > (uint64_t)1 << 40) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "the seq2seq model's sizes are not valid");
        kt_error_hint(err, "the buffer is corrupted: retrain the model");
        goto fail;
    }
    for (uint64_t p = 0; p < n_params; p++)
        n_values[p] = (int)(codec_get_uint(&r, 4) & 0x7fffffff);
    uint64_t n_w = codec_get_uint(&r, 8);
    if (r.bad)
        goto truncated;
    /* The weights must all be in the buffer before anything is allocated for them: a corrupted
     * size cannot make the load allocate more than the buffer holds. */
    uint64_t total = 0;
    for (uint64_t p = 0; p < n_params; p++)
        total += (uint64_t)n_values[p];
    if (total <= SEQ2SEQ_MAX_TOTAL_VALUES && h.hidden <= SEQ2SEQ_MAX_HIDDEN &&
        n_w != seq2seq_weight_count((int)token_dim, h.hidden, (int)total)) {
        kt_error_set(
            err, KT_ERR_BAD_REQUEST, "the seq2seq model has %llu weights, its sizes say %zu",
            (unsigned long long)n_w, seq2seq_weight_count((int)token_dim, h.hidden, (int)total));
        kt_error_hint(err, "the buffer is corrupted: retrain the model");
        goto fail;
    }
    if ((r.len - r.pos) / 8 < n_w)
        goto truncated;
    kt_error inner;
    m = seq2seq_new((int)token_dim, (int)n_params, n_values, &h, seed, &inner);
    if (!m) {
        kt_error_set(err, inner.code == KT_ERR_NO_MEMORY ? KT_ERR_NO_MEMORY : KT_ERR_BAD_REQUEST,
                     "the seq2seq model is not valid: %s", inner.message);
        kt_error_hint(err, "the buffer is corrupted: retrain the model");
        goto fail;
    }
    m->train_calls = (long)train_calls;
    if (n_w != seq2seq_num_weights(m)) {
        kt_error_set(err, KT_ERR_BAD_REQUEST,
                     "the seq2seq model has %llu weights, its sizes say %zu",
                     (unsigned long long)n_w, seq2seq_num_weights(m));
        kt_error_hint(err, "the buffer is corrupted: retrain the model");
        goto fail;
    }
    for (uint64_t i = 0; i < n_w; i++) {
        double w = codec_get_f64(&r);
        if (!isfinite(w)) {
            kt_error_set(err, KT_ERR_BAD_REQUEST, "the seq2seq model has a non-finite weight");
            kt_error_hint(err, "the buffer is corrupted: retrain the model");
            goto fail;
        }
        *seq2seq_weight(m, (size_t)i) = w;
    }
    *pos = r.pos;
    return m;
truncated:
    kt_error_set(err, KT_ERR_BAD_REQUEST, "the seq2seq model is truncated");
    kt_error_hint(err, "give every byte seq2seq_save wrote");
fail:
    seq2seq_free(m);
    return NULL;
}
