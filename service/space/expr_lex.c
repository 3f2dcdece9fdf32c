/* Tokenizer of the restriction dialect: Python literals, names, keywords and operators, with
 * columns. */
#include "space/expr_internal.h"

#include <stdlib.h>
#include <string.h>

static const char *const python_keywords[] = {
    "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
    "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
    "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
    "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield",
};

int expr_is_keyword(const char *s, size_t len)
{
    for (size_t i = 0; i < sizeof python_keywords / sizeof python_keywords[0]; i++) {
        const char *k = python_keywords[i];
        if (strlen(k) == len && memcmp(k, s, len) == 0)
            return 1;
    }
    return 0;
}

static int is_ident_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int is_ident_char(char c)
{
    return is_ident_start(c) || is_digit(c);
}

static int digit_value(char c)
{
    if (is_digit(c))
        return c - '0';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'Z')
        return c - 'A' + 10;
    return 99;
}

static int bad_number(const char *text, int start, int end, kt_error *err)
{
    int n = end - start > 40 ? 40 : end - start;
    return kt_error_set(err, KT_ERR_BAD_EXPRESSION, "invalid number '%.*s' at column %d", n,
                        text + start, start + 1);
}

/* Integers that do not fit in int64 become floats: Python would keep them exact, but only
 * magnitudes matter for restrictions this large. */
static void set_int_or_float(expr_token *t, uint64_t mag, int overflow, double approx)
{
    if (!overflow && mag <= (uint64_t)INT64_MAX) {
        t->kind = TOK_INT;
        t->v.type = EXPR_INT;
        t->v.u.i = (int64_t)mag;
    } else {
        t->kind = TOK_FLOAT;
        t->v.type = EXPR_FLOAT;
        t->v.u.f = approx;
    }
}

/* Scans a number starting at text[i]; returns the index after it, or -1 with err set. */
static int lex_number(const char *text, int len, int i, expr_token *t, kt_error *err)
{
    int start = i;
    char digits[96];
    int nd = 0;
    int is_float = 0;
    if (text[i] == '0' && i + 1 < len && strchr("xXoObB", text[i + 1])) {
        int base = (text[i + 1] == 'x' || text[i + 1] == 'X')   ? 16
                   : (text[i + 1] == 'o' || text[i + 1] == 'O') ? 8
                                                                : 2;
        i += 2;
        uint64_t mag = 0;
        int overflow = 0, any = 0;
        double approx = 0.0;
        while (i < len && (digit_value(text[i]) < base || (text[i] == '_' && any))) {
            if (text[i] != '_') {
                int d = digit_value(text[i]);
                if (mag > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
                    overflow = 1;
                else
                    mag = mag * (uint64_t)base + (uint64_t)d;
                approx = approx * base + d;
                any = 1;
            }
            i++;
        }
        if (!any || text[i - 1] == '_' || (i < len && is_ident_char(text[i])))
            return bad_number(text, start, i < len ? i + 1 : i, err);
        set_int_or_float(t, mag, overflow, approx);
        return i;
    }
    /* Decimal: digits [. digits] [e [+-] digits], underscores only between digits. */
    int int_digits = 0, leading_zero = (text[i] == '0'), nonzero_after_zero = 0;
    while (i < len && (is_digit(text[i]) || (text[i] == '_' && i > start && is_digit(text[i - 1]) &&
                                             i + 1 < len && is_digit(text[i + 1])))) {
        if (text[i] != '_') {
            if (nd < (int)sizeof digits - 8)
                digits[nd++] = text[i];
            else
                return bad_number(text, start, i, err);
            if (int_digits > 0 && leading_zero && text[i] != '0')
                nonzero_after_zero = 1;
            int_digits++;
        }
        i++;
    }
    if (i < len && text[i] == '.') {
        is_float = 1;
        digits[nd++] = '.';
        i++;
        while (i < len && (is_digit(text[i]) || (text[i] == '_' && is_digit(text[i - 1]) &&
                                                 i + 1 < len && is_digit(text[i + 1])))) {
            if (text[i] != '_') {
                if (nd >= (int)sizeof digits - 8)
                    return bad_number(text, start, i, err);
                digits[nd++] = text[i];
            }
            i++;
        }
    }
    if (i < len && (text[i] == 'e' || text[i] == 'E')) {
        is_float = 1;
        digits[nd++] = 'e';
        i++;
        if (i < len && (text[i] == '+' || text[i] == '-'))
            digits[nd++] = text[i++];
        int exp_digits = 0;
        while (i < len && is_digit(text[i])) {
            if (nd >= (int)sizeof digits - 2)
                return bad_number(text, start, i, err);
            digits[nd++] = text[i++];
            exp_digits++;
        }
        if (!exp_digits)
            return bad_number(text, start, i, err);
    }
    digits[nd] = '\0';
    if ((i < len && is_ident_char(text[i])) || (!is_float && nonzero_after_zero))
        return bad_number(text, start, i < len ? i + 1 : i, err);
    if (is_float) {
        t->kind = TOK_FLOAT;
        t->v.type = EXPR_FLOAT;
        t->v.u.f = strtod(digits, NULL); /* the service never changes LC_NUMERIC from "C" */
        return i;
    }
    uint64_t mag = 0;
    int overflow = 0;
    for (int k = 0; k < nd; k++) {
        uint64_t d = (uint64_t)(digits[k] - '0');
        if (mag > (UINT64_MAX - d) / 10)
            overflow = 1;
        else
            mag = mag * 10 + d;
    }
    set_int_or_float(t, mag, overflow,
                     overflow || mag > (uint64_t)INT64_MAX ? strtod(digits, NULL) : 0.0);
    return i;
}

/* Scans a quoted string at text[i]; decodes it into pool at *pool_used. */
static int lex_string(const char *text, int len, int i, expr_token *t, char *pool, int *pool_used,
                      kt_error *err)
{
    char quote = text[i];
    int start = i++;
    char *out = pool + *pool_used;
    int n = 0;
    while (i < len && text[i] != quote) {
        char c = text[i++];
        if (c == '\\') {
            if (i >= len)
                break;
            char e = text[i++];
            switch (e) {
            case 'n':
                c = '\n';
                break;
            case 't':
                c = '\t';
                break;
            case 'r':
                c = '\r';
                break;
            case '\\':
                c = '\\';
                break;
            case '\'':
                c = '\'';
                break;
            case '"':
                c = '"';
                break;
            default:
                return kt_error_set(err, KT_ERR_BAD_EXPRESSION,
                                    "unsupported escape '\\%c' in string at column %d", e, i - 1);
            }
        } else if (c == '\n') {
            break;
        }
        out[n++] = c;
    }
    if (i >= len || text[i] != quote)
        return kt_error_set(err, KT_ERR_BAD_EXPRESSION, "unterminated string at column %d",
                            start + 1);
    out[n] = '\0';
    t->kind = TOK_STR;
    t->v.type = EXPR_STR;
    t->v.len = (uint32_t)n;
    t->v.u.s = out;
    *pool_used += n + 1;
    return i + 1;
}

static const struct {
    const char *text;
    int kind;
} operators[] = {
    /* Longest first so that "**" wins over "*". */
    {"**", TOK_DSTAR}, {"//", TOK_DSLASH}, {"<=", TOK_LE},     {">=", TOK_GE},    {"==", TOK_EQ},
    {"!=", TOK_NE},    {"<<", TOK_SHL},    {">>", TOK_SHR},    {"(", TOK_LPAREN}, {")", TOK_RPAREN},
    {"[", TOK_LBRACK}, {"]", TOK_RBRACK},  {",", TOK_COMMA},   {"+", TOK_PLUS},   {"-", TOK_MINUS},
    {"*", TOK_STAR},   {"/", TOK_SLASH},   {"%", TOK_PERCENT}, {"<", TOK_LT},     {">", TOK_GT},
    {"&", TOK_AMP},    {"|", TOK_PIPE},    {"^", TOK_CARET},   {"~", TOK_TILDE},  {"=", TOK_ASSIGN},
};

static int keyword_kind(const char *s, int n)
{
    static const struct {
        const char *word;
        int kind;
    } words[] = {{"and", TOK_AND}, {"or", TOK_OR},     {"not", TOK_NOT},
                 {"in", TOK_IN},   {"True", TOK_TRUE}, {"False", TOK_FALSE}};
    for (size_t k = 0; k < sizeof words / sizeof words[0]; k++)
        if ((int)strlen(words[k].word) == n && memcmp(words[k].word, s, (size_t)n) == 0)
            return words[k].kind;
    return expr_is_keyword(s, (size_t)n) ? TOK_KEYWORD : TOK_NAME;
}

int expr_lex(const char *text, int len, expr_token *toks, char *pool, kt_error *err)
{
    int nt = 0, pool_used = 0, i = 0;
    while (i < len) {
        char c = text[i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            i++;
            continue;
        }
        expr_token *t = &toks[nt];
        memset(t, 0, sizeof *t);
        t->col = i + 1;
        int start = i;
        if (is_digit(c) || (c == '.' && i + 1 < len && is_digit(text[i + 1]))) {
            i = lex_number(text, len, i, t, err);
        } else if (c == '\'' || c == '"') {
            i = lex_string(text, len, i, t, pool, &pool_used, err);
        } else if (is_ident_start(c)) {
            while (i < len && is_ident_char(text[i]))
                i++;
            t->kind = (uint8_t)keyword_kind(text + start, i - start);
        } else {
            int kind = -1;
            for (size_t k = 0; k < sizeof operators / sizeof operators[0]; k++) {
                size_t ol = strlen(operators[k].text);
                if ((size_t)(len - i) >= ol && memcmp(text + i, operators[k].text, ol) == 0) {
                    kind = operators[k].kind;
                    i += (int)ol;
                    break;
                }
            }
            if (kind < 0) {
                if ((unsigned char)c >= 0x20 && (unsigned char)c < 0x7f) {
                    kt_error_set(err, KT_ERR_BAD_EXPRESSION,
                                 "unexpected character '%c' at column %d", c, i + 1);
                    if (c == '!') /* C's negation */
                        kt_error_hint(err, "write \"not\"");
                    return -1;
                }
                return kt_error_set(err, KT_ERR_BAD_EXPRESSION,
                                    "unexpected byte 0x%02x at column %d", (unsigned char)c, i + 1);
            }
            t->kind = (uint8_t)kind;
        }
        if (i < 0)
            return -1;
        t->len = i - start;
        nt++;
    }
    memset(&toks[nt], 0, sizeof toks[nt]);
    toks[nt].kind = TOK_END;
    toks[nt].col = len + 1;
    return nt + 1;
}
