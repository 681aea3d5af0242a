/* prox: fixed-radius neighbour search and broad-phase collision detection.
 *
 * core.h: the vocabulary every part of the library shares: status codes and
 * error messages, the allocator hook, typed strided point views, the index
 * type and the small per-call statistics record.
 *
 * Conventions (all public headers):
 *   - every fallible call returns a prox_status; on failure a message naming
 *     what went wrong (and which point, which axis) is available from
 *     prox_last_error() in the calling thread;
 *   - the library never prints, never exits and never aborts on bad data
 *     (asserts only guard against programmer errors such as NULL objects);
 *   - options come in *_desc structs obtained from prox_default_*() and then
 *     edited, so that adding a field never breaks a caller;
 *   - radii are true radii (never squared); two points at distance exactly r
 *     are neighbours: the test is the closed ball, dx*dx + dy*dy [+ dz*dz]
 *     <= r*r evaluated in double precision.
 */
#ifndef PROX_CORE_H
#define PROX_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* PROX_API marks the library's public functions: the only symbols the
 * shared library exports (it is built with -fvisibility=hidden, so every
 * internal function stays private to it). */
#ifdef PROX_API
/* already defined: the library's per-level copies keep theirs hidden */
#elif defined(_WIN32) && defined(PROX_SHARED_BUILD)
#define PROX_API __declspec(dllexport)
#elif defined(__GNUC__)
#define PROX_API __attribute__((visibility("default")))
#else
#define PROX_API
#endif

#define PROX_VERSION_MAJOR 0
#define PROX_VERSION_MINOR 1
#define PROX_VERSION_PATCH 0
#define PROX_VERSION_STRING "0.1.0"

/* Index of a point (or box) in the caller's array. 32 bits keep pair
 * buffers at 8 bytes per pair; counts and offsets are 64-bit. */
typedef uint32_t prox_index;
#define PROX_MAX_POINTS ((int64_t)UINT32_MAX)

typedef enum prox_status {
    PROX_OK = 0,
    PROX_ERR_INVALID = 1,   /* bad argument or option: radius <= 0, dim not 2/3, ... */
    PROX_ERR_DATA = 2,      /* bad data: NaN or infinite coordinate, ... */
    PROX_ERR_RANGE = 3,     /* data too large to represent: too many cells, too many points */
    PROX_ERR_NO_MEMORY = 4, /* an allocation failed */
    PROX_STOPPED = 5,       /* a callback asked to stop early (not an error) */
} prox_status;

/* "ok", "invalid argument", ... : a short constant name for a status. */
PROX_API const char *prox_status_string(prox_status status);

/* The message of the last failed call made by this thread ("" if none). It
 * stays valid until the next failing call in the same thread. */
PROX_API const char *prox_last_error(void);

/* Allocator hook. A zeroed struct (or a NULL pointer wherever one is
 * accepted) means malloc/free. alloc must return memory aligned for any
 * scalar type, or NULL on failure; free(NULL) must be harmless. With
 * threads != 1 the hook is called from several threads at once: it must be
 * thread-safe. */
typedef struct prox_allocator {
    void *(*alloc)(size_t size, void *user);
    void (*free)(void *ptr, void *user);
    void *user;
} prox_allocator;

typedef enum prox_scalar {
    PROX_F64 = 0,
    PROX_F32 = 1,
} prox_scalar;

/* A read-only view of the caller's points: coordinate k of point i is the
 * prox_scalar at (const char *)axis[k] + i * stride. Covers packed arrays,
 * arrays of particle structs (AoS) and separate x/y/z arrays (SoA); any
 * stride works, zero and negative ones included. Views are read during a
 * call and never kept. */
typedef struct prox_points {
    const void *axis[3]; /* address of point 0's x, y, z (z unused in 2D) */
    ptrdiff_t stride;    /* bytes from one point to the next */
    int64_t count;       /* number of points, 0 .. PROX_MAX_POINTS */
    int dim;             /* 2 or 3 */
    prox_scalar scalar;  /* PROX_F64 or PROX_F32 */
} prox_points;

/* Packed x,y[,z],x,y[,z],... */
PROX_API prox_points prox_points_f64(const double *xyz, int64_t count, int dim);
PROX_API prox_points prox_points_f32(const float *xyz, int64_t count, int dim);
/* Structs or interleaved data: first = address of point 0's x; the other
 * coordinates follow it contiguously; stride in bytes. */
PROX_API prox_points prox_points_strided(const void *first, int64_t count, int dim,
                                prox_scalar scalar, ptrdiff_t stride);
/* Separate arrays per axis (z may be NULL when dim == 2). */
PROX_API prox_points prox_points_soa(const void *x, const void *y, const void *z,
                            int64_t count, int dim, prox_scalar scalar);

/* Coordinate `axis` of point i, widened to double. */
static inline double prox_points_get(const prox_points *p, int64_t i, int axis)
{
    const char *at = (const char *)p->axis[axis] + i * p->stride;
    return p->scalar == PROX_F64 ? *(const double *)(const void *)at
                                 : (double)*(const float *)(const void *)at;
}

/* Cheap figures every query reports (pass NULL if not wanted). */
typedef struct prox_stats {
    int64_t pairs;         /* pairs found: unordered pairs for self queries (each once, also
                              for full lists), (query, point) pairs for queries; with a
                              callback that stopped, the pairs delivered */
    int64_t candidates;    /* exact distance tests performed (a pair tested from both
                              sides counts twice) */
    int64_t cells;         /* occupied cells in the structure */
    int64_t cells_visited; /* cell lookups made by the query */
    int64_t relocated;     /* update: points that changed cell */
    int64_t bytes;         /* memory the structure held after the call (for one-shot calls:
                              the structure built for the call, released since) */
    int64_t kept_bytes;    /* memory the object keeps for its next query (pair arrays,
                              scratch), beside `bytes`; prox_grid_trim and prox_broad_trim
                              release it */
    bool rebuilt;          /* update / skin list: the structure was rebuilt from scratch */
    int keys;              /* cell keys actually used (prox_keys) */
    int coords;            /* grid coordinates actually kept (prox_coords: DOUBLE or FIXED) */
    int64_t rechecked;     /* fixed-point coordinates: candidates near the radius decided
                              again in double from the caller's points */
    const char *method;    /* how the query ran, e.g. "grid.rows.rel16" (docs/design.md,
                              "The planner"); a static string, NULL if no query ran */
    int64_t fresh_bytes;   /* bytes the library allocated (through its allocator layer, the
                              caller's allocator included): for a one-shot call, while it
                              ran; for a grid query, since the grid's last query (its
                              creation, builds and updates, the caller's buffer reserves,
                              then the query). Counted over the process: calls running at
                              the same time on other threads add to it. 0 from other calls */
    int huge_pages;        /* 1 when large fresh blocks of the default allocator are asked
                              for as transparent huge pages (PROX_HUGE_PAGES=1), else 0 */
} prox_stats;

/* The SIMD level this process runs: "scalar", "sse2", "avx2", "avx512" or
 * "neon". The library is built once per level of the CPU family and picks,
 * on first use, the highest level the CPU supports, or the one the
 * environment variable PROX_SIMD names (for tests and for chasing a bug);
 * every level gives the same results. */
PROX_API const char *prox_simd_level(void);

/* PROX_OK, or PROX_ERR_INVALID when PROX_SIMD names a level this build or
 * this CPU lacks (the message says which levels there are). Every call
 * that creates an object or searches checks this first. */
PROX_API prox_status prox_simd_check(void);

#ifdef __cplusplus
}
#endif
#endif
