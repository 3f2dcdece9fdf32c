/* bench/bench_strategy — a strategy entry of `ktune bench --strategies`: a strategy name, or a
 * named variant STRATEGY/KEY=VALUE[/KEY=VALUE...] ("na2c/epsilon=1", "mindmap/gradient=false"),
 * the strategy run with those options: how issue 30's ablations run beside the strategy they
 * ablate. The entry is the row's label in every report. VALUE is read as JSON when it parses as
 * a number, true, false or null, else as a string ("critic=none").
 *
 * Call order: bench_strategy_check when the list is parsed (bench_parse_strategy_list), then per
 * run bench_strategy_searcher_new; bench_strategy_split when a caller wants the parts. */
#ifndef KT_BENCH_STRATEGY_H
#define KT_BENCH_STRATEGY_H

#include <stddef.h>

#include <jansson.h>

#include "core/error.h"
#include "search/searcher.h"

/* entry -> its strategy (into base, cap bytes) and its options (*options: a new JSON object the
 * caller frees, NULL for a plain name). 0, or -1 with why in msg. */
int bench_strategy_split(const char *entry, char *base, size_t cap, json_t **options, char *msg,
                         size_t mcap);
/* entry well formed, its strategy registered and each option one the strategy has (the values
 * are checked by searcher_new): 0, or -1 with a message naming --strategies in msg. */
int bench_strategy_check(const char *entry, char *msg, size_t mcap);
/* searcher_new of entry's strategy with entry's options; NULL with err (a bad entry:
 * KT_ERR_UNKNOWN_STRATEGY or KT_ERR_BAD_OPTION). */
searcher *bench_strategy_searcher_new(const char *entry, const space *sp, uint64_t seed,
                                      kt_error *err);
/* searcher_needs_surrogate of entry's strategy (0 for a malformed entry). */
int bench_strategy_needs_surrogate(const char *entry);
/* 1 when strategy (a registered name) has an option named name, else 0 with the accepted names in
 * list (cap bytes, ", "-separated, cut at cap). */
int bench_strategy_option_known(const char *strategy, const char *name, char *list, size_t cap);
/* 1 when entry is a named variant (has options), else 0. */
int bench_strategy_is_variant(const char *entry);

#endif
