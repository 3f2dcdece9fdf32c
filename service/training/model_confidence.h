/* training/model_confidence — how far a predictor's answers may be trusted (issue 31): the facts a
 * model reports (the problems it was trained and evaluated on, its held-out accuracy), whether it
 * is weak (below ktuned's minimum: --model-min-problems, --model-min-accuracy), and how far a
 * problem asked for is from the nearest problem the model was trained on. A weak model stays
 * `ready` (warm starts still use its proposals) but GET /v1/best serves its predictions only to a
 * caller that says ?accept=weak.
 *
 * Pure functions over the model row's stored JSON (training, metrics: training/README.md); used
 * by the model cache (each prediction's "confidence") and the models API (each model's). Every
 * argument is borrowed; each returns a new reference (NULL: out of memory). */
#ifndef KT_TRAINING_MODEL_CONFIDENCE_H
#define KT_TRAINING_MODEL_CONFIDENCE_H

#include <jansson.h>

/* ktuned's minimum for a model to be served without ?accept=weak. */
typedef struct model_minimum {
    int problems;    /* trained-on problems at least (--model-min-problems) */
    double accuracy; /* held-out accuracy at least (--model-min-accuracy); 0: none asked */
} model_minimum;

/* The defaults of the two options. */
#define MODEL_MIN_PROBLEMS_DEFAULT 8
#define MODEL_MIN_ACCURACY_DEFAULT 0.5

/* The held-out top-1 within this factor of the problem's best measured time counts as accurate
 * (model/predictor.h's top1_within_1_10). */
#define MODEL_ACCURATE_RATIO 1.10

/* {"train_problems", "test_problems", "accuracy" (the share of held-out problems whose predicted
 * configuration was measured within 1.10x of their best; null when no held-out problem measured
 * it), "measured" (held-out problems that measured it), "param_accuracy", "weak", "why" (present
 * when weak: every reason, in words), "minimum": {"problems", "accuracy"}}. */
json_t *model_confidence_json(const json_t *training, const json_t *metrics,
                              const model_minimum *min);

/* The trained-on problem (an element of trained_on, an array of problem objects) nearest to
 * problem in core/problem_distance.h's distance: {"problem", "distance"}; JSON null when none is
 * comparable (or the model's row lists none: one trained before issue 31). */
json_t *model_confidence_nearest(const json_t *trained_on, const json_t *problem);

#endif
