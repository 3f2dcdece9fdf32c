/* Recursive-descent parser of the restriction dialect (Python's expression grammar, from `or` down
 * to atoms), building the flat tree of expr_internal.h, resolving names and folding constant
 * subtrees. */
#include "space/expr_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct parser {
    const expr_token *toks;
    int pos;
    expr *e;
    int cap; /* nodes, kids and stack capacity (the token count bounds all three) */
    int n_kids;
    int32_t *stack; /* operands of chains and sequences being parsed */
    uint8_t *stack_ops;
    int sp;
    int depth;
    const expr_names *names;
    const char *text;
    kt_error *err;
} parser;

static const expr_token *peek(const parser *p)
{
    return &p->toks[p->pos];
}

static int unexpected(parser *p)
{
    const expr_token *t = peek(p);
    if (t->kind == TOK_END)
        return kt_error_set(p->err, KT_ERR_BAD_EXPRESSION,
                            "unexpected end of expression at column %d", t->col);
    if (t->kind == TOK_ASSIGN)
        return kt_error_set(p->err, KT_ERR_BAD_EXPRESSION,
                            "unexpected '=' at column %d (comparison is '==')", t->col);
    /* Quote the source text of the token: "unexpected 'is' at column 3". */
    int n = t->len > 32 ? 32 : t->len;
    kt_error_set(p->err, KT_ERR_BAD_EXPRESSION, "unexpected %s'%.*s' at column %d",
                 t->kind == TOK_KEYWORD ? "keyword " : "", n, p->text + t->col - 1, t->col);
    /* C's "&&" and "||" arrive as a bitwise operator followed by a second one. */
    const expr_token *prev = p->pos > 0 ? &p->toks[p->pos - 1] : NULL;
    if (prev && prev->kind == t->kind && (t->kind == TOK_AMP || t->kind == TOK_PIPE))
        kt_error_hint(p->err, "write \"%s\"", t->kind == TOK_AMP ? "and" : "or");
    return -1;
}

static int enter(parser *p)
{
    if (++p->depth > EXPR_MAX_DEPTH)
        return kt_error_set(p->err, KT_ERR_BAD_EXPRESSION,
                            "expression nests deeper than %d at column %d", EXPR_MAX_DEPTH,
                            peek(p)->col);
    return 0;
}

static int new_node(parser *p, int op, int col, int height)
{
    if (height > EXPR_MAX_HEIGHT)
        return kt_error_set(p->err, KT_ERR_BAD_EXPRESSION,
                            "expression is too long a chain (tree height over %d) at column %d",
                            EXPR_MAX_HEIGHT, col);
    /* The token count bounds the node count: every node consumes at least one token. */
    if (p->e->n_nodes >= p->cap)
        return kt_error_set(p->err, KT_ERR_INTERNAL, "expression node capacity exceeded");
    int n = p->e->n_nodes++;
    expr_node *nd = &p->e->nodes[n];
    memset(nd, 0, sizeof *nd);
    nd->op = (uint8_t)op;
    nd->col = col;
    nd->height = (int16_t)height;
    return n;
}

static int height(const parser *p, int n)
{
    return p->e->nodes[n].height;
}

static int reject_seq(parser *p, int n)
{
    if (p->e->nodes[n].op == EOP_SEQ)
        return kt_error_set(p->err, KT_ERR_BAD_EXPRESSION,
                            "a tuple or list is only allowed on the right of 'in' (column %d)",
                            p->e->nodes[n].col);
    return 0;
}

/* Replaces node n by its value when every operand is a literal and the evaluation succeeds (a
 * failing one, such as 1/0, is left to fail at evaluation time, which makes every configuration
 * invalid). */
static void fold(parser *p, int n)
{
    expr_node *nd = &p->e->nodes[n];
    const expr_node *nodes = p->e->nodes;
    switch (nd->op) {
    case EOP_NEG:
    case EOP_POS:
    case EOP_INV:
    case EOP_NOT:
        if (nodes[nd->a].op != EOP_LIT)
            return;
        break;
    case EOP_CMP:
        for (int i = 0; i < nd->b; i++)
            if (nodes[p->e->kids[nd->a + i]].op != EOP_LIT)
                return;
        break;
    default:
        if (nodes[nd->a].op != EOP_LIT || nodes[nd->b].op != EOP_LIT)
            return;
    }
    expr_value v;
    if (expr_eval_node(p->e, n, NULL, &v) == 0) {
        nd->op = EOP_LIT;
        nd->v = v;
    }
}

static int unary(parser *p, int op, int col, int a)
{
    if (reject_seq(p, a) < 0)
        return -1;
    int n = new_node(p, op, col, height(p, a) + 1);
    if (n < 0)
        return -1;
    p->e->nodes[n].a = a;
    fold(p, n);
    return n;
}

static int binary(parser *p, int op, int col, int a, int b)
{
    if (reject_seq(p, a) < 0 || reject_seq(p, b) < 0)
        return -1;
    int h = height(p, a) > height(p, b) ? height(p, a) : height(p, b);
    int n = new_node(p, op, col, h + 1);
    if (n < 0)
        return -1;
    p->e->nodes[n].a = a;
    p->e->nodes[n].b = b;
    fold(p, n);
    return n;
}

/* Moves stack[base .. sp) into kids and returns the first kid index. */
static int take_kids(parser *p, int base, int with_ops)
{
    int first = p->n_kids;
    for (int i = base; i < p->sp; i++) {
        p->e->kids[p->n_kids] = p->stack[i];
        if (with_ops)
            p->e->cmpops[p->n_kids] = p->stack_ops[i];
        p->n_kids++;
    }
    p->sp = base;
    return first;
}

static int parse_or(parser *p);
static int parse_factor(parser *p);

/* Parses the rest of a tuple or list display; first is an element already parsed (or -1), and the
 * current token is the one after '(' / '[' or after first's comma. */
static int parse_sequence(parser *p, int close, int col, int first)
{
    int base = p->sp, h = 0;
    if (first >= 0) {
        if (reject_seq(p, first) < 0)
            return -1;
        p->stack[p->sp++] = first;
        h = height(p, first);
    }
    while (peek(p)->kind != close) {
        int el = parse_or(p);
        if (el < 0 || reject_seq(p, el) < 0)
            return -1;
        p->stack[p->sp++] = el;
        if (height(p, el) > h)
            h = height(p, el);
        if (peek(p)->kind == TOK_COMMA)
            p->pos++;
        else if (peek(p)->kind != close)
            return unexpected(p);
    }
    p->pos++;
    int n = new_node(p, EOP_SEQ, col, h + 1);
    if (n < 0)
        return -1;
    p->e->nodes[n].b = p->sp - base;
    p->e->nodes[n].a = take_kids(p, base, 0);
    return n;
}

static int parse_atom(parser *p)
{
    const expr_token *t = peek(p);
    int n;
    switch (t->kind) {
    case TOK_INT:
    case TOK_FLOAT:
    case TOK_STR:
    case TOK_TRUE:
    case TOK_FALSE:
        if ((n = new_node(p, EOP_LIT, t->col, 1)) < 0)
            return -1;
        if (t->kind == TOK_TRUE || t->kind == TOK_FALSE) {
            p->e->nodes[n].v.type = EXPR_BOOL;
            p->e->nodes[n].v.u.i = t->kind == TOK_TRUE;
        } else {
            p->e->nodes[n].v = t->v;
        }
        p->pos++;
        return n;
    case TOK_NAME: {
        const expr_names *nm = p->names;
        const char *name = p->text + t->col - 1;
        size_t len = (size_t)t->len;
        if (p->toks[p->pos + 1].kind == TOK_LPAREN)
            return kt_error_set(p->err, KT_ERR_BAD_EXPRESSION,
                                "function calls are not supported ('%.*s' at column %d)", (int)len,
                                name, t->col);
        for (int i = 0; nm && i < nm->n_params; i++) {
            if (strlen(nm->params[i]) == len && memcmp(nm->params[i], name, len) == 0) {
                if ((n = new_node(p, EOP_VAR, t->col, 1)) < 0)
                    return -1;
                p->e->nodes[n].v.type = EXPR_INT;
                p->e->nodes[n].v.u.i = i;
                p->pos++;
                return n;
            }
        }
        for (int i = 0; nm && i < nm->n_consts; i++) {
            if (strlen(nm->const_names[i]) == len && memcmp(nm->const_names[i], name, len) == 0) {
                if ((n = new_node(p, EOP_LIT, t->col, 1)) < 0)
                    return -1;
                p->e->nodes[n].v = nm->const_values[i];
                p->pos++;
                return n;
            }
        }
        kt_error_set(p->err, KT_ERR_BAD_EXPRESSION, "unknown name '%.*s' at column %d",
                     len > 64 ? 64 : (int)len, name, t->col);
        if (p->err) {
            char hint[KT_ERROR_HINT_MAX];
            size_t used = 0;
            used += (size_t)snprintf(hint, sizeof hint, "parameters:");
            for (int i = 0; nm && i < nm->n_params && used < sizeof hint; i++)
                used += (size_t)snprintf(hint + used, sizeof hint - used, "%s %s", i ? "," : "",
                                         nm->params[i]);
            for (int i = 0; nm && i < nm->n_consts && used < sizeof hint; i++)
                used += (size_t)snprintf(hint + used, sizeof hint - used, "%s %s",
                                         i ? "," : "; constants:", nm->const_names[i]);
            kt_error_hint(p->err, "%s", hint);
        }
        return -1;
    }
    case TOK_LPAREN: {
        int col = t->col;
        if (enter(p) < 0)
            return -1;
        /* "(x)" is grouping; "()", "(x,)" and "(x, y)" are tuples. */
        p->pos++;
        n = -1;
        if (peek(p)->kind != TOK_RPAREN) {
            if ((n = parse_or(p)) < 0)
                return -1;
            if (peek(p)->kind == TOK_RPAREN) {
                p->pos++;
                p->depth--;
                return n;
            }
            if (peek(p)->kind != TOK_COMMA)
                return unexpected(p);
            p->pos++;
        }
        n = parse_sequence(p, TOK_RPAREN, col, n);
        p->depth--;
        return n;
    }
    case TOK_LBRACK: {
        if (enter(p) < 0)
            return -1;
        int col = t->col;
        p->pos++;
        n = parse_sequence(p, TOK_RBRACK, col, -1);
        p->depth--;
        return n;
    }
    default:
        return unexpected(p);
    }
}

/* power: atom ['**' factor], right-associative, binding tighter than a unary minus on its left. */
static int parse_power(parser *p)
{
    int a = parse_atom(p);
    if (a < 0 || peek(p)->kind != TOK_DSTAR)
        return a;
    int col = peek(p)->col;
    if (enter(p) < 0)
        return -1;
    p->pos++;
    int b = parse_factor(p);
    if (b < 0)
        return -1;
    p->depth--;
    return binary(p, EOP_POW, col, a, b);
}

static int parse_factor(parser *p)
{
    const expr_token *t = peek(p);
    int op = t->kind == TOK_MINUS   ? EOP_NEG
             : t->kind == TOK_PLUS  ? EOP_POS
             : t->kind == TOK_TILDE ? EOP_INV
                                    : -1;
    if (op < 0)
        return parse_power(p);
    if (enter(p) < 0)
        return -1;
    p->pos++;
    int a = parse_factor(p);
    if (a < 0)
        return -1;
    p->depth--;
    return unary(p, op, t->col, a);
}

typedef int (*parse_fn)(parser *p);

/* One left-associative level: operand (op operand)*; ops maps token kinds to node ops,
 * 0-terminated. */
static int parse_left(parser *p, parse_fn operand, const int (*ops)[2])
{
    int a = operand(p);
    while (a >= 0) {
        int op = -1;
        for (int i = 0; ops[i][0]; i++)
            if (peek(p)->kind == ops[i][0])
                op = ops[i][1];
        if (op < 0)
            break;
        int col = peek(p)->col;
        p->pos++;
        int b = operand(p);
        if (b < 0)
            return -1;
        a = binary(p, op, col, a, b);
    }
    return a;
}

static int parse_term(parser *p)
{
    static const int ops[][2] = {{TOK_STAR, EOP_MUL},
                                 {TOK_SLASH, EOP_DIV},
                                 {TOK_DSLASH, EOP_FLOORDIV},
                                 {TOK_PERCENT, EOP_MOD},
                                 {0, 0}};
    return parse_left(p, parse_factor, ops);
}

static int parse_arith(parser *p)
{
    static const int ops[][2] = {{TOK_PLUS, EOP_ADD}, {TOK_MINUS, EOP_SUB}, {0, 0}};
    return parse_left(p, parse_term, ops);
}

static int parse_shift(parser *p)
{
    static const int ops[][2] = {{TOK_SHL, EOP_SHL}, {TOK_SHR, EOP_SHR}, {0, 0}};
    return parse_left(p, parse_arith, ops);
}

static int parse_band(parser *p)
{
    static const int ops[][2] = {{TOK_AMP, EOP_BAND}, {0, 0}};
    return parse_left(p, parse_shift, ops);
}

static int parse_bxor(parser *p)
{
    static const int ops[][2] = {{TOK_CARET, EOP_BXOR}, {0, 0}};
    return parse_left(p, parse_band, ops);
}

static int parse_bor(parser *p)
{
    static const int ops[][2] = {{TOK_PIPE, EOP_BOR}, {0, 0}};
    return parse_left(p, parse_bxor, ops);
}

/* Comparison operator at the current token, consuming it; -1 if none. */
static int take_cmp(parser *p)
{
    static const int map[][2] = {{TOK_LT, ECMP_LT}, {TOK_LE, ECMP_LE}, {TOK_GT, ECMP_GT},
                                 {TOK_GE, ECMP_GE}, {TOK_EQ, ECMP_EQ}, {TOK_NE, ECMP_NE},
                                 {TOK_IN, ECMP_IN}};
    int k = peek(p)->kind;
    if (k == TOK_NOT && p->toks[p->pos + 1].kind == TOK_IN) {
        p->pos += 2;
        return ECMP_NOTIN;
    }
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        if (map[i][0] == k) {
            p->pos++;
            return map[i][1];
        }
    }
    return -1;
}

/* comparison: bor (cmp_op bor)* — a chain a < b < c is one node so that b is evaluated once. */
static int parse_comparison(parser *p)
{
    int a = parse_bor(p);
    if (a < 0)
        return -1;
    int col = peek(p)->col;
    int op = take_cmp(p);
    if (op < 0)
        return a;
    int base = p->sp, h = height(p, a), prev_op = op;
    if (reject_seq(p, a) < 0)
        return -1;
    p->stack[p->sp] = a;
    p->stack_ops[p->sp++] = (uint8_t)op;
    for (;;) {
        int b = parse_bor(p);
        if (b < 0)
            return -1;
        if (height(p, b) > h)
            h = height(p, b);
        op = take_cmp(p);
        /* A sequence may only be the last operand, right of in / not in. */
        if (p->e->nodes[b].op == EOP_SEQ &&
            (op >= 0 || (prev_op != ECMP_IN && prev_op != ECMP_NOTIN)))
            return reject_seq(p, b);
        p->stack[p->sp] = b;
        p->stack_ops[p->sp++] = (uint8_t)(op < 0 ? 0 : op);
        if (op < 0)
            break;
        prev_op = op;
    }
    int n = new_node(p, EOP_CMP, col, h + 1);
    if (n < 0)
        return -1;
    p->e->nodes[n].b = p->sp - base;
    p->e->nodes[n].a = take_kids(p, base, 1);
    fold(p, n);
    return n;
}

static int parse_not(parser *p)
{
    const expr_token *t = peek(p);
    if (t->kind != TOK_NOT)
        return parse_comparison(p);
    if (enter(p) < 0)
        return -1;
    p->pos++;
    int a = parse_not(p);
    if (a < 0)
        return -1;
    p->depth--;
    return unary(p, EOP_NOT, t->col, a);
}

static int parse_and(parser *p)
{
    static const int ops[][2] = {{TOK_AND, EOP_AND}, {0, 0}};
    return parse_left(p, parse_not, ops);
}

static int parse_or(parser *p)
{
    static const int ops[][2] = {{TOK_OR, EOP_OR}, {0, 0}};
    return parse_left(p, parse_and, ops);
}

/* Collects the parameter slots reachable from node n (folded subtrees are no longer reachable). */
static void collect_vars(const expr *e, int n, unsigned char *seen)
{
    const expr_node *nd = &e->nodes[n];
    switch (nd->op) {
    case EOP_LIT:
        return;
    case EOP_VAR:
        seen[nd->v.u.i] = 1;
        return;
    case EOP_NEG:
    case EOP_POS:
    case EOP_INV:
    case EOP_NOT:
        collect_vars(e, nd->a, seen);
        return;
    case EOP_CMP:
    case EOP_SEQ:
        for (int i = 0; i < nd->b; i++)
            collect_vars(e, e->kids[nd->a + i], seen);
        return;
    default:
        collect_vars(e, nd->a, seen);
        collect_vars(e, nd->b, seen);
    }
}

void expr_free(expr *e)
{
    if (!e)
        return;
    free(e->nodes);
    free(e->kids);
    free(e->cmpops);
    free(e->strings);
    free(e->vars);
    free(e);
}

expr *expr_parse(const char *text, const expr_names *names, size_t max_len, kt_error *err)
{
    expr *e = NULL;
    expr_token *toks = NULL;
    unsigned char *seen = NULL;
    parser p = {0};
    if (!text)
        text = "";
    if (max_len == 0 || max_len > EXPR_MAX_LEN)
        max_len = EXPR_MAX_LEN;
    size_t len = strnlen(text, max_len + 1);
    if (len > max_len) {
        kt_error_set(err, KT_ERR_BAD_EXPRESSION, "expression is longer than %zu characters",
                     max_len);
        goto fail;
    }
    int n_params = names ? names->n_params : 0;
    e = calloc(1, sizeof *e);
    toks = malloc((len + 1) * sizeof *toks);
    if (!e || !toks || !(e->strings = malloc(len + 1)))
        goto nomem;
    int nt = expr_lex(text, (int)len, toks, e->strings, err);
    if (nt < 0)
        goto fail;
    if (nt == 1) {
        kt_error_set(err, KT_ERR_BAD_EXPRESSION, "empty expression");
        goto fail;
    }
    /* Every node, kid and stacked operand consumes a token, so nt bounds them all. */
    e->nodes = malloc((size_t)nt * sizeof *e->nodes);
    e->kids = malloc((size_t)nt * sizeof *e->kids);
    e->cmpops = malloc((size_t)nt);
    p.stack = malloc((size_t)nt * sizeof *p.stack);
    p.stack_ops = malloc((size_t)nt);
    seen = calloc((size_t)n_params + 1, 1);
    if (!e->nodes || !e->kids || !e->cmpops || !p.stack || !p.stack_ops || !seen)
        goto nomem;
    p.toks = toks;
    p.e = e;
    p.cap = nt;
    p.names = names;
    p.text = text;
    p.err = err;
    e->root = parse_or(&p);
    if (e->root < 0)
        goto fail;
    if (peek(&p)->kind != TOK_END) {
        unexpected(&p);
        goto fail;
    }
    if (reject_seq(&p, e->root) < 0)
        goto fail;
    collect_vars(e, e->root, seen);
    for (int i = 0; i < n_params; i++)
        e->n_vars += seen[i];
    e->vars = malloc(((size_t)e->n_vars + 1) * sizeof *e->vars);
    if (!e->vars)
        goto nomem;
    for (int i = 0, k = 0; i < n_params; i++)
        if (seen[i])
            e->vars[k++] = i;
    goto out;
nomem:
    kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory parsing an expression");
fail:
    expr_free(e);
    e = NULL;
out:
    free(toks);
    free(seen);
    free(p.stack);
    free(p.stack_ops);
    return e;
}

int expr_num_vars(const expr *e)
{
    return e->n_vars;
}

const int *expr_vars(const expr *e)
{
    return e->vars;
}
