/* learn/attention — dot-product attention (Luong et al. 2015, "dot" score) of one query over a
 * sequence of states, forward and backward, on doubles with cblas. Stateless functions: the caller
 * owns every buffer, keeps alpha from the forward for the backward, and accumulates the gradients.
 *
 *     score_i = keys_i . q          (keys: S rows of H, row-major; q: H)
 *     alpha   = softmax(score)      (S weights summing to 1)
 *     ctx     = sum_i alpha_i keys_i (H)
 *
 * Used by the seq2seq model (model/seq2seq.c): the keys are the encoder's hidden states, the query
 * the decoder's. Thread-safe (no state). */
#ifndef KT_LEARN_ATTENTION_H
#define KT_LEARN_ATTENTION_H

/* alpha (S values) and ctx (H values) from keys and q; S >= 1, H >= 1. */
void learn_attention_forward(const double *keys, int S, int H, const double *q, double *alpha,
                             double *ctx);
/* Given d_ctx (H values, the loss's gradient with respect to ctx) and the alpha of the forward,
 * ADDS the gradient with respect to the keys to d_keys (S rows of H) and with respect to q to d_q
 * (H), either of which may be NULL. scratch: S values. */
void learn_attention_backward(const double *keys, int S, int H, const double *q,
                              const double *alpha, const double *d_ctx, double *d_keys, double *d_q,
                              double *scratch);

#endif
