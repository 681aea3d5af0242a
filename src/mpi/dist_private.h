/* dist_private.h: what the distributed layer's files share: messages,
 * agreement on failures, timed all-to-all exchange, the partition. */
#ifndef PROX_DIST_PRIVATE_H
#define PROX_DIST_PRIVATE_H

#include <stdarg.h>

#include "prox/mpi.h"

typedef struct dist_comm {
    MPI_Comm comm; /* a duplicate of the caller's */
    int rank, size;
    prox_dist_stats stats;
    /* the exchange's scratch, kept so that it cannot fail halfway: */
    int *ints;      /* 4 per rank: counts and displacements sent and received */
    int64_t *minus; /* -1 per rank (a failed rank's counts), then room for a reply */
} dist_comm;

prox_status dist_comm_init(dist_comm *c, MPI_Comm comm);
void dist_comm_free(dist_comm *c);

/* Set this thread's message and return st. */
prox_status dist_fail(prox_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* A core call failed: the message says what, then the core's message. */
prox_status dist_fail_core(prox_status st, const char *what);
/* Collective: the first failing rank's status on every rank (PROX_OK when
 * none failed; PROX_STOPPED is not a failure). Ranks that did not fail
 * get a message naming the one that did. */
prox_status dist_agree(dist_comm *c, prox_status st);
/* The same in one allreduce with n (<= 7) values replaced by their
 * maximum over the ranks. */
prox_status dist_agree_max(dist_comm *c, prox_status st, double *values, int n);

/* Received bytes of an all-to-all: from rank r at recv + displ[r], bytes[r]. */
typedef struct dist_recv {
    char *data;
    int64_t *bytes; /* size entries */
    int64_t *displ; /* size + 1 entries */
} dist_recv;

void dist_recv_free(dist_recv *r);
/* Collective: rank r gets send_bytes[r] bytes from send + send_displ[r]
 * (displacements: prefix sums of send_bytes). Counts exchange time,
 * messages (nonzero sends to other ranks) and bytes in c->stats. */
prox_status dist_alltoallv(dist_comm *c, const int64_t *send_bytes, const char *send,
                           dist_recv *out);

/* ---- the partition: one half-open region per rank -------------------- */

typedef struct rcb_node {
    int axis;   /* -1: a leaf */
    int rank;   /* leaf: the rank */
    double cut; /* left: x < cut; right: x >= cut */
    int left, right;
} rcb_node;

typedef struct dist_part {
    prox_partition kind;
    int size, dim;
    double period[3];
    double *lo, *hi; /* 3 per rank */
    rcb_node *nodes; /* RCB: nodes[0] is the root */
    int node_count;
} dist_part;

/* Collective: RCB over the positions (n * dim doubles, already wrapped on
 * periodic axes). */
prox_status part_rcb(dist_part *p, dist_comm *c, const double *pos, int64_t n, int dim,
                     const double period[3]);
/* Caller's boxes: 6 doubles per rank. */
prox_status part_boxes(dist_part *p, int size, int dim, const double *boxes,
                       const double period[3]);
void part_free(dist_part *p);
/* The rank whose region holds x, -1 if none (caller's boxes only). */
int part_owner(const dist_part *p, const double *x);
/* Ranks whose region meets the closed box [lo, hi] (lo[k] < region hi and
 * hi[k] >= region lo on every axis), ascending, into out (room for size);
 * returns how many. */
int part_overlapping(const dist_part *p, const double *lo, const double *hi, int *out);

/* Sort by (a, b). */
void dist_sort_id_pairs(prox_id_pair *pairs, int64_t count);

/* x wrapped into [0, L) as the core wraps it (src/exact.h's rule). */
double dist_wrap(double x, double L);

#endif
