/* Unit tests of api/openapi: the OpenAPI document compiled into kt_api agrees with the routes
 * ktuned registers (both ways), every operation answers with schemas, every $ref resolves, POST and
 * DELETE carry the bearer token, the error codes are errors.def's, the POST /v1/tune schema states
 * what tune_request_parse enforces, and the handler serves the document. The examples are validated
 * against the schemas by tests/integration/test_openapi.py (python3-jsonschema), which also checks
 * real replies of a running ktuned. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/api_internal.h"
#include "api/handlers.h"
#include "api/openapi.h"
#include "api/tune_request.h"
#include "core/version.h"

static const char *const http_methods[] = {"get",     "put",  "post",  "delete", "patch",
                                           "options", "head", "trace", NULL};

static json_t *load_doc(void)
{
    size_t len = 0;
    const char *text = api_openapi_document(&len);
    assert_non_null(text);
    assert_int_equal(strlen(text), len);
    json_error_t jerr;
    json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!doc)
        fail_msg("openapi.json line %d: %s", jerr.line, jerr.text);
    return doc;
}

/* Follows a local "$ref" ("#/components/schemas/Job", JSON pointer escapes ~0 ~1) to its target;
 * a node without $ref is its own target. NULL when the reference does not resolve. */
static json_t *resolve(json_t *doc, json_t *node)
{
    for (int hops = 0; node && hops < 8; hops++) {
        const char *ref = json_string_value(json_object_get(node, "$ref"));
        if (!ref)
            return node;
        if (strncmp(ref, "#/", 2) != 0)
            return NULL;
        json_t *at = doc;
        char token[256];
        for (const char *p = ref + 2; at && *p;) {
            size_t n = strcspn(p, "/"), w = 0;
            for (size_t i = 0; i < n && w + 1 < sizeof token; i++, w++) {
                if (p[i] == '~' && i + 1 < n && (p[i + 1] == '0' || p[i + 1] == '1'))
                    token[w] = p[++i] == '0' ? '~' : '/';
                else
                    token[w] = p[i];
            }
            token[w] = '\0';
            at = json_object_get(at, token);
            p += n + (p[n] == '/');
        }
        node = at;
    }
    return NULL;
}

static int is_method(const char *key)
{
    for (int i = 0; http_methods[i]; i++) {
        if (strcmp(key, http_methods[i]) == 0)
            return 1;
    }
    return 0;
}

static void lower(const char *s, char *out, size_t cap)
{
    size_t i = 0;
    for (; s[i] && i + 1 < cap; i++)
        out[i] = (char)tolower((unsigned char)s[i]);
    out[i] = '\0';
}

static void every_route_is_documented(void **state)
{
    (void)state;
    json_t *doc = load_doc();
    json_t *paths = json_object_get(doc, "paths");
    int n = 0;
    for (const http_route *r = api_routes(); r->method; r++, n++) {
        char method[16];
        lower(r->method, method, sizeof method);
        if (!json_object_get(json_object_get(paths, r->pattern), method))
            fail_msg("route %s %s is registered but not in service/api/openapi.json", r->method,
                     r->pattern);
    }
    assert_true(n >= 14);
    json_decref(doc);
}

static int route_registered(const char *method, const char *pattern)
{
    for (const http_route *r = api_routes(); r->method; r++) {
        char m[16];
        lower(r->method, m, sizeof m);
        if (strcmp(m, method) == 0 && strcmp(r->pattern, pattern) == 0)
            return 1;
    }
    return 0;
}

static void every_operation_is_registered(void **state)
{
    (void)state;
    json_t *doc = load_doc();
    const char *path, *key;
    json_t *item, *op;
    json_object_foreach(json_object_get(doc, "paths"), path, item)
    {
        json_object_foreach(item, key, op)
        {
            if (is_method(key) && !route_registered(key, path))
                fail_msg("openapi.json documents %s %s, which routes.c does not register", key,
                         path);
        }
    }
    json_decref(doc);
}

/* Whether params (an array of parameter objects or $refs) declares a required path parameter. */
static int declares_path_param(json_t *doc, json_t *params, const char *name, size_t len)
{
    size_t i;
    json_t *p;
    json_array_foreach(params, i, p)
    {
        json_t *param = resolve(doc, p);
        const char *pname = json_string_value(json_object_get(param, "name"));
        const char *in = json_string_value(json_object_get(param, "in"));
        if (pname && in && strcmp(in, "path") == 0 && strlen(pname) == len &&
            strncmp(pname, name, len) == 0 && json_is_true(json_object_get(param, "required")))
            return 1;
    }
    return 0;
}

static void check_operation(json_t *doc, const char *path, json_t *item, const char *method,
                            json_t *op, json_t *seen_ids)
{
    const char *id = json_string_value(json_object_get(op, "operationId"));
    if (!id || !*id || json_object_get(seen_ids, id))
        fail_msg("%s %s: operationId missing or not unique", method, path);
    json_object_set_new(seen_ids, id, json_true());
    const char *summary = json_string_value(json_object_get(op, "summary"));
    if (!summary || !*summary || !json_string_value(json_object_get(op, "description")))
        fail_msg("%s %s: summary and description are needed", method, path);
    json_t *tags = json_object_get(op, "tags");
    if (json_array_size(tags) == 0)
        fail_msg("%s %s: no tags", method, path);
    size_t i;
    json_t *tag, *declared;
    json_array_foreach(tags, i, tag)
    {
        int found = 0;
        size_t k;
        json_array_foreach(json_object_get(doc, "tags"), k, declared)
        {
            found |= json_equal(json_object_get(declared, "name"), tag);
        }
        if (!found)
            fail_msg("%s %s: tag %s is not declared at the top", method, path,
                     json_string_value(tag));
    }
    /* Every {name} segment of the path is a declared, required path parameter. */
    for (const char *s = strchr(path, '{'); s; s = strchr(s + 1, '{')) {
        size_t len = strcspn(s + 1, "}");
        if (!declares_path_param(doc, json_object_get(item, "parameters"), s + 1, len) &&
            !declares_path_param(doc, json_object_get(op, "parameters"), s + 1, len))
            fail_msg("%s %s: path parameter %.*s is not declared", method, path, (int)len, s + 1);
    }
    json_t *responses = json_object_get(op, "responses");
    if (json_object_size(responses) == 0)
        fail_msg("%s %s: no responses", method, path);
    const char *status;
    json_t *resp;
    int success = 0;
    json_object_foreach(responses, status, resp)
    {
        json_t *r = resolve(doc, resp);
        if (strlen(status) != 3 || status[0] < '1' || status[0] > '5' || !r ||
            !json_string_value(json_object_get(r, "description")))
            fail_msg("%s %s: response %s needs a 3-digit status and a description", method, path,
                     status);
        success |= status[0] == '2';
        if (strcmp(status, "304") == 0)
            continue; /* answered without a body */
        json_t *content = json_object_get(r, "content");
        const char *media;
        json_t *mt;
        if (json_object_size(content) == 0)
            fail_msg("%s %s: response %s has no content", method, path, status);
        json_object_foreach(content, media, mt)
        {
            if (!json_is_object(json_object_get(mt, "schema")))
                fail_msg("%s %s: response %s %s has no schema", method, path, status, media);
        }
        /* Client errors all have the one error shape: the Error schema, or one that extends its
         * "error" member with more (BestMiss: a miss of GET /v1/best and its tune_on_miss). */
        json_t *schema = json_object_get(json_object_get(content, "application/json"), "schema");
        const char *ref = json_string_value(json_object_get(schema, "$ref"));
        json_t *shape = resolve(doc, schema);
        const char *inner = json_string_value(json_object_get(
            json_object_get(json_object_get(shape, "properties"), "error"), "$ref"));
        int extends = inner && strcmp(inner, "#/components/schemas/Error/properties/error") == 0;
        if (status[0] == '4' &&
            (!ref || (strcmp(ref, "#/components/schemas/Error") != 0 && !extends)))
            fail_msg("%s %s: response %s is not the Error schema", method, path, status);
    }
    if (!success)
        fail_msg("%s %s: no 2xx response", method, path);
}

static void operations_are_complete(void **state)
{
    (void)state;
    json_t *doc = load_doc();
    json_t *seen_ids = json_object();
    const char *path, *key;
    json_t *item, *op;
    int n = 0;
    json_object_foreach(json_object_get(doc, "paths"), path, item)
    {
        json_object_foreach(item, key, op)
        {
            if (is_method(key)) {
                check_operation(doc, path, item, key, op, seen_ids);
                n++;
            }
        }
    }
    assert_true(n >= 14);
    json_decref(seen_ids);
    json_decref(doc);
}

static void check_refs(json_t *doc, json_t *node, int *count)
{
    if (json_is_object(node)) {
        const char *key;
        json_t *v;
        json_object_foreach(node, key, v)
        {
            if (strcmp(key, "$ref") == 0) {
                (*count)++;
                if (!resolve(doc, node))
                    fail_msg("$ref %s does not resolve", json_string_value(v));
            } else {
                check_refs(doc, v, count);
            }
        }
    } else if (json_is_array(node)) {
        size_t i;
        json_t *v;
        json_array_foreach(node, i, v) check_refs(doc, v, count);
    }
}

static void refs_resolve(void **state)
{
    (void)state;
    json_t *doc = load_doc();
    int count = 0;
    check_refs(doc, doc, &count);
    assert_true(count > 20);
    /* The resolver itself: a good pointer resolves, a bad one does not. */
    json_t *good = json_pack("{s:s}", "$ref", "#/components/schemas/Error");
    json_t *bad = json_pack("{s:s}", "$ref", "#/components/schemas/Nope");
    assert_ptr_equal(
        resolve(doc, good),
        json_object_get(json_object_get(json_object_get(doc, "components"), "schemas"), "Error"));
    assert_null(resolve(doc, bad));
    json_decref(good);
    json_decref(bad);
    json_decref(doc);
}

/* api_authorize (api/tokens.c, routes.c): once a token exists every operation but /healthz and
 * /v1/openapi.json needs one; each names its scope (x-scope) and documents 401, and 403 where a
 * narrower token can be refused. */
static void tokens_guard_operations(void **state)
{
    (void)state;
    json_t *doc = load_doc();
    json_t *scheme = json_object_get(
        json_object_get(json_object_get(doc, "components"), "securitySchemes"), "apiToken");
    assert_string_equal(json_string_value(json_object_get(scheme, "type")), "http");
    assert_string_equal(json_string_value(json_object_get(scheme, "scheme")), "bearer");
    assert_null(json_object_get(doc, "security"));
    const char *path, *key;
    json_t *item, *op;
    int admin = 0;
    json_object_foreach(json_object_get(doc, "paths"), path, item)
    {
        json_object_foreach(item, key, op)
        {
            if (!is_method(key))
                continue;
            int open = strcmp(path, "/healthz") == 0 || strcmp(path, "/v1/openapi.json") == 0;
            json_t *sec = json_object_get(op, "security");
            int guarded = json_array_size(sec) == 1 &&
                          json_object_get(json_array_get(sec, 0), "apiToken") != NULL;
            if (open == guarded)
                fail_msg("%s %s: security must be [{\"apiToken\": []}] on every operation but "
                         "/healthz and /v1/openapi.json",
                         key, path);
            const char *scope = json_string_value(json_object_get(op, "x-scope"));
            if (guarded &&
                (!scope || (strcmp(scope, "read") != 0 && strcmp(scope, "tune") != 0 &&
                            strcmp(scope, "kernels") != 0 && strcmp(scope, "admin") != 0)))
                fail_msg("%s %s: a guarded operation names its x-scope", key, path);
            if (guarded && strcmp(key, "get") != 0 && strcmp(scope, "read") == 0)
                fail_msg("%s %s: a write needs more than scope read", key, path);
            admin += guarded && strcmp(scope, "admin") == 0;
            json_t *responses = json_object_get(op, "responses");
            if (guarded && !json_object_get(responses, "401"))
                fail_msg("%s %s: a guarded operation documents 401", key, path);
            /* 403: a token of too narrow a scope (GET /v1/best?tune_on_miss needs tune). */
            if (guarded && (strcmp(scope, "read") != 0 || strcmp(path, "/v1/best") == 0) &&
                !json_object_get(responses, "403"))
                fail_msg("%s %s: an operation beyond scope read documents 403", key, path);
        }
    }
    assert_true(admin >= 5); /* models, the three token routes, removing imports */
    json_decref(doc);
}

static void error_codes_match_errors_def(void **state)
{
    (void)state;
    json_t *doc = load_doc();
    json_t *schemas = json_object_get(json_object_get(doc, "components"), "schemas");
    json_t *codes = json_object_get(json_object_get(schemas, "ErrorCode"), "enum");
    assert_int_equal(json_array_size(codes), KT_ERR__COUNT - 1); /* all but "ok" */
    for (int c = 1; c < KT_ERR__COUNT; c++) {
        const char *name = kt_error_code_name((kt_code)c);
        int found = 0;
        size_t i;
        json_t *v;
        json_array_foreach(codes, i, v) found |= strcmp(json_string_value(v), name) == 0;
        if (!found)
            fail_msg("error code %s of errors.def is not in ErrorCode", name);
    }
    json_decref(doc);
}

/* --- the POST /v1/tune schema against tune_request_parse ---------------------------------------
 */

static kt_config default_limits(void)
{
    kt_config cfg;
    kt_error err;
    char arg0[] = "test";
    char *argv[] = {arg0, NULL};
    unsetenv("KTUNE_MAX_EVALUATIONS");
    unsetenv("KTUNE_MAX_SECONDS");
    assert_int_equal(config_parse(&cfg, 1, argv, NULL, &err), 0);
    return cfg;
}

/* Parses body (a new reference, consumed) with ktuned's default limits; returns the error code. */
static kt_code parse_body(json_t *body, tune_request *t)
{
    kt_config cfg = default_limits();
    kt_error err;
    kt_error_clear(&err);
    assert_non_null(body);
    int rc = tune_request_parse(&cfg, body, t, &err);
    json_decref(body); /* only numbers and codes are looked at afterwards */
    return rc == 0 ? KT_OK : err.code;
}

static json_t *schema_at(json_t *doc, const char *name)
{
    json_t *s =
        json_object_get(json_object_get(json_object_get(doc, "components"), "schemas"), name);
    assert_non_null(s);
    return s;
}

static json_t *minimal_body(void)
{
    return json_pack("{s:s, s:s}", "kernel", "k", "device", "d");
}

static void tune_fields_match_the_parser(void **state)
{
    (void)state;
    json_t *doc = load_doc();
    json_t *req = schema_at(doc, "TuneRequest");
    json_t *props = json_object_get(req, "properties");
    tune_request t;
    assert_true(json_is_false(json_object_get(req, "additionalProperties")));
    assert_int_equal(parse_body(minimal_body(), &t), KT_OK);
    /* Each documented optional field is accepted (null counts as absent, as documented). */
    const char *key;
    json_t *p;
    json_object_foreach(props, key, p)
    {
        if (strcmp(key, "kernel") == 0 || strcmp(key, "device") == 0)
            continue;
        json_t *body = minimal_body();
        json_object_set_new(body, key, json_null());
        if (parse_body(body, &t) != KT_OK)
            fail_msg("documented field %s: null is refused", key);
    }
    /* The required fields are the ones the parser asks for. */
    json_t *required = json_object_get(req, "required");
    assert_int_equal(json_array_size(required), 2);
    size_t i;
    json_t *r;
    json_array_foreach(required, i, r)
    {
        json_t *body = minimal_body();
        json_object_del(body, json_string_value(r));
        assert_int_equal(parse_body(body, &t), KT_ERR_MISSING_FIELD);
    }
    /* A field the document does not list is refused. */
    json_t *body = minimal_body();
    json_object_set_new(body, "not_documented", json_integer(1));
    assert_int_equal(parse_body(body, &t), KT_ERR_UNKNOWN_FIELD);
    json_decref(doc);
}

static void tune_limits_and_defaults_match_the_parser(void **state)
{
    (void)state;
    json_t *doc = load_doc();
    json_t *props = json_object_get(schema_at(doc, "TuneRequest"), "properties");
    tune_request t;
    /* Names: 1 to maxLength bytes. */
    json_t *kernel = json_object_get(props, "kernel");
    json_int_t max_len = json_integer_value(json_object_get(kernel, "maxLength"));
    assert_int_equal(max_len, API_MAX_NAME);
    assert_int_equal(json_integer_value(json_object_get(kernel, "minLength")), 1);
    char *name = calloc((size_t)max_len + 2, 1);
    memset(name, 'x', (size_t)max_len);
    json_t *body = minimal_body();
    json_object_set_new(body, "kernel", json_string(name));
    assert_int_equal(parse_body(body, &t), KT_OK);
    name[max_len] = 'x';
    body = minimal_body();
    json_object_set_new(body, "device", json_string(name));
    assert_int_equal(parse_body(body, &t), KT_ERR_OUT_OF_RANGE);
    body = minimal_body();
    json_object_set_new(body, "strategy", json_string(name));
    assert_int_equal(parse_body(body, &t), KT_ERR_OUT_OF_RANGE);
    free(name);
    /* Defaults. */
    assert_int_equal(parse_body(minimal_body(), &t), KT_OK);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(props, "strategy"), "default")),
        TUNE_DEFAULT_STRATEGY);
    assert_string_equal(t.strategy, TUNE_DEFAULT_STRATEGY);
    json_t *budget_default = json_object_get(json_object_get(props, "budget"), "default");
    assert_int_equal(json_object_size(budget_default), 1);
    assert_int_equal(json_integer_value(json_object_get(budget_default, "evaluations")),
                     TUNE_DEFAULT_EVALUATIONS);
    assert_int_equal(t.evaluations, TUNE_DEFAULT_EVALUATIONS);
    /* Seed: 0 to INT64_MAX, as an integer or its decimal text (issue 31). */
    json_t *seed_of = json_object_get(json_object_get(props, "seed"), "oneOf");
    json_t *seed = json_array_get(seed_of, 0);
    assert_int_equal(json_integer_value(json_object_get(seed, "minimum")), 0);
    assert_true(json_integer_value(json_object_get(seed, "maximum")) == INT64_MAX);
    assert_string_equal(json_string_value(json_object_get(json_array_get(seed_of, 1), "pattern")),
                        "^[0-9]{1,19}$");
    body = minimal_body();
    json_object_set_new(body, "seed", json_string("9223372036854775807"));
    assert_int_equal(parse_body(body, &t), KT_OK);
    assert_true(t.seed == (uint64_t)INT64_MAX);
    body = minimal_body();
    json_object_set_new(body, "seed", json_integer(INT64_MAX));
    assert_int_equal(parse_body(body, &t), KT_OK);
    assert_true(t.seed == (uint64_t)INT64_MAX);
    body = minimal_body();
    json_object_set_new(body, "seed", json_integer(-1));
    assert_int_equal(parse_body(body, &t), KT_ERR_WRONG_TYPE);
    json_decref(doc);
}

static kt_code parse_budget(json_t *budget)
{
    tune_request t;
    json_t *body = minimal_body();
    json_object_set_new(body, "budget", budget);
    return parse_body(body, &t);
}

static void budget_bounds_match_the_parser(void **state)
{
    (void)state;
    json_t *doc = load_doc();
    kt_config cfg = default_limits();
    json_t *budget = schema_at(doc, "Budget");
    json_t *props = json_object_get(budget, "properties");
    assert_int_equal(json_object_size(props), 2);
    assert_true(json_is_false(json_object_get(budget, "additionalProperties")));
    json_t *ev = json_object_get(props, "evaluations");
    json_int_t ev_min = json_integer_value(json_object_get(ev, "minimum"));
    json_int_t ev_max = json_integer_value(json_object_get(ev, "maximum"));
    assert_int_equal(ev_min, 1);
    assert_int_equal(ev_max, cfg.max_evaluations);
    assert_int_equal(parse_budget(json_pack("{s:I}", "evaluations", ev_min)), KT_OK);
    assert_int_equal(parse_budget(json_pack("{s:I}", "evaluations", ev_max)), KT_OK);
    assert_int_equal(parse_budget(json_pack("{s:I}", "evaluations", ev_min - 1)),
                     KT_ERR_OUT_OF_RANGE);
    assert_int_equal(parse_budget(json_pack("{s:I}", "evaluations", ev_max + 1)),
                     KT_ERR_BUDGET_TOO_LARGE);
    json_t *sec = json_object_get(props, "seconds");
    double sec_max = json_number_value(json_object_get(sec, "maximum"));
    double sec_min = json_number_value(json_object_get(sec, "minimum"));
    assert_true(sec_min == TUNE_MIN_SECONDS);
    assert_true(sec_max == cfg.max_seconds);
    assert_int_equal(parse_budget(json_pack("{s:f}", "seconds", sec_max)), KT_OK);
    assert_int_equal(parse_budget(json_pack("{s:f}", "seconds", sec_min)), KT_OK);
    assert_int_equal(parse_budget(json_pack("{s:f}", "seconds", sec_min * 0.9)),
                     KT_ERR_OUT_OF_RANGE);
    assert_int_equal(parse_budget(json_pack("{s:f}", "seconds", 0.0)), KT_ERR_OUT_OF_RANGE);
    assert_int_equal(parse_budget(json_pack("{s:f}", "seconds", sec_max * 1.001)),
                     KT_ERR_BUDGET_TOO_LARGE);
    /* anyOf: evaluations or seconds; null counts as absent. */
    assert_int_equal(json_array_size(json_object_get(budget, "anyOf")), 2);
    assert_int_equal(parse_budget(json_object()), KT_ERR_MISSING_FIELD);
    assert_int_equal(parse_budget(json_pack("{s:n, s:n}", "evaluations", "seconds")),
                     KT_ERR_MISSING_FIELD);
    assert_int_equal(parse_budget(json_pack("{s:n, s:i}", "evaluations", "seconds", 5)), KT_OK);
    json_decref(doc);
}

/* --- the handler -------------------------------------------------------------------------------
 */

static void handler_serves_the_document(void **state)
{
    (void)state;
    http_request req;
    http_response res;
    memset(&req, 0, sizeof req); /* no connection: no query, no If-None-Match */
    memset(&res, 0, sizeof res);
    req.method = "GET";
    req.path = "/v1/openapi.json";
    api_openapi(NULL, &req, &res);
    assert_int_equal(res.status, 200);
    assert_string_equal(res.content_type, "application/json");
    size_t len = 0;
    const char *doc = api_openapi_document(&len);
    assert_int_equal(res.body_len, len);
    assert_memory_equal(res.body, doc, len);
    const char *etag = api_openapi_etag();
    assert_int_equal(strlen(etag), 18);
    assert_true(etag[0] == '"' && etag[17] == '"');
    for (int i = 1; i < 17; i++)
        assert_true(isxdigit((unsigned char)etag[i]));
    char line[64];
    snprintf(line, sizeof line, "ETag: %s\r\n", etag);
    assert_non_null(res.extra_headers);
    assert_non_null(strstr(res.extra_headers, line));
    assert_non_null(strstr(res.extra_headers, "Cache-Control: public, max-age="));
    free(res.content_type);
    free(res.body);
    free(res.extra_headers);
}

static void document_names_this_version(void **state)
{
    (void)state;
    json_t *doc = load_doc();
    assert_string_equal(json_string_value(json_object_get(doc, "openapi")), "3.1.0");
    assert_string_equal(json_string_value(json_object_get(json_object_get(doc, "info"), "version")),
                        KTUNE_VERSION);
    json_decref(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(document_names_this_version),
        cmocka_unit_test(every_route_is_documented),
        cmocka_unit_test(every_operation_is_registered),
        cmocka_unit_test(operations_are_complete),
        cmocka_unit_test(refs_resolve),
        cmocka_unit_test(tokens_guard_operations),
        cmocka_unit_test(error_codes_match_errors_def),
        cmocka_unit_test(tune_fields_match_the_parser),
        cmocka_unit_test(tune_limits_and_defaults_match_the_parser),
        cmocka_unit_test(budget_bounds_match_the_parser),
        cmocka_unit_test(handler_serves_the_document),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
