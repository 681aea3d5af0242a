/* closed_forms.h: inputs whose pair counts are known in closed form, so the
 * expectation does not come from any search code at all. */
#ifndef PROX_TESTS_CLOSED_FORMS_H
#define PROX_TESTS_CLOSED_FORMS_H

#include "check.h"

/* Integer lattices (open and periodic, r = 1 and r = 1.5), points at exactly
 * the radius and just beyond it, all pairs under a huge radius, and minimum
 * image pairs across a periodic boundary; f64 and f32. */
void check_closed_forms(const algo_config *config);

#endif
