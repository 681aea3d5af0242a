/* hierarchical_hash.c: the hierarchical hash of Pouchol et al. 2009, section 3
 * (Pouchol, Ahmad, Crespin, Terraz).
 *
 * Classes: sizes 2^c for c from `top` down to `bottom`. [bottom, max_class]
 * are the classes of the boxes (Eq. 2, as in multilevel hashing; fitted
 * classes may stop below the largest boxes' class, which are then split
 * over the cells of max_class they cover: prox_fit_classes); above
 * max_class, coarser classes up to the one whose cells hold the whole data
 * in at most 2 per axis, so that every query starts from at most 2^dim cells
 * and descends only where something is stored (the pruning of the
 * `hasChildren` flag, section 3.3). Classes are contiguous, so each cell of
 * class c has 2^dim children of class c - 1.
 *
 * Keys: Eq. 4, additive top-down: the key of a cell of class c <= max_class
 * is the sum of h^j over its ancestors j = max_class .. c (h^j = Eq. 3 with
 * the class mixed in), in 64-bit wrapping arithmetic: the sum runs over the
 * classes of the boxes, the paper's classSizes. The flag-only classes
 * above are this implementation's (for large queries); their cells' keys
 * sum j = top .. c, and the sum starts again at max_class, so that a small
 * query's first key is one hash, not one per class above (W4: six). The
 * table slot is the key reduced by Fibonacci hashing. Two tables (section
 * 4.3):
 *   - fixed length (growable_table = false): the slot is the key reduced to
 *     the table, as the paper's fixed-length vector; colliding cells share
 *     a slot (their ids and flags merge: more candidates, never a missed
 *     one);
 *   - growable: open addressing over the full 64-bit key, doubled when half
 *     full (the paper's hash map, n = +inf).
 * Each slot carries a timestamp (section 4.3): a slot is valid only for the
 * build that wrote it, so a rebuild does not sweep the table (but once
 * every 127 builds, when the 7-bit timestamp wraps).
 *
 * Insertion (Listing 1): a box of class c is inserted at the cells of class c
 * holding its corners (the cells it covers: at most 2 per axis); the walk
 * from the top sets hasChildren on every ancestor. Ids are not kept in
 * per-cell lists: the build records (slot, id) entries, radix-sorts them by
 * slot, and each slot keeps the range of its ids.
 *
 * Query (Listing 2): the cells of the largest class holding boxes that the
 * query box covers (the classes above hold only flags; their keys enter
 * the Eq. 4 sum without a lookup; the top class when the query covers
 * more than 2^dim of those cells);
 * each visited cell yields its ids, and if it has children, its children
 * that the query covers are visited (the subdivision of Listing 2). Each cell
 * is visited at most once (the cells form a tree).
 *
 * A query that would visit more cells than there are boxes (a query larger
 * than most of the data, or a tiny table whose collisions flag children
 * everywhere) stops descending and takes every box as a candidate: never
 * slower than brute force, and never a hang.
 *
 * Update (prox_broad_update): the boxes whose cells changed are re-inserted
 * (Listing 1) and their old entries dropped, by a merge of the sorted
 * entries; flags of cells they left stay set until the next rebuild. The
 * structure rebuilds instead when over a quarter changed, when a box leaves
 * the built extent or the class range, or once relocations since the last
 * build reach the box count.
 *
 * Table lengths (desc.table_size, or automatic) are rounded up to a power
 * of two.
 *
 * Cell coordinates: u = x - origin (origin = the data's minimum corner, so
 * u >= 0 for every built box); cell of class c = floor(u * 2^-bottom) >>
 * (c - bottom), which equals floor(u / 2^c) and makes parents and children
 * agree exactly. Queries are clipped to the data's extent first. */
#include <math.h>
#include <string.h>

#include "core/alloc.h"
#include "broad/broad.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/radix_sort.h"

#define MAX_CELLS_PER_BOX 1024

/* A slot is a tag (1 byte: the build's frame, 1-127, and hasChildren; all
 * a lookup reads for an absent cell, so that the tags of a large table stay
 * in cache) and where its ids start: the ids of slot s are entries
 * start[s] .. start[s + 1] (entries sorted by slot; 4 bytes a slot, as the
 * multilevel table). The frames wrap every 127 builds, and the tags are
 * then cleared (a memset of one byte per slot). Bytes instead of 4-byte
 * tags: 3 bytes a slot less and slightly faster queries on W4
 * (docs/design.md). */

#define TAG_CHILDREN 1u
#define FRAME_LIMIT (1u << 7)

typedef struct hh_node {
    int64_t cell[3];
    uint64_t key;
    int cls;
    bool unique; /* the query covers this one cell of its class */
} hh_node;

typedef struct hier {
    int dim;
    int top, bottom, max_class;
    double origin[3], umax[3];
    double inv_bottom; /* 2^-bottom */
    /* the table */
    uint8_t *tag;       /* frame << 1 | hasChildren; valid when tag >> 1 == frame */
    uint32_t *start;    /* slots + 1 */
    uint64_t *slot_key; /* growable only */
    int64_t slots, used, slot_capacity, key_capacity;
    int bits;
    bool growable;
    uint32_t frame;
    /* entries: (key -> slot, id), sorted by slot */
    uint64_t *entry_key, *tmp_key;
    uint32_t *entry_id, *tmp_id;
    int64_t entries, entry_key_cap, tmp_key_cap, entry_id_cap, tmp_id_cap;
    uint32_t *oversize;
    int64_t noversize, oversize_cap;
    broad_store store; /* copies of the boxes in entry order */
    int64_t n;
    bool failed; /* out of memory while growing the table */
    bool grew;   /* the growable table grew (slot indices changed) */
    int64_t relocated_since_build;
    uint8_t *changed; /* update: per box, its cells changed */
    int64_t changed_cap;
    const prox_allocator *allocator;
} hier;

/* ---- hashing ------------------------------------------------------------ */

/* h^c of Eq. 3 for one cell of class c (the class mixed in). */
static inline uint64_t cell_hash(int cls, const int64_t cell[3])
{
    return prox_teschner_hash(cell[0], cell[1], cell[2], ~0ULL) ^
           ((uint64_t)(cls + 4096) * 0xD6E8FEB86659FD93ULL);
}

/* The Eq. 4 key of `cell` of class cls, a child of the cell whose key is
 * parent_key (0 above the top): the sums start again at max_class. */
static inline uint64_t child_key(const hier *h, uint64_t parent_key, int cls,
                                 const int64_t cell[3])
{
    return (cls == h->max_class ? 0 : parent_key) + cell_hash(cls, cell);
}

static inline uint64_t home_slot(const hier *h, uint64_t key)
{
    return h->bits ? prox_hash64(key, h->bits) : 0;
}

static inline bool slot_valid(const hier *h, uint64_t s)
{
    return h->tag[s] >> 1 == h->frame;
}

/* The valid slot of `key`, or -1. */
static inline int64_t find_slot(const hier *h, uint64_t key)
{
    uint64_t mask = (uint64_t)h->slots - 1, s = home_slot(h, key);
    if (!h->growable)
        return slot_valid(h, s) ? (int64_t)s : -1;
    for (; slot_valid(h, s); s = (s + 1) & mask)
        if (h->slot_key[s] == key)
            return (int64_t)s;
    return -1;
}

/* ---- the table ------------------------------------------------------------ */

static bool allocate_table(hier *h, int64_t slots)
{
    prox_free(h->allocator, h->tag);
    prox_free(h->allocator, h->start);
    prox_free(h->allocator, h->slot_key);
    h->tag = prox_alloc_array(h->allocator, slots, sizeof(uint8_t));
    h->start = prox_alloc_array(h->allocator, slots + 1, sizeof(uint32_t));
    h->slot_key = h->growable ? prox_alloc_array(h->allocator, slots, sizeof(uint64_t)) : NULL;
    if (!h->tag || !h->start || (h->growable && !h->slot_key)) {
        h->slots = h->slot_capacity = h->key_capacity = 0;
        return false;
    }
    memset(h->tag, 0, (size_t)slots * sizeof(uint8_t));
    memset(h->start, 0, (size_t)(slots + 1) * sizeof(uint32_t));
    h->slots = h->slot_capacity = slots;
    h->key_capacity = h->growable ? slots : 0;
    h->bits = 0;
    while (((int64_t)1 << h->bits) < slots)
        h->bits++;
    h->frame = 1;
    return true;
}

static int64_t claim_slot(hier *h, uint64_t key);

/* Growable table: double it, re-inserting this build's slots (the new
 * table starts a fresh frame). */
static bool grow_table(hier *h)
{
    uint8_t *old = h->tag;
    uint32_t *old_start = h->start;
    uint64_t *old_key = h->slot_key;
    int64_t old_slots = h->slots;
    uint32_t old_frame = h->frame;
    h->tag = NULL;
    h->start = NULL;
    h->slot_key = NULL;
    bool ok = allocate_table(h, old_slots * 2);
    h->grew = true;
    if (ok) {
        h->used = 0;
        for (int64_t s = 0; s < old_slots; s++)
            if (old[s] >> 1 == old_frame) {
                int64_t t = claim_slot(h, old_key[s]);
                h->tag[t] |= old[s] & TAG_CHILDREN;
            }
    }
    prox_free(h->allocator, old);
    prox_free(h->allocator, old_start);
    prox_free(h->allocator, old_key);
    return ok;
}

/* The slot of `key` in this build, created if needed. */
static int64_t claim_slot(hier *h, uint64_t key)
{
    uint64_t mask = (uint64_t)h->slots - 1, s = home_slot(h, key);
    if (h->growable) {
        for (; slot_valid(h, s); s = (s + 1) & mask)
            if (h->slot_key[s] == key)
                return (int64_t)s;
        h->slot_key[s] = key;
    } else if (slot_valid(h, s)) {
        return (int64_t)s;
    }
    h->tag[s] = (uint8_t)(h->frame << 1);
    h->used++;
    return (int64_t)s;
}

static void mark_children(hier *h, uint64_t key)
{
    if (h->failed)
        return;
    h->tag[claim_slot(h, key)] |= TAG_CHILDREN;
    if (h->growable && 2 * h->used > h->slots && !grow_table(h))
        h->failed = true;
}

/* ---- insertion (Listing 1) -------------------------------------------------- */

typedef struct box_cells {
    int64_t lo[3], hi[3]; /* cells of the bottom class */
} box_cells;

static inline int64_t cell_at(int64_t bottom_cell, int shift)
{
    return bottom_cell >> shift; /* bottom cells are >= 0: a floor division */
}

static bool append_entry(hier *h, uint64_t key, uint32_t id)
{
    void *k = h->entry_key, *i = h->entry_id;
    if (!prox_grow(h->allocator, &k, &h->entry_key_cap, h->entries + 1, h->entries,
                   sizeof(uint64_t)))
        return false;
    h->entry_key = k;
    if (!prox_grow(h->allocator, &i, &h->entry_id_cap, h->entries + 1, h->entries,
                   sizeof(uint32_t)))
        return false;
    h->entry_id = i;
    h->entry_key[h->entries] = key;
    h->entry_id[h->entries++] = id;
    return true;
}

/* Visit cell `cell` of class cls (key = its Eq. 4 key) for box id, which is
 * stored at class target: store it there, or flag the cell and descend. */
static void insert_walk(hier *h, const box_cells *b, int cls, const int64_t cell[3],
                        uint64_t key, int target, uint32_t id)
{
    if (h->failed)
        return;
    if (cls == target) {
        claim_slot(h, key);
        if (h->growable && 2 * h->used > h->slots && !grow_table(h))
            h->failed = true;
        if (!h->failed && !append_entry(h, key, id))
            h->failed = true;
        return;
    }
    mark_children(h, key); /* hm[hashKey].hasChildren = true */
    int shift = cls - 1 - h->bottom;
    int64_t lo[3], hi[3];
    for (int k = 0; k < 3; k++) {
        int64_t first = 2 * cell[k], last = 2 * cell[k] + 1;
        int64_t blo = cell_at(b->lo[k], shift), bhi = cell_at(b->hi[k], shift);
        lo[k] = first > blo ? first : blo;
        hi[k] = last < bhi ? last : bhi;
    }
    int64_t child[3];
    for (child[2] = lo[2]; child[2] <= hi[2]; child[2]++)
        for (child[1] = lo[1]; child[1] <= hi[1]; child[1]++)
            for (child[0] = lo[0]; child[0] <= hi[0]; child[0]++)
                insert_walk(h, b, cls - 1, child, child_key(h, key, cls - 1, child), target, id);
}

/* The cells of the bottom class that box covers, clipped to the data
 * (written in place: built on the stack and copied, the struct's narrow
 * stores were read back wide, a stall per query). */
static inline void cells_of(const hier *h, const prox_aabb *box, box_cells *c)
{
    for (int k = 0; k < 3; k++) {
        double lo = box->lo[k] - h->origin[k], hi = box->hi[k] - h->origin[k];
        lo = lo < 0 ? 0 : lo > h->umax[k] ? h->umax[k] : lo;
        hi = hi < 0 ? 0 : hi > h->umax[k] ? h->umax[k] : hi;
        c->lo[k] = prox_cell_floor(lo * h->inv_bottom);
        c->hi[k] = prox_cell_floor(hi * h->inv_bottom);
    }
}

static double cells_at(const box_cells *b, int shift)
{
    double cells = 1.0;
    for (int k = 0; k < 3; k++)
        cells *= (double)(cell_at(b->hi[k], shift) - cell_at(b->lo[k], shift)) + 1.0;
    return cells;
}

static int class_of(const hier *h, const prox_aabb *box)
{
    int c = prox_size_class(prox_longest_edge(box, h->dim));
    c = c < h->bottom ? h->bottom : c;
    return c > h->max_class ? h->max_class : c;
}

static void insert_box(hier *h, const prox_aabb *box, uint32_t id)
{
    box_cells b;
    cells_of(h, box, &b);
    int target = class_of(h, box);
    if (cells_at(&b, target - h->bottom) > MAX_CELLS_PER_BOX) {
        void *p = h->oversize;
        if (!prox_grow(h->allocator, &p, &h->oversize_cap, h->noversize + 1, h->noversize,
                       sizeof(uint32_t))) {
            h->failed = true;
            return;
        }
        h->oversize = p;
        h->oversize[h->noversize++] = id;
        return;
    }
    int shift = h->top - h->bottom;
    int64_t cell[3];
    for (cell[2] = cell_at(b.lo[2], shift); cell[2] <= cell_at(b.hi[2], shift); cell[2]++)
        for (cell[1] = cell_at(b.lo[1], shift); cell[1] <= cell_at(b.hi[1], shift); cell[1]++)
            for (cell[0] = cell_at(b.lo[0], shift); cell[0] <= cell_at(b.hi[0], shift);
                 cell[0]++)
                insert_walk(h, &b, h->top, cell, child_key(h, 0, h->top, cell), target, id);
}

/* ---- build ----------------------------------------------------------------- */

static void choose_geometry(hier *h, const broad_input *in)
{
    int lo, hi;
    prox_fit_classes(in, &lo, &hi);
    double extent = 0.0;
    for (int k = 0; k < 3; k++) {
        h->origin[k] = in->lo[k];
        h->umax[k] = in->hi[k] - in->lo[k];
        extent = h->umax[k] > extent ? h->umax[k] : extent;
    }
    int extent_class = extent > 0 ? prox_size_class(extent) : lo;
    h->bottom = lo;
    h->max_class = hi;
    h->top = extent_class > hi ? extent_class : hi;
    h->inv_bottom = ldexp(1.0, -lo);
    h->dim = in->dim;
    h->n = in->n;
}

static int64_t pow2_at_least(int64_t v)
{
    int64_t p = 1;
    while (p < v)
        p <<= 1;
    return p;
}

/* The cells the boxes are stored in (ancestors not counted). */
static int64_t count_entries(const hier *h, const broad_input *in)
{
    double cells = 0.0;
    for (int64_t i = 0; i < in->n; i++) {
        box_cells b;
        cells_of(h, &in->box[i], &b);
        double c = cells_at(&b, class_of(h, &in->box[i]) - h->bottom);
        cells += c > MAX_CELLS_PER_BOX ? 0.0 : c;
    }
    return cells < 1e15 ? (int64_t)cells : (int64_t)1e15;
}

/* The table for this build: the same one (timestamps make it empty) unless
 * its size must change. Automatic lengths: the fixed table gets twice the
 * cells the boxes are stored in (their ancestors add about half as many on
 * W4, so about 3/4 full: colliding cells merge, which costs candidates, not
 * correctness), the size of the multilevel table; the growable one starts
 * at 2 n and doubles when half full. */
static bool prepare_table(hier *h, const broad_input *in)
{
    bool growable = in->desc->growable_table;
    int64_t want = in->desc->table_size > 0 ? pow2_at_least(in->desc->table_size)
                   : growable ? pow2_at_least(2 * in->n + 64)
                              : pow2_at_least(2 * count_entries(h, in) + 64);
    if (growable && h->growable && h->slots >= want)
        want = h->slots; /* keep what an earlier build grew to */
    if (!h->tag || h->slots != want || h->growable != growable) {
        h->growable = growable;
        return allocate_table(h, want);
    }
    if (++h->frame == FRAME_LIMIT) { /* every 127 builds: clear once */
        memset(h->tag, 0, (size_t)h->slots * sizeof(uint8_t));
        h->frame = 1;
    }
    return true;
}

static bool reserve_sort_scratch(hier *h)
{
    void *k = h->tmp_key, *i = h->tmp_id;
    bool ok = prox_reserve(h->allocator, &k, &h->tmp_key_cap, h->entries, sizeof(uint64_t));
    h->tmp_key = k;
    ok = ok && prox_reserve(h->allocator, &i, &h->tmp_id_cap, h->entries, sizeof(uint32_t));
    h->tmp_id = i;
    return ok;
}

/* start[s] = the first entry of slot s or of a later one (entries sorted
 * by slot), so that slot s holds entries start[s] .. start[s + 1]. */
static void set_slot_ranges(hier *h)
{
    /* entries sorted by (slot, id): boxes are inserted in id order and
     * sorted stably by slot, or merged by (slot, id) */
    h->entries = prox_drop_repeated_entries(h->entry_key, h->entry_id, h->entries);
    int64_t e = 0;
    for (int64_t s = 0; s < h->slots; s++) {
        h->start[s] = (uint32_t)e;
        while (e < h->entries && h->entry_key[e] == (uint64_t)s)
            e++;
    }
    h->start[h->slots] = (uint32_t)e;
}

/* Entries sorted by slot; each slot gets the range of its ids. */
static prox_status index_entries(hier *h, int threads)
{
    if (h->entries >= (int64_t)UINT32_MAX)
        return prox_fail(PROX_ERR_RANGE, "%lld cell entries; at most 2^32 - 2 fit",
                         (long long)h->entries);
    if (!reserve_sort_scratch(h))
        return prox_fail(PROX_ERR_NO_MEMORY, "out of memory sorting %lld cell entries",
                         (long long)h->entries);
    for (int64_t e = 0; e < h->entries; e++)
        h->entry_key[e] = (uint64_t)find_slot(h, h->entry_key[e]);
    prox_radix_sort64(h->entry_key, h->entry_id, h->tmp_key, h->tmp_id, h->entries, threads);
    set_slot_ranges(h);
    return PROX_OK;
}

/* Whether the store keeps each copy's class (broad_run.level), which
 * needs the classes to fit its bytes. */
static bool keeps_levels(const hier *h)
{
    return h->max_class - h->bottom < (int)UINT8_MAX;
}

/* The store follows the entries (sorted by slot), each copy with its class. */
static prox_status fill_store(hier *h, const broad_input *in)
{
    bool levels = keeps_levels(h);
    broad_store *st = &h->store;
    if (!prox_store_fill(st, h->allocator, in->box, h->entry_id, h->entries, in->dim, levels))
        return prox_fail(PROX_ERR_NO_MEMORY, "out of memory copying %lld cell entries",
                         (long long)h->entries);
    for (int64_t e = 0; levels && e < h->entries; e++)
        st->level[e] = (uint8_t)(class_of(h, &in->box[st->id[e]]) - h->bottom);
    prox_store_sort_runs(st, h->start, h->slots, in->dim, in->threads);
    return PROX_OK;
}

static prox_status hier_build(void **impl, const broad_input *in)
{
    hier *h = *impl;
    if (!h) {
        h = prox_alloc_array(in->allocator, 1, sizeof *h);
        if (!h)
            return prox_fail(PROX_ERR_NO_MEMORY, "out of memory for the hierarchical hash");
        *h = (hier){.allocator = in->allocator};
        *impl = h;
    }
    choose_geometry(h, in);
    h->entries = h->noversize = h->used = h->relocated_since_build = 0;
    h->failed = false;
    if (!prepare_table(h, in))
        return prox_fail(PROX_ERR_NO_MEMORY, "out of memory for a hash table of %lld slots",
                         (long long)in->desc->table_size);
    for (int64_t i = 0; i < in->n && !h->failed; i++)
        insert_box(h, &in->box[i], (uint32_t)i);
    if (h->failed)
        return prox_fail(PROX_ERR_NO_MEMORY, "out of memory building the hierarchical hash");
    prox_status st = index_entries(h, in->threads);
    return st ? st : fill_store(h, in);
}

/* ---- query (Listing 2) --------------------------------------------------- */

static bool reserve_stack(broad_scratch *s, int64_t nodes)
{
    if (s->stack && s->stack_capacity >= nodes)
        return true;
    if (!prox_reserve(s->allocator, &s->stack, &s->stack_capacity, nodes, sizeof(hh_node))) {
        s->failed = true;
        return false;
    }
    return true;
}

/* The query's cells of the bottom class, clipped to the data; false if the
 * query misses the data's extent. */
static bool query_cells(const hier *h, const prox_aabb *q, box_cells *c)
{
    for (int k = 0; k < 3; k++)
        if (q->hi[k] - h->origin[k] < 0 || q->lo[k] - h->origin[k] > h->umax[k])
            return false;
    cells_of(h, q, c);
    return true;
}

/* The ids of `slot`, visited as cell n: the copies of n's class (with
 * levels kept), and unique when the query covers n alone of its class. */
static void push_ids(const hier *h, int64_t slot, const hh_node *n, broad_scratch *s)
{
    bool levels = h->store.level != NULL;
    prox_scratch_push_run(s, (broad_run){h->start[slot], h->start[slot + 1],
                                         levels ? (uint16_t)(n->cls - h->bottom) : PROX_ANY_LEVEL,
                                         levels && n->unique});
}

/* The cells lo .. hi of class cls that the query covers (children of
 * `parent` only, when there is one); returns how many. n gets cls and
 * whether the query covers one cell of the class in all. */
static int64_t covered_cells(const hier *h, const box_cells *q, int cls, const hh_node *parent,
                             int64_t lo[3], int64_t hi[3], hh_node *n)
{
    int shift = cls - h->bottom;
    int64_t count = 1;
    *n = (hh_node){.cls = cls, .unique = true};
    for (int k = 0; k < 3; k++) {
        lo[k] = cell_at(q->lo[k], shift);
        hi[k] = cell_at(q->hi[k], shift);
        n->unique = n->unique && lo[k] == hi[k];
        if (parent) {
            lo[k] = lo[k] > 2 * parent->cell[k] ? lo[k] : 2 * parent->cell[k];
            hi[k] = hi[k] < 2 * parent->cell[k] + 1 ? hi[k] : 2 * parent->cell[k] + 1;
        }
        int64_t span = hi[k] - lo[k] + 1;
        if (span <= 0)
            count = 0; /* no cell of this parent */
        else /* saturated: callers only compare it with small bounds */
            count = count > INT64_MAX / span ? INT64_MAX : count * span;
    }
    return count;
}

/* Stack node `at` := cell of class n's, with key (field by field: the
 * compiler otherwise builds the node in a local and copies it with wide
 * loads of its narrow stores, which the store buffer cannot forward: a
 * stall per push). */
static inline void set_node(hh_node *at, int cls, bool unique, const int64_t cell[3],
                            uint64_t key)
{
    for (int k = 0; k < 3; k++)
        at->cell[k] = cell[k];
    at->key = key;
    at->cls = cls;
    at->unique = unique;
}

/* Push the cells lo .. hi of class cls (unique: the query covers one cell
 * of it; parent_key: their parent's key, 0 at the top class). */
static int64_t push_cells(const hier *h, const int64_t lo[3], const int64_t hi[3], int cls,
                          bool unique, uint64_t parent_key, hh_node *stack, int64_t top)
{
    int64_t cell[3];
    for (cell[2] = hi[2]; cell[2] >= lo[2]; cell[2]--)
        for (cell[1] = hi[1]; cell[1] >= lo[1]; cell[1]--)
            for (cell[0] = hi[0]; cell[0] >= lo[0]; cell[0]--) {
                uint64_t key = child_key(h, parent_key, cls, cell);
                /* its lookup comes later: start the likely cache misses now */
                uint64_t slot = home_slot(h, key);
                __builtin_prefetch(&h->tag[slot]);
                __builtin_prefetch(&h->start[slot]);
                set_node(&stack[top++], cls, unique, cell, key);
            }
    return top;
}

/* The Eq. 4 key of a cell of class cls: the sum over its ancestors (from
 * max_class for the classes of the boxes, else from the top). */
static uint64_t key_of(const hier *h, int cls, const int64_t cell[3])
{
    uint64_t key = 0;
    for (int j = cls <= h->max_class ? h->max_class : h->top; j >= cls; j--) {
        int64_t c[3] = {cell[0] >> (j - cls), cell[1] >> (j - cls), cell[2] >> (j - cls)};
        key += cell_hash(j, c);
    }
    return key;
}

/* The walk starts at the largest class that holds boxes (the classes above
 * only hold flags), when the query covers at most `most` of its cells. */
static int64_t push_start(const hier *h, const box_cells *q, hh_node *stack, int64_t most)
{
    int64_t lo[3], hi[3];
    hh_node n;
    int64_t cells = covered_cells(h, q, h->max_class, NULL, lo, hi, &n);
    if (h->max_class >= h->top || cells > most) {
        covered_cells(h, q, h->top, NULL, lo, hi, &n);
        return push_cells(h, lo, hi, n.cls, n.unique, 0, stack, 0);
    }
    int64_t top = 0;
    for (n.cell[2] = hi[2]; n.cell[2] >= lo[2]; n.cell[2]--)
        for (n.cell[1] = hi[1]; n.cell[1] >= lo[1]; n.cell[1]--)
            for (n.cell[0] = hi[0]; n.cell[0] >= lo[0]; n.cell[0]--) {
                set_node(&stack[top++], n.cls, n.unique, n.cell, key_of(h, n.cls, n.cell));
            }
    return top;
}

/* Every box, instead of what this query gathered so far (from `count` ids
 * and `nruns` runs on). */
static void push_all(const hier *h, broad_scratch *s, int64_t count, int64_t nruns)
{
    s->count = count;
    s->nruns = nruns;
    if (!prox_scratch_reserve(s, h->n))
        return;
    for (int64_t i = 0; i < h->n; i++)
        s->ids[s->count++] = (uint32_t)i;
}

static void hier_gather(const void *impl, const prox_aabb *q, broad_scratch *s)
{
    const hier *h = impl;
    s->store = &h->store;
    int64_t count = s->count, nruns = s->nruns;
    if (h->noversize && prox_scratch_reserve(s, h->noversize)) {
        memcpy(s->ids + s->count, h->oversize, (size_t)h->noversize * sizeof(uint32_t));
        s->count += h->noversize;
    }
    box_cells qc;
    if (h->n == 0 || !query_cells(h, q, &qc))
        return;
    int64_t per_level = (int64_t)1 << h->dim;
    if (!reserve_stack(s, (int64_t)(h->top - h->bottom + 2) * per_level))
        return;
    hh_node *stack = s->stack;
    int64_t top = push_start(h, &qc, stack, per_level);
    /* Without hash collisions a query visits at most the valid cells and
     * their children; collisions (a tiny fixed table) can flag children
     * everywhere, and a query larger than most of the data visits more
     * cells than there are boxes. Past this budget every box becomes a
     * candidate (a scan costs no more). */
    int64_t budget = 2 * (h->used + 1) * per_level + 64;
    budget = budget < h->n + 64 ? budget : h->n + 64;
    while (top > 0) {
        --top;
        /* field by field: a whole-node copy is one wide load of what
         * push_cells just stored in narrow pieces, which the store buffer
         * cannot forward (a stall per node) */
        hh_node n = {.key = stack[top].key, .cls = stack[top].cls, .unique = stack[top].unique};
        for (int k = 0; k < 3; k++)
            n.cell[k] = stack[top].cell[k];
        /* visit n; while the query covers one child of it, visit that child
         * next without the stack (the order is the same) */
        for (;;) {
            if (--budget < 0) {
                push_all(h, s, count, nruns);
                return;
            }
            s->cells_visited++;
            int64_t at = find_slot(h, n.key);
            if (at < 0)
                break;
            push_ids(h, at, &n, s);
            if (!(h->tag[at] & TAG_CHILDREN) || n.cls == h->bottom)
                break;
            int64_t lo[3], hi[3];
            hh_node child;
            if (covered_cells(h, &qc, n.cls - 1, &n, lo, hi, &child) > 1) {
                top = push_cells(h, lo, hi, child.cls, child.unique, n.key, stack, top);
                break;
            }
            for (int k = 0; k < 3; k++)
                child.cell[k] = lo[k];
            child.key = child_key(h, n.key, child.cls, child.cell);
            n = child;
        }
    }
}

/* ---- update: relocation ------------------------------------------------- */

/* Relocate while at most this fraction of the boxes changed cells. Flags
 * (hasChildren) of cells a box left stay set until the next rebuild (they
 * only cost descents), so a rebuild also comes once as many relocations as
 * there are boxes have piled up since the last one. */
#define RELOCATE_FRACTION 0.25

/* Does the box fit the built geometry (inside the data's extent, and not
 * oversize: a box above the largest class is split over its cells, as the
 * build splits them)? */
static bool fits_geometry(const hier *h, const prox_aabb *box)
{
    for (int k = 0; k < h->dim; k++)
        if (box->lo[k] - h->origin[k] < 0 || box->hi[k] - h->origin[k] > h->umax[k])
            return false;
    box_cells b;
    cells_of(h, box, &b);
    return cells_at(&b, class_of(h, box) - h->bottom) <= MAX_CELLS_PER_BOX;
}

static bool same_cells(const hier *h, const prox_aabb *a, const prox_aabb *b)
{
    int ca = class_of(h, a), cb = class_of(h, b);
    if (ca != cb)
        return false;
    box_cells x, y;
    cells_of(h, a, &x);
    cells_of(h, b, &y);
    int shift = ca - h->bottom;
    for (int k = 0; k < 3; k++)
        if (cell_at(x.lo[k], shift) != cell_at(y.lo[k], shift) ||
            cell_at(x.hi[k], shift) != cell_at(y.hi[k], shift))
            return false;
    return true;
}

/* Marks the boxes whose cells changed (added and removed ones too); returns
 * how many, or -1 when only a rebuild will do. */
static int64_t mark_changed(hier *h, const broad_input *in, const prox_aabb *old, int64_t old_n)
{
    int64_t most = in->n > old_n ? in->n : old_n, count = 0;
    void *p = h->changed;
    if (h->noversize > 0 ||
        !prox_reserve(h->allocator, &p, &h->changed_cap, most, sizeof(uint8_t)))
        return -1;
    h->changed = p;
    for (int64_t i = 0; i < most; i++) {
        bool kept = i < in->n && i < old_n;
        if (i < in->n && !fits_geometry(h, &in->box[i]))
            return -1;
        h->changed[i] = !kept || !same_cells(h, &old[i], &in->box[i]);
        count += h->changed[i];
    }
    return count;
}

/* Old entries of unchanged boxes, compacted in place; the slots of the
 * others lose their ids (counts are rebuilt from the merged entries). */
static int64_t drop_changed_entries(hier *h)
{
    int64_t kept = 0;
    for (int64_t e = 0; e < h->entries; e++) {
        uint64_t slot = h->entry_key[e];
        if (!h->changed[h->entry_id[e]]) {
            h->entry_key[kept] = slot;
            h->entry_id[kept++] = h->entry_id[e];
        }
    }
    return kept;
}

/* Merge entries [0, kept) and [from, end), both sorted by (slot, id), into
 * the scratch arrays, which then become the entries. */
static void merge_entries(hier *h, int64_t kept, int64_t from, int64_t end)
{
    int64_t a = 0, b = from, out = 0;
    while (a < kept || b < end) {
        bool take_a = b >= end || (a < kept && (h->entry_key[a] < h->entry_key[b] ||
                                                (h->entry_key[a] == h->entry_key[b] &&
                                                 h->entry_id[a] < h->entry_id[b])));
        int64_t at = take_a ? a++ : b++;
        h->tmp_key[out] = h->entry_key[at];
        h->tmp_id[out++] = h->entry_id[at];
    }
    uint64_t *k = h->entry_key;
    uint32_t *i = h->entry_id;
    int64_t kc = h->entry_key_cap, ic = h->entry_id_cap;
    h->entry_key = h->tmp_key;
    h->entry_id = h->tmp_id;
    h->entry_key_cap = h->tmp_key_cap;
    h->entry_id_cap = h->tmp_id_cap;
    h->tmp_key = k;
    h->tmp_id = i;
    h->tmp_key_cap = kc;
    h->tmp_id_cap = ic;
    h->entries = out;
}


/* Insert the changed boxes (Listing 1) after the current entries, sort them
 * by slot; false when the table grew or memory ran out (then rebuild). */
static bool insert_changed(hier *h, const broad_input *in, int64_t *from, int threads)
{
    int64_t start = h->entries;
    h->grew = h->failed = false;
    for (int64_t i = 0; i < in->n && !h->failed && !h->grew; i++)
        if (h->changed[i])
            insert_box(h, &in->box[i], (uint32_t)i);
    if (h->failed || h->grew || h->noversize > 0)
        return false;
    int64_t fresh = h->entries - start;
    int64_t total = h->entries;
    h->entries = fresh; /* reserve_sort_scratch sizes by entries */
    bool ok = reserve_sort_scratch(h);
    h->entries = total;
    if (!ok || total >= (int64_t)UINT32_MAX)
        return false;
    for (int64_t e = start; e < total; e++)
        h->entry_key[e] = (uint64_t)find_slot(h, h->entry_key[e]);
    if (fresh > 0) /* none: entry_key may be NULL, and NULL + 0 is undefined */
        prox_radix_sort64(h->entry_key + start, h->entry_id + start, h->tmp_key, h->tmp_id,
                          fresh, threads);
    *from = start;
    return true;
}

static prox_status hier_update(void **impl, const broad_input *in, const prox_aabb *old,
                               int64_t old_n, int64_t *relocated, bool *rebuilt)
{
    hier *h = *impl;
    int64_t changed = h ? mark_changed(h, in, old, old_n) : -1;
    int64_t n = in->n > old_n ? in->n : old_n;
    bool relocate = changed >= 0 && changed <= RELOCATE_FRACTION * (double)n &&
                    h->relocated_since_build + changed <= n;
    int64_t from = 0;
    if (relocate)
        relocate = insert_changed(h, in, &from, in->threads);
    if (!relocate) {
        *rebuilt = true;
        *relocated = 0;
        return hier_build(impl, in);
    }
    int64_t end = h->entries;
    h->entries = from;
    int64_t kept = drop_changed_entries(h);
    void *k = h->tmp_key, *i = h->tmp_id;
    bool ok = prox_reserve(h->allocator, &k, &h->tmp_key_cap, kept + end - from, 8);
    h->tmp_key = k;
    ok = ok && prox_reserve(h->allocator, &i, &h->tmp_id_cap, kept + end - from, 4);
    h->tmp_id = i;
    if (!ok)
        return prox_fail(PROX_ERR_NO_MEMORY, "out of memory relocating boxes");
    merge_entries(h, kept, from, end);
    set_slot_ranges(h);
    prox_status st = fill_store(h, in);
    if (st)
        return st;
    h->n = in->n;
    h->relocated_since_build += changed;
    *relocated = changed;
    *rebuilt = false;
    return PROX_OK;
}

/* ---- the rest ------------------------------------------------------------ */

static void hier_destroy(void *impl, const prox_allocator *al)
{
    hier *h = impl;
    if (!h)
        return;
    prox_free(al, h->tag);
    prox_free(al, h->start);
    prox_free(al, h->slot_key);
    prox_free(al, h->entry_key);
    prox_free(al, h->tmp_key);
    prox_free(al, h->entry_id);
    prox_free(al, h->tmp_id);
    prox_free(al, h->oversize);
    prox_free(al, h->changed);
    prox_store_free(&h->store, al);
    prox_free(al, h);
}

static int64_t hier_bytes(const void *impl)
{
    const hier *h = impl;
    if (!h)
        return 0;
    return (int64_t)sizeof *h + (h->slot_capacity + 1) * (int64_t)(sizeof(uint8_t) + sizeof(uint32_t)) +
           h->key_capacity * 8 + (h->entry_key_cap + h->tmp_key_cap) * 8 +
           (h->entry_id_cap + h->tmp_id_cap) * 4 + h->oversize_cap * 4 + h->changed_cap +
           prox_store_bytes(&h->store);
}

static int64_t hier_cells(const void *impl)
{
    const hier *h = impl;
    return h ? h->used : 0;
}

const broad_ops prox_broad_hierarchical_ops = {
    .name = "hierarchical",
    .build = hier_build,
    .update = hier_update,
    .destroy = hier_destroy,
    .gather = hier_gather,
    .bytes = hier_bytes,
    .cells = hier_cells,
};
