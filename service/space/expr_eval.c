/* Tree-walking evaluator: recursion depth is bounded by EXPR_MAX_HEIGHT (checked at parse time) and
 * nothing is allocated, so enumeration can call it millions of times from any thread. */
#include "space/expr_internal.h"

static int eval_chain(const expr *e, const expr_node *nd, const expr_value *slots, expr_value *out)
{
    expr_value left, right;
    if (expr_eval_node(e, e->kids[nd->a], slots, &left) < 0)
        return -1;
    for (int i = 0; i + 1 < nd->b; i++) {
        int cmp = e->cmpops[nd->a + i];
        const expr_node *rn = &e->nodes[e->kids[nd->a + i + 1]];
        int r;
        if ((cmp == ECMP_IN || cmp == ECMP_NOTIN) && rn->op == EOP_SEQ) {
            /* Membership in a literal tuple or list. Python builds the whole tuple first, so every
             * element is evaluated (and an element that fails fails the test) even after a match.
             */
            int found = 0;
            for (int k = 0; k < rn->b; k++) {
                if (expr_eval_node(e, e->kids[rn->a + k], slots, &right) < 0)
                    return -1;
                found |= expr_value_equal(&left, &right);
            }
            r = found ^ (cmp == ECMP_NOTIN);
        } else {
            if (expr_eval_node(e, e->kids[nd->a + i + 1], slots, &right) < 0)
                return -1;
            r = expr_compare_op(cmp, &left, &right);
            if (r < 0)
                return -1;
            left = right;
        }
        if (!r)
            break;
        if (i + 2 == nd->b) {
            out->type = EXPR_BOOL;
            out->len = 0;
            out->u.i = 1;
            return 0;
        }
    }
    out->type = EXPR_BOOL;
    out->len = 0;
    out->u.i = 0;
    return 0;
}

int expr_eval_node(const expr *e, int n, const expr_value *slots, expr_value *out)
{
    const expr_node *nd = &e->nodes[n];
    expr_value a, b;
    switch (nd->op) {
    case EOP_LIT:
        *out = nd->v;
        return 0;
    case EOP_VAR:
        *out = slots[nd->v.u.i];
        return 0;
    case EOP_AND:
    case EOP_OR:
        /* Python returns the deciding operand, not a bool. */
        if (expr_eval_node(e, nd->a, slots, out) < 0)
            return -1;
        if (expr_truthy(out) == (nd->op == EOP_OR))
            return 0;
        return expr_eval_node(e, nd->b, slots, out);
    case EOP_NEG:
    case EOP_POS:
    case EOP_INV:
    case EOP_NOT:
        if (expr_eval_node(e, nd->a, slots, &a) < 0)
            return -1;
        return expr_unary_op(nd->op, &a, out);
    case EOP_CMP:
        return eval_chain(e, nd, slots, out);
    case EOP_SEQ:
        return -1; /* rejected by the parser outside of `in` */
    default:
        if (expr_eval_node(e, nd->a, slots, &a) < 0 || expr_eval_node(e, nd->b, slots, &b) < 0)
            return -1;
        return expr_binary_op(nd->op, &a, &b, out);
    }
}

int expr_eval(const expr *e, const expr_value *slots, expr_value *out)
{
    return expr_eval_node(e, e->root, slots, out);
}

int expr_test(const expr *e, const expr_value *slots)
{
    expr_value v;
    if (expr_eval_node(e, e->root, slots, &v) < 0)
        return -1;
    return expr_truthy(&v);
}
