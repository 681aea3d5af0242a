/* box2d.cpp: Box2D 2.4's b2DynamicTree (single precision, 2D) over W4's
 * boxes, built by insertion (CreateProxy, with its own balancing rotations).
 *
 * Box2D stores each proxy's box "fattened" by b2_aabbExtension (0.1 length
 * units) on every side, and this driver hands it the float box holding the
 * double box (lo rounded down, hi rounded up): its candidates contain every
 * exact hit, and each candidate is re-tested in double with prox's exact
 * segment-box test. b2TestOverlap is closed (a gap must be > 0 to separate).
 *
 * Variants:
 *   query    Query() with the segment's float-widened bounding box;
 *   raycast  RayCast() with the segment (float endpoints), the callback
 *            returning the input's maxFraction so that every box the ray
 *            meets is reported. Its float separating-axis test errs by about
 *            ulp(8192) = 0.001 at W4's coordinates, well inside the 0.1 fat
 *            margin; segments of length 0 (RayCast requires length > 0) use
 *            Query. */
#include <box2d/b2_collision.h>
#include <box2d/b2_dynamic_tree.h>

#include "common.hpp"

namespace {

struct query_callback {
    const b2DynamicTree *tree;
    const std::vector<prox_aabb> *boxes;
    const peer::segment *segment;
    size_t q;
    peer::hit_tally *tally;

    bool QueryCallback(int32 proxy)
    {
        size_t i = (size_t)(uintptr_t)tree->GetUserData(proxy);
        tally->test(*segment, q, (*boxes)[i]);
        return true;
    }
    float RayCastCallback(const b2RayCastInput &input, int32 proxy)
    {
        QueryCallback(proxy);
        return input.maxFraction;
    }
};

b2AABB float_box(const prox_aabb &b)
{
    b2AABB a;
    a.lowerBound.Set(peer::float_down(b.lo[0]), peer::float_down(b.lo[1]));
    a.upperBound.Set(peer::float_up(b.hi[0]), peer::float_up(b.hi[1]));
    return a;
}

} // namespace

int main(int argc, char **argv)
{
    peer::options o = peer::parse_options(argc, argv, { "query", "raycast" });
    if (o.workload != "W4")
        peer::die("the Box2D driver runs W4 only, not %s", o.workload.c_str());
    std::vector<prox_aabb> boxes = peer::read_boxes(o.boxes, 2);
    std::vector<peer::segment> segments = peer::read_segments(o.segments);
    double t0 = peer::now_seconds();
    b2DynamicTree tree;
    for (size_t i = 0; i < boxes.size(); i++)
        tree.CreateProxy(float_box(boxes[i]), (void *)(uintptr_t)i);
    double t1 = peer::now_seconds();
    peer::hit_tally tally(segments.size());
    query_callback cb{ &tree, &boxes, nullptr, 0, &tally };
    bool raycast = o.variant == "raycast";
    for (size_t q = 0; q < segments.size(); q++) {
        const peer::segment &s = segments[q];
        cb.segment = &s;
        cb.q = q;
        b2RayCastInput ray;
        ray.p1.Set((float)s.p0[0], (float)s.p0[1]);
        ray.p2.Set((float)s.p1[0], (float)s.p1[1]);
        ray.maxFraction = 1.0f;
        if (raycast && (ray.p2 - ray.p1).LengthSquared() > 0.0f)
            tree.RayCast(&cb, ray);
        else
            tree.Query(&cb, float_box(peer::segment_box(s)));
    }
    double t2 = peer::now_seconds();
    peer::print_result("box2d-" + o.variant, o, (int64_t)boxes.size(), t1 - t0, t2 - t1,
                       tally.hits, tally.extra());
    return 0;
}
