/* neural/nn_presets — the preset networks of a directory (every *.json directly in it, sorted by
 * file name; nn_network.h). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "neural/nn_network.h"

struct nn_presets {
    int n;
    nn_network *nets[NN_MAX_PRESETS];
};

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

nn_presets *nn_presets_load(const char *dir, kt_error *err)
{
    nn_presets *p = calloc(1, sizeof *p), *ret = NULL;
    char *names[NN_MAX_PRESETS];
    int nnames = 0;
    DIR *d = dir ? opendir(dir) : NULL;
    if (!p) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "presets: out of memory");
        goto done;
    }
    if (!d) {
        kt_error_set(err, KT_ERR_CONFIG, "networks directory %s cannot be read",
                     dir ? dir : "(none)");
        kt_error_hint(err, "pass the directory holding the preset networks (networks/ of the "
                           "source tree)");
        goto done;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 6 || e->d_name[0] == '.' || strcmp(e->d_name + len - 5, ".json") != 0)
            continue;
        if (nnames >= NN_MAX_PRESETS) {
            kt_error_set(err, KT_ERR_CONFIG, "%s: more than %d networks", dir, NN_MAX_PRESETS);
            goto done;
        }
        names[nnames] = strdup(e->d_name);
        if (!names[nnames]) {
            kt_error_set(err, KT_ERR_NO_MEMORY, "presets: out of memory");
            goto done;
        }
        nnames++;
    }
    qsort(names, (size_t)nnames, sizeof names[0], cmp_str);
    for (int i = 0; i < nnames; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        nn_network *net = nn_network_load_file(path, err);
        if (!net)
            goto done;
        p->nets[p->n++] = net;
        if (nn_presets_find(p, nn_network_name(net)) != net) {
            kt_error_set(err, KT_ERR_CONFIG, "%s: network name \"%s\" is used by another file",
                         path, nn_network_name(net));
            goto done;
        }
    }
    ret = p;
    p = NULL;
done:
    for (int i = 0; i < nnames; i++)
        free(names[i]);
    if (d)
        closedir(d);
    nn_presets_free(p);
    return ret;
}

void nn_presets_free(nn_presets *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->n; i++)
        nn_network_free(p->nets[i]);
    free(p);
}

int nn_presets_count(const nn_presets *p)
{
    return p->n;
}

const nn_network *nn_presets_at(const nn_presets *p, int i)
{
    return i >= 0 && i < p->n ? p->nets[i] : NULL;
}

const nn_network *nn_presets_find(const nn_presets *p, const char *name)
{
    for (int i = 0; name && i < p->n; i++)
        if (strcmp(nn_network_name(p->nets[i]), name) == 0)
            return p->nets[i];
    return NULL;
}
