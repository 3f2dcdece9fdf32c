/* search/searcher — every search strategy behind one ask/tell interface. Searchers never measure:
 * they propose configurations of a space and learn from results. Deterministic: the same space,
 * options, seed and sequence of ask/tell calls give the same proposals, which is how a job resumes
 * after a crash (its stored trials are re-fed in the same batches).
 *
 * Lifecycle: searcher_new -> (searcher_ask, searcher_tell)* -> searcher_free. The searcher borrows
 * the space (it must outlive the searcher) and copies what it needs from options. */
#ifndef KT_SEARCH_SEARCHER_H
#define KT_SEARCH_SEARCHER_H

#include <jansson.h>
#include <stdint.h>

#include "core/error.h"
#include "core/trial.h"
#include "space/space.h"

typedef struct searcher searcher;

/* name: a strategy from searcher_catalog_json(). options: JSON object or NULL; an unknown option or
 * a value of the wrong type or range is KT_ERR_BAD_OPTION naming the accepted options. An unknown
 * name is KT_ERR_UNKNOWN_STRATEGY whose hint lists the valid names. */
searcher *searcher_new(const char *name, const space *sp, const json_t *options, uint64_t seed,
                       kt_error *err);
/* Writes up to max (> 0) configurations never proposed before by this searcher; returns how many. 0
 * means the searcher has nothing more to propose (space exhausted or the strategy converged). */
int searcher_ask(searcher *s, config_id *out, int max);
/* Results for configurations this searcher proposed, in any order. */
void searcher_tell(searcher *s, const config_id *ids, const trial_result *r, int n);
void searcher_free(searcher *s);
const char *searcher_name(const searcher *s);

/* 1 if the strategy's proposals depend on told results, 0 if they do not (random, exhaustive: any
 * batch size gives the same sequence) or the name is unknown. */
int searcher_learns(const char *name);
/* 1 if name is a known strategy. */
int searcher_exists(const char *name);
/* Comma-separated strategy names, for hints ("random, exhaustive"). Static storage. */
const char *searcher_names(void);
/* [{"name": ..., "summary": ..., "options": {"opt": {"type":..., "default":...,
 * "description":...}}}] New reference. */
json_t *searcher_catalog_json(void);

#endif
