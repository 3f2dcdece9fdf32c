/* space/expr_internal — what the expression files share and nobody else needs: tokens, the flat
 * tree, and the value operations the parser uses to fold constants. Not part of the room's
 * interface. Tokens and nodes live in arrays owned by the parser / the expr; nothing here
 * allocates. */
#ifndef KT_SPACE_EXPR_INTERNAL_H
#define KT_SPACE_EXPR_INTERNAL_H

#include "space/expr.h"

typedef enum {
    TOK_END = 0,
    TOK_INT,
    TOK_FLOAT,
    TOK_STR,
    TOK_NAME,
    TOK_TRUE,
    TOK_FALSE,
    TOK_AND,
    TOK_OR,
    TOK_NOT,
    TOK_IN,
    TOK_KEYWORD, /* a Python keyword the dialect does not support (is, None, if, lambda, ...) */
    TOK_LPAREN,
    TOK_RPAREN,
    TOK_LBRACK,
    TOK_RBRACK,
    TOK_COMMA,
    TOK_PLUS,
    TOK_MINUS,
    TOK_STAR,
    TOK_SLASH,
    TOK_DSLASH,
    TOK_PERCENT,
    TOK_DSTAR,
    TOK_LT,
    TOK_LE,
    TOK_GT,
    TOK_GE,
    TOK_EQ,
    TOK_NE,
    TOK_SHL,
    TOK_SHR,
    TOK_AMP,
    TOK_PIPE,
    TOK_CARET,
    TOK_TILDE,
    TOK_ASSIGN, /* a lone '=': reported as "use '=='" */
} expr_tok_kind;

typedef struct expr_token {
    uint8_t kind;
    int32_t col;  /* 1-based column of the first character */
    int32_t len;  /* characters in the source */
    expr_value v; /* TOK_INT, TOK_FLOAT, TOK_STR (decoded into the string pool) */
} expr_token;

/* Tokenizes text[0..len) into toks (capacity len + 1, always enough), decoding string literals into
 * pool (capacity len + 1, always enough). Returns the token count including TOK_END, or -1 with err
 * set. */
int expr_lex(const char *text, int len, expr_token *toks, char *pool, kt_error *err);

typedef enum {
    EOP_LIT = 0,
    EOP_VAR,
    EOP_NEG,
    EOP_POS,
    EOP_INV,
    EOP_NOT,
    EOP_ADD,
    EOP_SUB,
    EOP_MUL,
    EOP_DIV,
    EOP_FLOORDIV,
    EOP_MOD,
    EOP_POW,
    EOP_SHL,
    EOP_SHR,
    EOP_BAND,
    EOP_BOR,
    EOP_BXOR,
    EOP_AND,
    EOP_OR,
    EOP_CMP, /* chain: kids[a .. a+b) operands, cmpops[a .. a+b-1) operators */
    EOP_SEQ, /* tuple or list display: kids[a .. a+b); only as the right operand of in / not in */
} expr_op;

typedef enum {
    ECMP_LT = 0,
    ECMP_LE,
    ECMP_GT,
    ECMP_GE,
    ECMP_EQ,
    ECMP_NE,
    ECMP_IN,
    ECMP_NOTIN
} expr_cmp;

typedef struct expr_node {
    uint8_t op;
    int16_t height;
    int32_t a, b; /* children, or a range of kids (EOP_CMP, EOP_SEQ) */
    int32_t col;
    expr_value v; /* EOP_LIT: the value; EOP_VAR: v.u.i is the slot */
} expr_node;

struct expr {
    expr_node *nodes;
    int n_nodes;
    int root;
    int32_t *kids;
    uint8_t *cmpops;
    char *strings; /* string literals and string constants, NUL-terminated */
    int *vars;
    int n_vars;
};

/* Value operations with Python semantics; each returns 0, or -1 where Python would raise. */
int expr_unary_op(int op, const expr_value *a, expr_value *out);
int expr_binary_op(int op, const expr_value *a, const expr_value *b, expr_value *out);
/* ECMP_LT .. ECMP_NE, and ECMP_IN / ECMP_NOTIN with a string on the right: 1 true, 0 false, -1
 * error. */
int expr_compare_op(int cmp, const expr_value *a, const expr_value *b);
/* Evaluates node n of e. */
int expr_eval_node(const expr *e, int n, const expr_value *slots, expr_value *out);

#endif
