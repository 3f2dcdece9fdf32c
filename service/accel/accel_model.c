/* accel/accel_model — the analytical cost model (accel_model.h); the rules, and why the lower bound
 * holds, are in service/accel/README.md ("The cost model"). Summary:
 *
 * The loop nest, outermost first: the DRAM loops (factors [3], order_DRAM), the L2 loops ([2],
 * order_L2), the spatial loops ([1], one PE each) and the L1 loops ([0], order_L1). Tiles: L1
 * extents f0, the PE array's union f0*f1, L2 f0*f1*f2; a tile's footprint is the product of its
 * tensor's extents (a sliding window: (e_p - 1) * stride + e_r).
 *  - fills F(t) of a level's tile: the product of the factors of the loops above it, outermost
 *    first, up to the innermost loop relevant to t with a factor > 1 (the loops after it leave
 *    the tile unchanged: reuse). F2 over the DRAM loops, F1 over the DRAM then the L2 loops.
 *  - an input tensor: DRAM reads F2*fp2; L2 writes F2*fp2 and reads F1*fpU (one read multicast
 *    to every PE that needs it); L1 writes F1*fp1*U (U PEs used) and MAC operand reads M/R1, R1
 *    the product of the trailing L1 loops irrelevant to t (the operand stays in a register).
 *  - the output: a tile's first visit starts from zero (no read), every later one reads the
 *    partial sums back: DRAM writes F2*fp2, reads (F2 - D2)*fp2 with D2 the distinct L2 tiles;
 *    L2 the same from the DRAM side plus, from the PEs' side, writes F1*fpU (PEs sharing an output
 *    reduce in the network) and reads (F1 - D1)*fpU; L1 fills and drains likewise per PE plus
 *    M/R1 read-modify-writes (two accesses; R1 accumulations stay in a register).
 * Energy = accesses x access_pj per level, + M x (operands - 1) x mac_pj. Cycles = the maximum of
 * M/U (one iteration per PE per cycle) and each level's accesses over its bandwidth (L1 per PE). */
#include "accel/accel_model.h"
#include "accel/accel_kernel_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef struct loop {
    int dim;
    long long f;
} loop;

static const char *const level_names[ACCEL_LEVELS] = {"L1", "L2", "DRAM"};

/* Marks out invalid with the reason; out NULL: a validity check only (no formatting: the check is
 * run millions of times where most samples are invalid). Returns 0. */
static int invalid(accel_stats *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int invalid(accel_stats *out, const char *fmt, ...)
{
    if (!out)
        return 0;
    va_list ap;
    memset(out, 0, sizeof *out);
    va_start(ap, fmt);
    vsnprintf(out->reason, sizeof out->reason, fmt, ap);
    va_end(ap);
    out->valid = 0;
    return 0;
}

/* Product of the factors from the outermost loop up to the innermost one relevant to rel with a
 * factor > 1 (1 when there is none). */
static double trimmed(const loop *seq, int n, unsigned rel)
{
    int last = -1;
    for (int i = 0; i < n; i++)
        if (seq[i].f > 1 && (rel & (1u << seq[i].dim)))
            last = i;
    double prod = 1.0;
    for (int i = 0; i <= last; i++)
        prod *= (double)seq[i].f;
    return prod;
}

static double footprint(const accel_tensor_def *td, const long long *e, long long stride)
{
    unsigned rel = td->rel;
    double fp = 1.0;
    for (int i = 0; i < td->n_halo; i++) {
        int a = td->halo[i][0], b = td->halo[i][1];
        fp *= (double)((e[a] - 1) * stride + e[b]);
        rel &= ~((1u << a) | (1u << b));
    }
    for (int d = 0; rel; d++, rel >>= 1)
        if (rel & 1u)
            fp *= (double)e[d];
    return fp;
}

/* Product over the dims relevant to rel of e[d]. */
static double rel_product(unsigned rel, const long long *e, int n_dims)
{
    double prod = 1.0;
    for (int d = 0; d < n_dims; d++)
        if (rel & (1u << d))
            prod *= (double)e[d];
    return prod;
}

static int check_mapping(const accel_device *d, const accel_problem *p, const accel_mapping *m,
                         accel_stats *out)
{
    const accel_kernel *k = p->kernel;
    for (int i = 0; i < k->n_dims; i++) {
        const long long *f = m->factor[i];
        if (f[0] < 1 || f[1] < 1 || f[2] < 1 || f[3] < 1 || f[0] * f[1] * f[2] * f[3] != p->dim[i])
            return invalid(out,
                           "factors of %s: %lld x %lld x %lld x %lld, not a factorisation of %lld",
                           k->dims[i], f[0], f[1], f[2], f[3], p->dim[i]);
    }
    for (int l = 0; l < ACCEL_LEVELS; l++) {
        unsigned seen = 0;
        for (int i = 0; i < k->n_dims; i++) {
            int dim = m->order[l][i];
            if (dim < 0 || dim >= k->n_dims || (seen & (1u << dim)))
                return invalid(out, "loop order at %s is not a permutation of the dims",
                               level_names[l]);
            seen |= 1u << dim;
        }
    }
    for (int l = 0; l < 2; l++) {
        int sum = 0, banks = l == 0 ? d->l1_banks : d->l2_banks;
        for (int t = 0; t < k->n_tensors; t++) {
            if (m->banks[l][t] < 1)
                return invalid(out, "%s banks of %s: %d, at least 1", level_names[l],
                               k->tensors[t].name, m->banks[l][t]);
            sum += m->banks[l][t];
        }
        if (sum > banks)
            return invalid(out, "%s banks: %d allocated, the device has %d", level_names[l], sum,
                           banks);
    }
    return 1;
}

/* A mapping's tile extents per dimension (L1, the PE array's unrolled tile, L2), the L2-level and
 * the PE-array-level loop counts, the PEs used, the MACs, and each tensor's footprint per level. */
typedef struct extents {
    long long e1[ACCEL_MAX_DIMS], eu[ACCEL_MAX_DIMS], e2[ACCEL_MAX_DIMS];
    long long f2[ACCEL_MAX_DIMS], f23[ACCEL_MAX_DIMS];
    double pes_used, macs;
    double fp1[ACCEL_MAX_TENSORS], fpu[ACCEL_MAX_TENSORS], fp2[ACCEL_MAX_TENSORS];
} extents;

static void mapping_extents(const accel_problem *p, const accel_mapping *m, extents *x)
{
    const accel_kernel *k = p->kernel;
    x->pes_used = 1.0;
    x->macs = 1.0;
    for (int i = 0; i < k->n_dims; i++) {
        const long long *f = m->factor[i];
        x->e1[i] = f[0];
        x->eu[i] = f[0] * f[1];
        x->e2[i] = x->eu[i] * f[2];
        x->f2[i] = f[3];
        x->f23[i] = f[2] * f[3];
        x->pes_used *= (double)f[1];
        x->macs *= (double)p->dim[i];
    }
    const long long stride = accel_problem_stride(p);
    for (int t = 0; t < k->n_tensors; t++) {
        x->fp1[t] = footprint(&k->tensors[t], x->e1, stride);
        x->fpu[t] = footprint(&k->tensors[t], x->eu, stride);
        x->fp2[t] = footprint(&k->tensors[t], x->e2, stride);
    }
}

/* 1 when the PEs and every tile fit the device; 0 (out's reason, when out) otherwise. */
static int extents_fit(const accel_device *d, const accel_problem *p, const accel_mapping *m,
                       const extents *x, accel_stats *out)
{
    const accel_kernel *k = p->kernel;
    if (x->pes_used > d->pes) {
        if (!out)
            return 0;
        char buf[96];
        size_t used = 0;
        buf[0] = '\0';
        for (int i = 0; i < k->n_dims && used < sizeof buf; i++)
            if (m->factor[i][1] > 1) {
                int w = snprintf(buf + used, sizeof buf - used, "%s%s %lld", used ? " x " : "",
                                 k->dims[i], m->factor[i][1]);
                used += w > 0 ? (size_t)w : 0;
            }
        return invalid(out, "PEs: %.0f used (%s), the device has %d", x->pes_used, buf, d->pes);
    }
    for (int t = 0; t < k->n_tensors; t++) {
        const accel_tensor_def *td = &k->tensors[t];
        for (int l = 0; l < 2; l++) {
            double words = l == 0 ? x->fp1[t] : x->fp2[t];
            long long bytes = l == 0 ? d->l1_bytes : d->l2_bytes;
            int banks = l == 0 ? d->l1_banks : d->l2_banks;
            double cap = (double)bytes * m->banks[l][t] / banks;
            if (words * d->word_bytes > cap)
                return invalid(out,
                               "%s tile of %s: %.0f words (%.0f bytes) > its %d of %d banks "
                               "(%.0f bytes)",
                               level_names[l], td->name, words, words * d->word_bytes,
                               m->banks[l][t], banks, cap);
        }
    }
    return 1;
}

/* The costs of a mapping that fits: accesses and energy per level and tensor, cycles, EDP. */
static void mapping_costs(const accel_device *d, const accel_problem *p, const accel_mapping *m,
                          const extents *x, accel_stats *out)
{
    const accel_kernel *k = p->kernel;
    const int nd = k->n_dims;
    loop seq[2 * ACCEL_MAX_DIMS], inner[ACCEL_MAX_DIMS];
    for (int i = 0; i < nd; i++) {
        int a = m->order[2][i], b = m->order[1][i], c = m->order[0][i];
        seq[i] = (loop){a, m->factor[a][3]};
        seq[nd + i] = (loop){b, m->factor[b][2]};
        inner[i] = (loop){c, m->factor[c][0]};
    }
    double l1_all = 1.0;
    for (int i = 0; i < nd; i++)
        l1_all *= (double)inner[i].f;
    memset(out, 0, sizeof *out);
    out->valid = 1;
    double per_level[ACCEL_LEVELS] = {0.0, 0.0, 0.0};
    for (int t = 0; t < k->n_tensors; t++) {
        const accel_tensor_def *td = &k->tensors[t];
        double F2 = trimmed(seq, nd, td->rel);
        double F1 = trimmed(seq, 2 * nd, td->rel);
        double uses = x->macs / (l1_all / trimmed(inner, nd, td->rel)); /* M / R1 */
        double acc[ACCEL_LEVELS];
        if (!td->output) {
            acc[2] = F2 * x->fp2[t];
            acc[1] = F2 * x->fp2[t] + F1 * x->fpu[t];
            acc[0] = F1 * x->fp1[t] * x->pes_used + uses;
        } else {
            double D2 = rel_product(td->rel, x->f2, nd);  /* distinct L2 tiles */
            double D1 = rel_product(td->rel, x->f23, nd); /* distinct PE-array tiles */
            acc[2] = (2.0 * F2 - D2) * x->fp2[t];
            acc[1] = (2.0 * F2 - D2) * x->fp2[t] + (2.0 * F1 - D1) * x->fpu[t];
            acc[0] = (2.0 * F1 - D1) * x->fp1[t] * x->pes_used + 2.0 * uses;
        }
        for (int l = 0; l < ACCEL_LEVELS; l++) {
            out->accesses[l][t] = acc[l];
            out->energy_pj[l][t] = acc[l] * d->access_pj[l];
            out->energy_pj_total += out->energy_pj[l][t];
            per_level[l] += acc[l];
        }
    }
    out->mac_pj = x->macs * (k->operands - 1) * d->mac_pj;
    out->energy_pj_total += out->mac_pj;
    double cycles = x->macs / x->pes_used;
    double c1 = per_level[0] / x->pes_used / d->words_per_cycle[0];
    double c2 = per_level[1] / d->words_per_cycle[1];
    double c3 = per_level[2] / d->words_per_cycle[2];
    cycles = fmax(cycles, fmax(c1, fmax(c2, c3)));
    out->cycles = cycles;
    out->utilisation = x->pes_used / d->pes;
    out->edp = out->energy_pj_total * 1e-12 * (cycles / (d->clock_ghz * 1e9));
}

/* The model; out NULL: only the validity (1 / 0). */
static int evaluate(const accel_device *d, const accel_problem *p, const accel_mapping *m,
                    accel_stats *out)
{
    extents x;
    if (!check_mapping(d, p, m, out))
        return 0;
    mapping_extents(p, m, &x);
    if (!extents_fit(d, p, m, &x, out))
        return 0;
    if (out)
        mapping_costs(d, p, m, &x, out);
    return 1;
}

int accel_evaluate(const accel_device *d, const accel_problem *p, const accel_mapping *m,
                   accel_stats *out)
{
    return evaluate(d, p, m, out);
}

int accel_mapping_valid(const accel_device *d, const accel_problem *p, const accel_mapping *m)
{
    return evaluate(d, p, m, NULL);
}

/* The words of tensor t every mapping touches at least once per level: its index space, a sliding
 * window counting (P - 1) * min(stride, R) + R rows (windows further apart than their size skip
 * the rows between them, and no tiling reads fewer). */
static double tensor_words(const accel_problem *p, const accel_tensor_def *td)
{
    long long e[ACCEL_MAX_DIMS];
    long long stride = accel_problem_stride(p);
    for (int i = 0; i < p->kernel->n_dims; i++)
        e[i] = p->dim[i];
    double words = footprint(td, e, 1);
    for (int i = 0; i < td->n_halo; i++) {
        long long a = e[td->halo[i][0]], b = e[td->halo[i][1]];
        long long s = stride < b ? stride : b;
        words = words / (double)((a - 1) + b) * (double)((a - 1) * s + b);
    }
    return words;
}

/* Why no valid mapping beats it (details in the README): per level and tensor the model counts
 * at least one access per word of the tensor (fills cover every tile, F >= the distinct tiles;
 * operand reads M/R1 >= the product of the relevant dims >= the words), the MAC energy is the
 * same for every mapping, and cycles >= M/U >= M/pes. */
void accel_lower_bound(const accel_device *d, const accel_problem *p, accel_stats *out)
{
    const accel_kernel *k = p->kernel;
    memset(out, 0, sizeof *out);
    out->valid = 1;
    double macs = 1.0;
    for (int i = 0; i < k->n_dims; i++)
        macs *= (double)p->dim[i];
    for (int t = 0; t < k->n_tensors; t++) {
        double w = tensor_words(p, &k->tensors[t]);
        for (int l = 0; l < ACCEL_LEVELS; l++) {
            out->accesses[l][t] = w;
            out->energy_pj[l][t] = w * d->access_pj[l];
            out->energy_pj_total += out->energy_pj[l][t];
        }
    }
    out->mac_pj = macs * (k->operands - 1) * d->mac_pj;
    out->energy_pj_total += out->mac_pj;
    out->cycles = macs / d->pes;
    out->utilisation = 1.0;
    out->edp = out->energy_pj_total * 1e-12 * (out->cycles / (d->clock_ghz * 1e9));
}

static int meta_count(const accel_problem *p)
{
    return ACCEL_LEVELS * p->kernel->n_tensors + 3;
}

int accel_meta(const accel_problem *p, const accel_stats *s, const accel_stats *lb, double *out,
               int cap)
{
    const accel_kernel *k = p->kernel;
    double v[ACCEL_LEVELS * ACCEL_MAX_TENSORS + 3];
    int n = 0;
    for (int l = 0; l < ACCEL_LEVELS; l++)
        for (int t = 0; t < k->n_tensors; t++)
            v[n++] = log(s->energy_pj[l][t] / lb->energy_pj_total);
    v[n++] = log(s->energy_pj_total / lb->energy_pj_total);
    v[n++] = s->utilisation;
    v[n++] = log(s->cycles / lb->cycles);
    int w = n < cap ? n : cap;
    for (int i = 0; i < w; i++)
        out[i] = v[i];
    return w;
}

int accel_meta_objective(const accel_problem *p, double *w, int cap)
{
    int n = meta_count(p);
    int m = n < cap ? n : cap;
    for (int i = 0; i < m; i++)
        w[i] = (i == n - 3 || i == n - 1) ? 1.0 : 0.0;
    return m;
}

const char *accel_meta_name(const accel_problem *p, int i)
{
    static const char *const cnn[] = {"energy_L1_I",   "energy_L1_W",   "energy_L1_O",
                                      "energy_L2_I",   "energy_L2_W",   "energy_L2_O",
                                      "energy_DRAM_I", "energy_DRAM_W", "energy_DRAM_O"};
    static const char *const mtt[] = {"energy_L1_A",   "energy_L1_B",   "energy_L1_C",
                                      "energy_L1_O",   "energy_L2_A",   "energy_L2_B",
                                      "energy_L2_C",   "energy_L2_O",   "energy_DRAM_A",
                                      "energy_DRAM_B", "energy_DRAM_C", "energy_DRAM_O"};
    static const char *const tail[] = {"energy_total", "utilisation", "cycles"};
    const accel_kernel *k = p->kernel;
    int n = ACCEL_LEVELS * k->n_tensors;
    if (i < 0 || i >= n + 3)
        return NULL;
    if (i >= n)
        return tail[i - n];
    if (k->n_tensors == 3 && strcmp(k->tensors[0].name, "I") == 0)
        return cnn[i];
    if (k->n_tensors == 4 && strcmp(k->tensors[0].name, "A") == 0)
        return mtt[i];
    return NULL;
}

json_t *accel_stats_json(const accel_problem *p, const accel_stats *s, const accel_stats *lb)
{
    const accel_kernel *k = p->kernel;
    if (!s->valid)
        return json_pack("{s:b, s:s}", "valid", 0, "reason", s->reason);
    json_t *energy = json_object();
    json_t *acc = json_object();
    for (int l = 0; l < ACCEL_LEVELS; l++) {
        json_t *e = json_object();
        json_t *a = json_object();
        for (int t = 0; t < k->n_tensors; t++) {
            json_object_set_new(e, k->tensors[t].name, json_real(s->energy_pj[l][t]));
            json_object_set_new(a, k->tensors[t].name, json_real(s->accesses[l][t]));
        }
        json_object_set_new(energy, level_names[l], e);
        json_object_set_new(acc, level_names[l], a);
    }
    json_object_set_new(energy, "MAC", json_real(s->mac_pj));
    json_t *o = json_pack("{s:b, s:f, s:f, s:f, s:f, s:o, s:o}", "valid", 1, "edp", s->edp,
                          "energy_pj", s->energy_pj_total, "cycles", s->cycles, "utilisation",
                          s->utilisation, "energy", energy, "accesses", acc);
    if (lb && lb->edp > 0)
        json_object_set_new(o, "edp_over_min", json_real(s->edp / lb->edp));
    return o;
}
