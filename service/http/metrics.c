/* Request counters keyed by (route pattern, method, status) in a fixed table, plus the time spent
 * per route. Labels come from finite sets (patterns, a fixed list of methods, statuses 100-599), so
 * the table stays small; if it ever fills, further label sets are summed into one overflow line. */
#include "http/http_internal.h"

#include <stdlib.h>
#include <string.h>

#define HTTP_METRICS_TEXT_MAX (16u * 1024 * 1024) /* the table is bounded; this is far above it */

static const char *const method_names[] = {"GET",   "HEAD",   "POST",    "PUT",
                                           "PATCH", "DELETE", "OPTIONS", "OTHER"};
#define N_METHODS ((int)(sizeof method_names / sizeof method_names[0]))

static int method_id(const char *method)
{
    for (int i = 0; i < N_METHODS - 1; i++)
        if (method && strcmp(method, method_names[i]) == 0)
            return i;
    return N_METHODS - 1;
}

int http_metrics_init(http_metrics *m, const http_route *routes, int n_routes)
{
    int rc = -1;
    memset(m, 0, sizeof *m);
    size_t slots = (size_t)n_routes + 2;
    m->route_names = calloc(slots, sizeof *m->route_names);
    m->route_of = calloc((size_t)n_routes + 1, sizeof *m->route_of);
    m->duration_ns = calloc(slots, sizeof *m->duration_ns);
    m->route_requests = calloc(slots, sizeof *m->route_requests);
    if (!m->route_names || !m->route_of || !m->duration_ns || !m->route_requests)
        goto out;
    /* Routes sharing a pattern (GET and POST /v1/jobs) share one label. */
    for (int i = 0; i < n_routes; i++) {
        int k = 0;
        while (k < m->n_route_names && strcmp(m->route_names[k], routes[i].pattern) != 0)
            k++;
        if (k == m->n_route_names)
            m->route_names[m->n_route_names++] = routes[i].pattern;
        m->route_of[i] = k;
    }
    m->route_names[m->n_route_names++] = "static";
    m->route_names[m->n_route_names++] = "unmatched";
    if (pthread_mutex_init(&m->lock, NULL) != 0)
        goto out;
    rc = 0;
out:
    if (rc != 0) {
        free(m->route_names);
        free(m->route_of);
        free(m->duration_ns);
        free(m->route_requests);
        memset(m, 0, sizeof *m);
    }
    return rc;
}

void http_metrics_destroy(http_metrics *m)
{
    if (!m->route_names)
        return;
    pthread_mutex_destroy(&m->lock);
    free(m->route_names);
    free(m->route_of);
    free(m->duration_ns);
    free(m->route_requests);
    memset(m, 0, sizeof *m);
}

void http_metrics_count(http_metrics *m, int route_index, const char *method, int status,
                        uint64_t duration_ns)
{
    int rid;
    if (route_index == HTTP_ROUTE_STATIC)
        rid = m->n_route_names - 2;
    else if (route_index < 0)
        rid = m->n_route_names - 1;
    else
        rid = m->route_of[route_index];
    int mid = method_id(method);
    pthread_mutex_lock(&m->lock);
    m->total++;
    m->route_requests[rid]++;
    m->duration_ns[rid] += duration_ns;
    int i = 0;
    while (i < m->n_entries && !(m->entries[i].route_id == rid && m->entries[i].method_id == mid &&
                                 m->entries[i].status == status))
        i++;
    if (i < m->n_entries) {
        m->entries[i].count++;
    } else if (m->n_entries < HTTP_METRICS_MAX_ENTRIES) {
        m->entries[i] = (http_metric_entry){rid, mid, status, 1};
        m->n_entries++;
    } else {
        m->overflow++;
    }
    pthread_mutex_unlock(&m->lock);
}

static int entry_cmp(const void *a, const void *b)
{
    const http_metric_entry *x = a, *y = b;
    if (x->route_id != y->route_id)
        return x->route_id < y->route_id ? -1 : 1;
    if (x->method_id != y->method_id)
        return x->method_id < y->method_id ? -1 : 1;
    return (x->status > y->status) - (x->status < y->status);
}

/* Prometheus label values escape backslash, double quote and newline. */
static void append_label(strbuf *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\' || *s == '"')
            strbuf_appendf(b, "\\%c", *s);
        else if (*s == '\n')
            strbuf_append(b, "\\n", 2);
        else
            strbuf_append(b, s, 1);
    }
}

char *http_metrics_render(http_metrics *m)
{
    strbuf b;
    strbuf_init(&b, HTTP_METRICS_TEXT_MAX);
    char *text = NULL;
    int n_names = m->n_route_names;
    http_metric_entry *snap = malloc(sizeof m->entries);
    uint64_t *dur = calloc((size_t)n_names, sizeof *dur);
    uint64_t *reqs = calloc((size_t)n_names, sizeof *reqs);
    if (!snap || !dur || !reqs)
        goto out;
    /* Copy under the lock, format outside it: requests are not held up by a slow reader. */
    pthread_mutex_lock(&m->lock);
    int n = m->n_entries;
    uint64_t overflow = m->overflow;
    memcpy(snap, m->entries, (size_t)n * sizeof *snap);
    memcpy(dur, m->duration_ns, (size_t)n_names * sizeof *dur);
    memcpy(reqs, m->route_requests, (size_t)n_names * sizeof *reqs);
    pthread_mutex_unlock(&m->lock);
    qsort(snap, (size_t)n, sizeof *snap, entry_cmp);

    strbuf_appendf(&b, "# HELP ktune_http_requests_total HTTP requests answered, by route "
                       "pattern, method and status.\n"
                       "# TYPE ktune_http_requests_total counter\n");
    for (int i = 0; i < n; i++) {
        strbuf_appendf(&b, "ktune_http_requests_total{route=\"");
        append_label(&b, m->route_names[snap[i].route_id]);
        strbuf_appendf(&b, "\",method=\"%s\",status=\"%d\"} %llu\n",
                       method_names[snap[i].method_id], snap[i].status,
                       (unsigned long long)snap[i].count);
    }
    if (overflow)
        strbuf_appendf(&b,
                       "ktune_http_requests_total{route=\"overflow\",method=\"OTHER\","
                       "status=\"0\"} %llu\n",
                       (unsigned long long)overflow);
    strbuf_appendf(&b, "# HELP ktune_http_request_duration_seconds_sum Time spent answering HTTP "
                       "requests, by route pattern.\n"
                       "# TYPE ktune_http_request_duration_seconds_sum counter\n");
    for (int r = 0; r < n_names; r++) {
        if (!reqs[r])
            continue;
        strbuf_appendf(&b, "ktune_http_request_duration_seconds_sum{route=\"");
        append_label(&b, m->route_names[r]);
        strbuf_appendf(&b, "\"} %llu.%09llu\n", (unsigned long long)(dur[r] / 1000000000u),
                       (unsigned long long)(dur[r] % 1000000000u));
    }
    text = strbuf_take(&b);
out:
    strbuf_release(&b);
    free(snap);
    free(dur);
    free(reqs);
    return text;
}
