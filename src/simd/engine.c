/* engine.c: this level's table of entry points (simd/engine.h). Compiled
 * once per level, like the rest of the engine: each name below is the
 * level's own copy (simd/leveled.h). */
#include "simd/engine.h"

#define PROX_ENGINE_INIT(R, ret, member, fn, params, args) fn,

const prox_engine prox_engine_table = {
    PROX_LEVEL_NAME,
    PROX_LEVEL,
    PROX_ENGINE_ENTRIES(PROX_ENGINE_INIT)
};
