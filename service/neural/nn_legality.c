/* neural/nn_legality — the cached legality verdict (nn_legality.h). Scores live in a ring of
 * NN_LEGALITY_MAX_ENTRIES keyed by "network hash|data|conv|g.b.s|batch.seeds.seed" (conv -1: the
 * original network); data sets are loaded once per name and kept until nn_legality_free. One mutex
 * guards both; Fisher Potentials are computed outside it. */
#include "neural/nn_legality.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "neural/nn_cost.h"

#define NN_LEGALITY_MAX_DATASETS 4
#define NN_LEGALITY_KEY_MAX      160

typedef struct score_entry {
    char key[NN_LEGALITY_KEY_MAX];
    double fisher;
} score_entry;

typedef struct loaded_dataset {
    char name[64];
    nn_dataset data;
} loaded_dataset;

struct nn_legality {
    pthread_mutex_t mu;
    char *package_dir, *small_dir;
    nn_fisher_opts opts;
    score_entry *entries;
    int nentries, next; /* filled entries; the slot the next insertion takes (ring) */
    loaded_dataset datasets[NN_LEGALITY_MAX_DATASETS];
    int ndatasets;
};

nn_legality *nn_legality_new(const nn_dataset_paths *paths, const nn_fisher_opts *o, kt_error *err)
{
    nn_legality *l = calloc(1, sizeof *l);
    if (!l)
        goto oom;
    l->opts = o ? *o : nn_fisher_default_opts();
    l->entries = calloc(NN_LEGALITY_MAX_ENTRIES, sizeof *l->entries);
    if (!l->entries)
        goto oom;
    if (paths && paths->package_dir && !(l->package_dir = strdup(paths->package_dir)))
        goto oom;
    if (paths && paths->small_dir && !(l->small_dir = strdup(paths->small_dir)))
        goto oom;
    if (pthread_mutex_init(&l->mu, NULL) != 0) {
        kt_error_set(err, KT_ERR_INTERNAL, "legality: mutex");
        free(l->entries);
        free(l->package_dir);
        free(l->small_dir);
        free(l);
        return NULL;
    }
    return l;
oom:
    kt_error_set(err, KT_ERR_NO_MEMORY, "legality: out of memory");
    if (l) {
        free(l->entries);
        free(l->package_dir);
        free(l->small_dir);
        free(l);
    }
    return NULL;
}

void nn_legality_free(nn_legality *l)
{
    if (!l)
        return;
    for (int i = 0; i < l->ndatasets; i++)
        nn_dataset_release(&l->datasets[i].data);
    pthread_mutex_destroy(&l->mu);
    free(l->entries);
    free(l->package_dir);
    free(l->small_dir);
    free(l);
}

/* The data set named name, loaded on first use (under the lock; the pointer stays valid until
 * nn_legality_free). */
static const nn_dataset *dataset_get(nn_legality *l, const char *name, kt_error *err)
{
    const nn_dataset *d = NULL;
    pthread_mutex_lock(&l->mu);
    for (int i = 0; i < l->ndatasets && !d; i++)
        if (strcmp(l->datasets[i].name, name) == 0)
            d = &l->datasets[i].data;
    if (!d) {
        int want = l->opts.batch * 4 > 256 ? l->opts.batch * 4 : 256;
        nn_dataset_paths paths = {l->package_dir, l->small_dir};
        loaded_dataset *slot = &l->datasets[l->ndatasets];
        if (l->ndatasets >= NN_LEGALITY_MAX_DATASETS || strlen(name) >= sizeof slot->name)
            kt_error_set(err, KT_ERR_BAD_REQUEST,
                         "legality: data set \"%s\" cannot be added (at "
                         "most %d)",
                         name, NN_LEGALITY_MAX_DATASETS);
        else if (nn_dataset_load(name, "train", want, &paths, &slot->data, err) == 0) {
            snprintf(slot->name, sizeof slot->name, "%s", name);
            d = &slot->data;
            l->ndatasets++;
        }
    }
    pthread_mutex_unlock(&l->mu);
    return d;
}

static int cache_get(nn_legality *l, const char *key, double *fisher)
{
    int found = 0;
    pthread_mutex_lock(&l->mu);
    for (int i = 0; i < l->nentries && !found; i++)
        if (strcmp(l->entries[i].key, key) == 0) {
            *fisher = l->entries[i].fisher;
            found = 1;
        }
    pthread_mutex_unlock(&l->mu);
    return found;
}

static void cache_put(nn_legality *l, const char *key, double fisher)
{
    pthread_mutex_lock(&l->mu);
    int i;
    for (i = 0; i < l->nentries; i++)
        if (strcmp(l->entries[i].key, key) == 0)
            break;
    if (i == l->nentries) { /* new: the next slot of the ring (the oldest once full) */
        i = l->next;
        l->next = (l->next + 1) % NN_LEGALITY_MAX_ENTRIES;
        if (l->nentries < NN_LEGALITY_MAX_ENTRIES)
            l->nentries++;
    }
    snprintf(l->entries[i].key, sizeof l->entries[i].key, "%s", key);
    l->entries[i].fisher = fisher;
    pthread_mutex_unlock(&l->mu);
}

int nn_legality_fits(const nn_legality *l, const nn_network *net, kt_error *err)
{
    return nn_cost_check(net, l->opts.batch, l->opts.seeds, err);
}

/* The score of net with t on conv (conv -1: the original), from the cache or computed (a stopped
 * computation's NN_STOPPED / NN_TIMED_OUT is passed on; nothing is cached then). */
static int score(nn_legality *l, const nn_network *net, const nn_dataset *d, const char *data,
                 int conv, const nn_transform *t, const nn_stop *stop, double *fisher, int *cached,
                 double *seconds, kt_error *err)
{
    char key[NN_LEGALITY_KEY_MAX];
    snprintf(key, sizeof key, "%s|%s|%d|%d.%d.%d|%d.%d.%llu", nn_network_hash(net), data, conv,
             t->groups, t->bottleneck, t->seq, l->opts.batch, l->opts.seeds,
             (unsigned long long)l->opts.seed);
    if (cache_get(l, key, fisher)) {
        *cached = 1;
        return 0;
    }
    *cached = 0;
    int nconvs = nn_network_conv_count(net), rc = -1;
    nn_transform *per = malloc(sizeof *per * (size_t)nconvs);
    if (!per)
        return kt_error_set(err, KT_ERR_NO_MEMORY, "legality: out of memory");
    for (int i = 0; i < nconvs; i++)
        per[i] = i == conv ? *t : nn_transform_identity();
    double t0 = kt_clock_s();
    rc = nn_fisher_potential(net, per, d, &l->opts, stop, fisher, NULL, err);
    if (rc == 0)
        cache_put(l, key, *fisher);
    *seconds += kt_clock_s() - t0;
    free(per);
    return rc;
}

int nn_legality_check(nn_legality *l, const nn_network *net, int conv_index, const nn_transform *t,
                      const char *data, double threshold, const nn_stop *stop, nn_verdict *out,
                      kt_error *err)
{
    nn_conv_shape cs;
    int cached_orig = 0, rc;
    memset(out, 0, sizeof *out);
    if (nn_network_conv(net, conv_index, &cs) < 0)
        return kt_error_set(err, KT_ERR_CONFIG, "legality: network \"%s\" has no conv %d",
                            nn_network_name(net), conv_index);
    if (nn_transform_is_identity(t))
        return kt_error_set(err, KT_ERR_CONFIG,
                            "legality: conv \"%s\" is not transformed (nothing to judge)", cs.name);
    if (!data || !nn_dataset_known(data))
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "legality: unknown data set \"%s\"",
                            data ? data : "(null)");
    nn_transform *per = calloc((size_t)nn_network_conv_count(net), sizeof *per);
    if (!per)
        return kt_error_set(err, KT_ERR_NO_MEMORY, "legality: out of memory");
    for (int i = 0; i < nn_network_conv_count(net); i++)
        per[i] = i == conv_index ? *t : nn_transform_identity();
    int ok = nn_network_transforms_valid(net, per, err);
    free(per);
    if (!ok || nn_legality_fits(l, net, err) < 0)
        return -1;
    const nn_dataset *d = dataset_get(l, data, err);
    if (!d)
        return -1;
    nn_transform id = nn_transform_identity();
    rc = score(l, net, d, data, -1, &id, stop, &out->fisher_original, &cached_orig, &out->seconds,
               err);
    if (rc == 0)
        rc = score(l, net, d, data, conv_index, t, stop, &out->fisher, &out->cached, &out->seconds,
                   err);
    if (rc != 0)
        return rc;
    out->ratio = out->fisher_original > 0 ? out->fisher / out->fisher_original : 0.0;
    out->legal = out->ratio >= threshold;
    return 0;
}
