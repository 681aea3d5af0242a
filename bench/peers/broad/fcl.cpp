/* fcl.cpp: FCL 0.7's broad-phase managers (double precision) over W3's
 * spheres: every sphere is a CollisionObject with one shared fcl::Sphere
 * geometry, registered in one call (registerObjects), then setup(); the
 * self collide(cdata, callback) reports candidate pairs, each re-tested with
 * prox's exact closed box test.
 *
 * Variants: dynamic (DynamicAABBTreeCollisionManager), sap
 * (SaPCollisionManager), hash (SpatialHashingCollisionManager: cell edge 2,
 * the spheres' diameter; scene limit the data's bounds; one table slot per
 * sphere instead of FCL's default 1,000, which at 1M spheres would be a
 * near-linear scan per query).
 *
 * Exactness: FCL's hash assigns a box to the half-open cells
 * [floor(lo / c), ceil(hi / c)), so two boxes touching exactly on a cell face
 * share no cell and would never be reported. The sphere geometry handed to
 * FCL therefore has radius 1 + 16 ulp(max |coordinate| + 1): its boxes
 * strictly contain W3's boxes, so every manager's candidates contain every
 * closed pair, and the double re-test selects exactly prox's pairs. */
#include <fcl/broadphase/broadphase_SaP.h>
#include <fcl/broadphase/broadphase_dynamic_AABB_tree.h>
#include <fcl/broadphase/broadphase_spatialhash.h>
#include <fcl/geometry/shape/sphere.h>
#include <fcl/narrowphase/collision_object.h>

#include <memory>

#include "common.hpp"

namespace {

struct tally {
    const std::vector<prox_aabb> *boxes;
    int64_t candidates = 0, pairs = 0;
};

bool count_pair(fcl::CollisionObjectd *a, fcl::CollisionObjectd *b, void *data)
{
    tally *t = static_cast<tally *>(data);
    size_t i = (size_t)(intptr_t)a->getUserData(), j = (size_t)(intptr_t)b->getUserData();
    t->candidates++;
    t->pairs += prox_aabb_overlap(&(*t->boxes)[i], &(*t->boxes)[j]);
    return false; /* go on */
}

std::unique_ptr<fcl::BroadPhaseCollisionManagerd>
make_manager(const std::string &variant, const fcl::Vector3d &lo, const fcl::Vector3d &hi,
             size_t n)
{
    if (variant == "dynamic")
        return std::make_unique<fcl::DynamicAABBTreeCollisionManagerd>();
    if (variant == "sap")
        return std::make_unique<fcl::SaPCollisionManagerd>();
    return std::make_unique<fcl::SpatialHashingCollisionManager<double>>(
        2.0, lo, hi, (unsigned)std::max<size_t>(n, 1000));
}

} // namespace

int main(int argc, char **argv)
{
    peer::options o = peer::parse_options(argc, argv, { "dynamic", "sap", "hash" });
    if (o.workload != "W3")
        peer::die("the FCL driver runs W3 only, not %s", o.workload.c_str());
    std::vector<prox_aabb> boxes = peer::read_boxes(o.boxes, 3);
    peer::decline_above_max_n(o, boxes.size(), "peer_fcl");
    double extent = 1.0;
    fcl::Vector3d lo(0, 0, 0), hi(0, 0, 0);
    for (size_t i = 0; i < boxes.size(); i++)
        for (int k = 0; k < 3; k++) {
            extent = std::max(extent, std::max(std::fabs(boxes[i].lo[k]), std::fabs(boxes[i].hi[k])));
            lo[k] = i ? std::min(lo[k], boxes[i].lo[k]) : boxes[i].lo[k];
            hi[k] = i ? std::max(hi[k], boxes[i].hi[k]) : boxes[i].hi[k];
        }
    double radius = 1.0 + 16.0 * (std::nextafter(extent + 1.0, INFINITY) - (extent + 1.0));
    fcl::Vector3d pad(1, 1, 1);

    double t0 = peer::now_seconds();
    auto sphere = std::make_shared<fcl::Sphered>(radius);
    std::vector<fcl::CollisionObjectd> objects;
    objects.reserve(boxes.size());
    std::vector<fcl::CollisionObjectd *> pointers(boxes.size());
    for (size_t i = 0; i < boxes.size(); i++) {
        const prox_aabb &b = boxes[i];
        fcl::Transform3d tf = fcl::Transform3d::Identity();
        tf.translation() = fcl::Vector3d(0.5 * (b.lo[0] + b.hi[0]), 0.5 * (b.lo[1] + b.hi[1]),
                                         0.5 * (b.lo[2] + b.hi[2]));
        objects.emplace_back(sphere, tf);
        objects.back().setUserData((void *)(intptr_t)i);
        pointers[i] = &objects.back();
    }
    auto manager = make_manager(o.variant, lo - pad, hi + pad, boxes.size());
    manager->registerObjects(pointers);
    manager->setup();
    double t1 = peer::now_seconds();
    tally t;
    t.boxes = &boxes;
    manager->collide(&t, count_pair);
    double t2 = peer::now_seconds();
    peer::print_result("fcl-" + o.variant, o, (int64_t)boxes.size(), t1 - t0, t2 - t1, t.pairs,
                       peer::key("candidates", (double)t.candidates));
    return 0;
}
