/* dispatch.c: which SIMD level the process runs, and the plain-named
 * forwarders through which code outside the engine reaches it
 * (simd/engine.h).
 *
 * The level is chosen once, on first use: the highest level this build
 * has and the CPU supports, unless the environment variable PROX_SIMD
 * names one (scalar, sse2, avx2, avx512, neon), which must be both built
 * and supported. Every call after that runs the same level, so results
 * and their order never change within a process; the levels give the
 * same bits anyway (the tests check every level against brute force). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "simd/engine.h"
#include "simd/simd.h"

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

/* Each level this build compiled (CMakeLists.txt, PROX_SIMD_LEVELS), lowest first. */
#define PROX_LEVEL_TABLE(suffix) PROX_LEVELED_WITH(prox_engine_table, suffix)
#ifdef PROX_HAVE_LEVEL_native
extern const prox_engine PROX_LEVEL_TABLE(native);
#endif
#ifdef PROX_HAVE_LEVEL_scalar
extern const prox_engine PROX_LEVEL_TABLE(scalar);
#endif
#ifdef PROX_HAVE_LEVEL_sse2
extern const prox_engine PROX_LEVEL_TABLE(sse2);
#endif
#ifdef PROX_HAVE_LEVEL_avx2
extern const prox_engine PROX_LEVEL_TABLE(avx2);
#endif
#ifdef PROX_HAVE_LEVEL_avx512
extern const prox_engine PROX_LEVEL_TABLE(avx512);
#endif
#ifdef PROX_HAVE_LEVEL_neon
extern const prox_engine PROX_LEVEL_TABLE(neon);
#endif

static const prox_engine *const built[] = {
#ifdef PROX_HAVE_LEVEL_native
    &PROX_LEVEL_TABLE(native),
#endif
#ifdef PROX_HAVE_LEVEL_scalar
    &PROX_LEVEL_TABLE(scalar),
#endif
#ifdef PROX_HAVE_LEVEL_sse2
    &PROX_LEVEL_TABLE(sse2),
#endif
#ifdef PROX_HAVE_LEVEL_avx2
    &PROX_LEVEL_TABLE(avx2),
#endif
#ifdef PROX_HAVE_LEVEL_avx512
    &PROX_LEVEL_TABLE(avx512),
#endif
#ifdef PROX_HAVE_LEVEL_neon
    &PROX_LEVEL_TABLE(neon),
#endif
};
enum { BUILT = (int)(sizeof built / sizeof built[0]) };

/* Whether this CPU (and its OS, for the wider registers' state) runs the
 * level's instructions. */
static bool cpu_runs(int level)
{
    switch (level) {
    case PROX_LEVEL_SCALAR:
        return true;
#if defined(__x86_64__) || defined(__i386__)
    case PROX_LEVEL_SSE2:
        return __builtin_cpu_supports("sse2");
    case PROX_LEVEL_AVX2:
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2") &&
               __builtin_cpu_supports("fma") && __builtin_cpu_supports("popcnt");
    case PROX_LEVEL_AVX512:
        return cpu_runs(PROX_LEVEL_AVX2) && __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512cd");
#endif
#if defined(__aarch64__)
    case PROX_LEVEL_NEON:
#if defined(__linux__) && defined(HWCAP_ASIMD)
        return (getauxval(AT_HWCAP) & HWCAP_ASIMD) != 0;
#else
        return true; /* Advanced SIMD is part of every AArch64 core */
#endif
#endif
    default:
        return false;
    }
}

/* The choice, made once (the first caller's; a race only repeats it and
 * reaches the same answer). */
static _Atomic(const prox_engine *) chosen;
static char problem[256]; /* why PROX_SIMD could not be honoured, or "" */

static void list_levels(char *out, size_t room, bool supported_only)
{
    out[0] = '\0';
    for (int k = 0; k < BUILT; k++) {
        if (supported_only && !cpu_runs(built[k]->level))
            continue;
        size_t used = strlen(out);
        snprintf(out + used, room - used, "%s%s", used ? ", " : "", built[k]->name);
    }
}

static const prox_engine *best_supported(void)
{
    const prox_engine *best = built[0];
    for (int k = 0; k < BUILT; k++)
        if (cpu_runs(built[k]->level))
            best = built[k];
    return best;
}

static const prox_engine *choose(void)
{
    const char *asked = getenv("PROX_SIMD");
    if (!asked || !*asked)
        return best_supported();
    char names[128];
    for (int k = 0; k < BUILT; k++) {
        if (strcmp(asked, built[k]->name) != 0)
            continue;
        if (cpu_runs(built[k]->level))
            return built[k];
        list_levels(names, sizeof names, true);
        snprintf(problem, sizeof problem,
                 "PROX_SIMD=%s: this CPU lacks that level's instructions (it runs: %s)", asked,
                 names);
        return best_supported();
    }
    list_levels(names, sizeof names, false);
    snprintf(problem, sizeof problem, "PROX_SIMD=%.32s: not a level this build has (it has: %s)",
             asked, names);
    return best_supported();
}

const prox_engine *prox_engine_get(void)
{
    const prox_engine *e = atomic_load_explicit(&chosen, memory_order_acquire);
    if (!e) {
        e = choose();
        atomic_store_explicit(&chosen, e, memory_order_release);
    }
    return e;
}

const char *prox_simd_level(void)
{
    return prox_engine_get()->name;
}

prox_status prox_simd_check(void)
{
    prox_engine_get();
    return problem[0] ? prox_fail(PROX_ERR_INVALID, "%s", problem) : PROX_OK;
}

/* The forwarders: each entry point under its plain name, for the code
 * outside the engine. */
#define PROX_ENGINE_FORWARD(R, ret, member, fn, params, args) \
    ret fn params                                             \
    {                                                         \
        R prox_engine_get()->member args;                     \
    }
PROX_ENGINE_ENTRIES(PROX_ENGINE_FORWARD)
