/* sized_classes.h (sized_classes.c): the size-class grids of the sized
 * search: points grouped by the powers of two of their reach, one sparse
 * grid per class (cells keyed by their coordinates, found through a hash
 * table), and the box query of one point against one class. */
#ifndef PROX_SIZED_CLASSES_H
#define PROX_SIZED_CLASSES_H

#include "core/pair_sink.h"
#include "points/drive.h"
#include "points/sized_load.h"

#define SIZED_MAX_CLASSES 24

/* One class, its points in cell order. */
typedef struct sized_class {
    int64_t n;
    double *x, *y, *z;  /* wrapped coordinates; z all 0 in 2D */
    double *size;       /* radius or h (0 for TYPES) */
    int32_t *type;      /* type (0 for radii) */
    prox_index *id;     /* the caller's index */
    double reach;       /* largest size (TYPES: largest cutoff with any point) */
    double lo[3], hi[3];   /* the members' box */
    double origin[3], inv[3], top[3]; /* top: ncell - 1 */
    int64_t ncell[3];
    int64_t cells;      /* occupied cells */
    bool dense;         /* start indexed by every cell's key (row runs), not hashed */
    uint32_t *start;    /* dense: every key + 1; else occupied cells + 1: first point of each */
    uint64_t *slot_key; /* hash table of occupied cells: key or UINT64_MAX */
    uint32_t *slot_cell;
    int shift;          /* 64 - log2(slots) */
    uint64_t mask;      /* slots - 1 */
    unsigned char *present; /* TYPES: present[t] when a member has type t */
    double *type_reach; /* TYPES: [t] the largest cutoff of type t with a member */
} sized_class;

typedef struct sized_classes {
    sized_class cls[SIZED_MAX_CLASSES];
    int count;
    int dim;
    double period[3];
    int64_t bytes;
    const prox_allocator *al;
} sized_classes;

/* The points of `set` (with their coordinates `points`, wrapped) grouped
 * into classes and their grids built. `partner` is the other set of the
 * search (the same one for self pairs): it sets, for TYPES, each point's
 * reach (points that reach nothing are left out). */
prox_status sized_classes_build(sized_classes *c, const prox_points *points, const sized_set *set,
                                const sized_set *partner, const sized_rule *rule,
                                const double period[3], int threads, const prox_allocator *al);
void sized_classes_free(sized_classes *c);

/* The largest threshold between a point of size s / type t and a member
 * of class g. */
double sized_class_cut(const sized_rule *rule, const sized_class *g, double s, int32_t t);
/* The largest threshold between members of classes a and b. */
double sized_class_pair_cut(const sized_rule *rule, const sized_class *a, const sized_class *b);

/* One query: point q (size qs, type qt, index qid) against class g's grid,
 * every member within `cut` on every axis tested by the rule (members
 * before `after`+1 in cell order skipped: `after` = -1 for none); self:
 * pairs oriented (smaller id, larger id), else (qid, member). */
typedef struct sized_probe {
    const double *q;
    double qs;
    int32_t qt;
    prox_index qid;
    double cut;
    int64_t after;
    bool self;
} sized_probe;

void sized_class_query(const sized_classes *c, const sized_class *g, const sized_rule *rule,
                       const prox_metric *m, const sized_probe *p, prox_emitter *e,
                       points_chunk *chunk);

/* Members [from, to) of class q queried against class g, each over its
 * own largest interaction with g (sized_class_cut), as self pairs
 * (same: q is g, each member testing only the members after it). */
void sized_class_query_class(const sized_classes *c, const sized_class *g,
                             const sized_rule *rule, const prox_metric *m, const sized_class *q,
                             int64_t from, int64_t to, bool same, prox_emitter *e,
                             points_chunk *chunk);

/* Estimated work of querying the n_q points of one class against g's
 * grid over `cut` (lookups plus candidates). */
double sized_class_cost(const sized_classes *c, const sized_class *g, int64_t n_q, double cut);

#endif
