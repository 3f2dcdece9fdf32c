/* space_group — the independent parameter groups as units a searcher can move: which group holds a
 * parameter, how many valid sub-configurations a group has, and an id's digit in a group (its
 * position in the group's sorted valid list) read and replaced. A digit is replaced by arithmetic
 * on the mixed radix of space.h (id += (new - old) * stride), so every call is O(1) except
 * space_param_group, which is O(1) too; none allocates, all only read the built space. */
#include "space/space_internal.h"

int space_param_group(const space *sp, int p)
{
    if (!sp || p < 0 || p >= sp->n_params)
        return -1;
    return sp->params[p].group;
}

uint64_t space_group_size(const space *sp, int g)
{
    if (!sp || g < 0 || g >= sp->n_groups)
        return 0;
    return sp->groups[g].n;
}

int space_group_num_params(const space *sp, int g)
{
    if (!sp || g < 0 || g >= sp->n_groups)
        return 0;
    return sp->groups[g].k;
}

int space_group_param(const space *sp, int g, int i)
{
    if (!sp || g < 0 || g >= sp->n_groups || i < 0 || i >= sp->groups[g].k)
        return -1;
    return sp->groups[g].params[i];
}

int space_group_position(const space *sp, config_id id, int g, uint64_t *pos)
{
    if (!sp || g < 0 || g >= sp->n_groups || id >= sp->count)
        return -1;
    const space_group *grp = &sp->groups[g];
    *pos = (id / grp->stride) % grp->n;
    return 0;
}

int space_with_group_position(const space *sp, config_id id, int g, uint64_t pos, config_id *out)
{
    uint64_t old;
    if (space_group_position(sp, id, g, &old) < 0 || pos >= sp->groups[g].n)
        return -1;
    /* Unsigned wrap-around is intended when pos < old: the result is in range. */
    *out = id + (pos - old) * sp->groups[g].stride;
    return 0;
}
