/* bullet.cpp: Bullet 3 (Debian's single-precision build) as a broad-phase
 * peer.
 *
 * Single precision: every box is handed to Bullet as the smallest float box
 * holding the double box (lo rounded down, hi rounded up), so Bullet's
 * candidates contain every exact pair; each candidate is then re-tested in
 * double with prox's exact tests. Bullet's btDbvt tests closed boxes (<=);
 * the 32-bit sweep and prune quantises conservatively (min cleared to even,
 * max set odd); neither adds a margin when a proxy is created.
 *
 * W3 variants (self pairs, from scratch):
 *   dbvt           btDbvtBroadphase as a world uses it: each createProxy
 *                  inserts the box and collides it with the tree at once;
 *                  calculateOverlappingPairs then runs its collide pass.
 *   dbvt-deferred  m_deferedcollide = true: proxies are only inserted; the
 *                  pairs come from calculateOverlappingPairs' tree-tree pass.
 *   dbvt-optimized deferred, and the trees rebuilt top-down (optimize())
 *                  before the pass.
 *   axis-sweep     bt32BitAxisSweep3: incremental sort and sweep; each
 *                  insertion sorts its edges into place, so building from
 *                  scratch is quadratic (the manifest caps its N).
 * W4 variants (segment hits; btDbvt used directly as a static tree):
 *   dbvt           built by insertion (btDbvt::insert);
 *   dbvt-optimized built by insertion then optimizeTopDown().
 *   Queries: collideTVNoStackAlloc with the segment's (float-widened) box and
 *   one reused stack, then the exact segment-box test. */
#include <btBulletCollisionCommon.h>
#include <BulletCollision/BroadphaseCollision/btAxisSweep3.h>
#include <BulletCollision/BroadphaseCollision/btDbvt.h>
#include <BulletCollision/BroadphaseCollision/btDbvtBroadphase.h>

#include <algorithm>
#include <memory>

#include "common.hpp"

namespace {

btVector3 lo_vector(const prox_aabb &b)
{
    return btVector3(peer::float_down(b.lo[0]), peer::float_down(b.lo[1]),
                     peer::float_down(b.lo[2]));
}

btVector3 hi_vector(const prox_aabb &b)
{
    return btVector3(peer::float_up(b.hi[0]), peer::float_up(b.hi[1]), peer::float_up(b.hi[2]));
}

/* Exact pairs among the pair cache's candidates. */
int64_t exact_pairs(btBroadphaseInterface *broadphase, const std::vector<prox_aabb> &boxes,
                    int64_t *candidates)
{
    btBroadphasePairArray &pairs = broadphase->getOverlappingPairCache()->getOverlappingPairArray();
    int64_t exact = 0;
    for (int k = 0; k < pairs.size(); k++) {
        size_t a = (size_t)(intptr_t)pairs[k].m_pProxy0->m_clientObject;
        size_t b = (size_t)(intptr_t)pairs[k].m_pProxy1->m_clientObject;
        exact += prox_aabb_overlap(&boxes[a], &boxes[b]);
    }
    *candidates = pairs.size();
    return exact;
}

std::unique_ptr<btBroadphaseInterface> make_broadphase(const std::string &variant,
                                                       const std::vector<prox_aabb> &boxes)
{
    if (variant != "axis-sweep") {
        auto dbvt = std::make_unique<btDbvtBroadphase>();
        dbvt->m_deferedcollide = variant != "dbvt";
        return dbvt;
    }
    btVector3 lo(0, 0, 0), hi(1, 1, 1);
    for (size_t i = 0; i < boxes.size(); i++) {
        lo = i ? lo : lo_vector(boxes[i]);
        hi = i ? hi : hi_vector(boxes[i]);
        lo.setMin(lo_vector(boxes[i]));
        hi.setMax(hi_vector(boxes[i]));
    }
    btVector3 pad = (hi - lo) * btScalar(0.01) + btVector3(1, 1, 1);
    return std::make_unique<bt32BitAxisSweep3>(lo - pad, hi + pad, (unsigned)boxes.size() + 2,
                                               nullptr, true);
}

void self_pairs(const peer::options &o)
{
    std::vector<prox_aabb> boxes = peer::read_boxes(o.boxes, 3);
    peer::decline_above_max_n(o, boxes.size(), "peer_bullet");
    btDefaultCollisionConfiguration config;
    btCollisionDispatcher dispatcher(&config);
    double t0 = peer::now_seconds();
    std::unique_ptr<btBroadphaseInterface> broadphase = make_broadphase(o.variant, boxes);
    std::vector<btBroadphaseProxy *> proxies(boxes.size());
    for (size_t i = 0; i < boxes.size(); i++)
        proxies[i] = broadphase->createProxy(lo_vector(boxes[i]), hi_vector(boxes[i]),
                                             SPHERE_SHAPE_PROXYTYPE, (void *)(intptr_t)i, 1, -1,
                                             &dispatcher);
    if (o.variant == "dbvt-optimized")
        static_cast<btDbvtBroadphase *>(broadphase.get())->optimize();
    double t1 = peer::now_seconds();
    broadphase->calculateOverlappingPairs(&dispatcher);
    int64_t candidates;
    int64_t pairs = exact_pairs(broadphase.get(), boxes, &candidates);
    double t2 = peer::now_seconds();
    peer::print_result("bullet-" + o.variant, o, (int64_t)boxes.size(), t1 - t0, t2 - t1, pairs,
                       peer::key("candidates", (double)candidates));
    /* Exit without tearing down: destroying the proxies one by one scans
     * the whole pair cache for each (removeOverlappingPairsContainingProxy),
     * which is quadratic: untimed, but 66 s at N = 500,000 and beyond the
     * runner's per-row limit at 5M. The process ends here; its memory goes
     * back with it. */
    std::fflush(stdout);
    std::_Exit(0);
}

struct segment_collider : btDbvt::ICollide {
    const std::vector<prox_aabb> *boxes;
    const peer::segment *segment;
    size_t q;
    peer::hit_tally *tally;
    void Process(const btDbvtNode *leaf) override
    {
        tally->test(*segment, q, (*boxes)[(size_t)(intptr_t)leaf->data]);
    }
};

void segment_hits(const peer::options &o)
{
    if (o.variant != "dbvt" && o.variant != "dbvt-optimized")
        peer::die("W4 variants: dbvt, dbvt-optimized (not '%s')", o.variant.c_str());
    std::vector<prox_aabb> boxes = peer::read_boxes(o.boxes, 2);
    std::vector<peer::segment> segments = peer::read_segments(o.segments);
    double t0 = peer::now_seconds();
    btDbvt tree;
    for (size_t i = 0; i < boxes.size(); i++)
        tree.insert(btDbvtVolume::FromMM(lo_vector(boxes[i]), hi_vector(boxes[i])),
                    (void *)(intptr_t)i);
    if (o.variant == "dbvt-optimized")
        tree.optimizeTopDown();
    double t1 = peer::now_seconds();
    peer::hit_tally tally(segments.size());
    segment_collider collider;
    collider.boxes = &boxes;
    collider.tally = &tally;
    btNodeStack stack;
    for (size_t q = 0; q < segments.size(); q++) {
        prox_aabb s = peer::segment_box(segments[q]);
        collider.segment = &segments[q];
        collider.q = q;
        tree.collideTVNoStackAlloc(tree.m_root, btDbvtVolume::FromMM(lo_vector(s), hi_vector(s)),
                                   stack, collider);
    }
    double t2 = peer::now_seconds();
    peer::print_result("bullet-" + o.variant, o, (int64_t)boxes.size(), t1 - t0, t2 - t1,
                       tally.hits, tally.extra());
}

} // namespace

int main(int argc, char **argv)
{
    peer::options o = peer::parse_options(
        argc, argv, { "dbvt", "dbvt-deferred", "dbvt-optimized", "axis-sweep" });
    if (o.workload == "W3")
        self_pairs(o);
    else
        segment_hits(o);
    return 0;
}
