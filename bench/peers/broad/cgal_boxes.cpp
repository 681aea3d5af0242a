/* cgal_boxes.cpp: CGAL's box intersection (Zomorodian & Edelsbrunner's
 * streamed segment tree) as a broad-phase peer.
 *   W3: box_self_intersection_d over the spheres' boxes, closed topology
 *       (touching boxes intersect, as prox's); every reported pair is
 *       re-tested with prox's exact closed test (it always passes: CGAL
 *       compares the same doubles).
 *   W7: box_self_intersection_d over the polydisperse spheres' boxes
 *       (centre -+ r, from bench_sized_points' raw x, y, z, r doubles),
 *       then the exact contact test (r_i + r_j)^2 >= d^2 in double on
 *       every reported pair (docs/workloads.md, W7).
 *   W4: box_intersection_d of the boxes against the segments' bounding
 *       boxes, then the exact segment-box test on every reported pair.
 * build_s: copying the boxes into CGAL's box type (the algorithm keeps no
 * structure); query_s: the intersection call, callbacks included. */
#include <CGAL/Bbox_2.h>
#include <CGAL/Bbox_3.h>
#include <CGAL/Box_intersection_d/Box_with_info_d.h>
#include <CGAL/box_intersection_d.h>

#include "common.hpp"

namespace {

using box3 = CGAL::Box_intersection_d::Box_with_info_d<double, 3, uint32_t,
                                                       CGAL::Box_intersection_d::ID_EXPLICIT>;
using box2 = CGAL::Box_intersection_d::Box_with_info_d<double, 2, uint32_t,
                                                       CGAL::Box_intersection_d::ID_EXPLICIT>;

void self_pairs(const peer::options &o)
{
    std::vector<prox_aabb> boxes = peer::read_boxes(o.boxes, 3);
    double t0 = peer::now_seconds();
    std::vector<box3> cgal_boxes;
    cgal_boxes.reserve(boxes.size());
    for (size_t i = 0; i < boxes.size(); i++) {
        const prox_aabb &b = boxes[i];
        cgal_boxes.emplace_back(
            CGAL::Bbox_3(b.lo[0], b.lo[1], b.lo[2], b.hi[0], b.hi[1], b.hi[2]), (uint32_t)i);
    }
    double t1 = peer::now_seconds();
    int64_t candidates = 0, pairs = 0;
    CGAL::box_self_intersection_d(cgal_boxes.begin(), cgal_boxes.end(),
                                  [&](const box3 &a, const box3 &b) {
                                      candidates++;
                                      pairs += prox_aabb_overlap(&boxes[a.info()],
                                                                 &boxes[b.info()]);
                                  });
    double t2 = peer::now_seconds();
    peer::print_result("cgal-box-self", o, (int64_t)boxes.size(), t1 - t0, t2 - t1, pairs,
                       peer::key("candidates", (double)candidates));
}

void sphere_contacts(const peer::options &o)
{
    std::FILE *f = std::fopen(o.boxes.c_str(), "rb");
    if (!f)
        peer::die("cannot read %s", o.boxes.c_str());
    std::vector<double> xyzr;
    double v[4];
    while (std::fread(v, sizeof v[0], 4, f) == 4)
        xyzr.insert(xyzr.end(), v, v + 4);
    std::fclose(f);
    size_t n = xyzr.size() / 4;
    double t0 = peer::now_seconds();
    std::vector<box3> cgal_boxes;
    cgal_boxes.reserve(n);
    for (size_t i = 0; i < n; i++) {
        const double *s = &xyzr[4 * i];
        cgal_boxes.emplace_back(CGAL::Bbox_3(s[0] - s[3], s[1] - s[3], s[2] - s[3], s[0] + s[3],
                                             s[1] + s[3], s[2] + s[3]),
                                (uint32_t)i);
    }
    double t1 = peer::now_seconds();
    int64_t candidates = 0, pairs = 0;
    CGAL::box_self_intersection_d(cgal_boxes.begin(), cgal_boxes.end(),
                                  [&](const box3 &a, const box3 &b) {
                                      const double *p = &xyzr[4 * a.info()];
                                      const double *q = &xyzr[4 * b.info()];
                                      double dx = p[0] - q[0], dy = p[1] - q[1], dz = p[2] - q[2];
                                      double t = p[3] + q[3];
                                      candidates++;
                                      pairs += dx * dx + dy * dy + dz * dz <= t * t;
                                  });
    double t2 = peer::now_seconds();
    peer::print_result("cgal-box-self", o, (int64_t)n, t1 - t0, t2 - t1, pairs,
                       peer::key("candidates", (double)candidates));
}

void segment_hits(const peer::options &o)
{
    std::vector<prox_aabb> boxes = peer::read_boxes(o.boxes, 2);
    std::vector<peer::segment> segments = peer::read_segments(o.segments);
    double t0 = peer::now_seconds();
    std::vector<box2> cgal_boxes, cgal_queries;
    cgal_boxes.reserve(boxes.size());
    for (size_t i = 0; i < boxes.size(); i++) {
        const prox_aabb &b = boxes[i];
        cgal_boxes.emplace_back(CGAL::Bbox_2(b.lo[0], b.lo[1], b.hi[0], b.hi[1]), (uint32_t)i);
    }
    double t1 = peer::now_seconds();
    /* The segments' boxes are part of the query, as prox computes them in its
     * query call. */
    cgal_queries.reserve(segments.size());
    for (size_t q = 0; q < segments.size(); q++) {
        prox_aabb s = peer::segment_box(segments[q]);
        cgal_queries.emplace_back(CGAL::Bbox_2(s.lo[0], s.lo[1], s.hi[0], s.hi[1]),
                                  (uint32_t)q);
    }
    peer::hit_tally tally(segments.size());
    CGAL::box_intersection_d(cgal_boxes.begin(), cgal_boxes.end(), cgal_queries.begin(),
                             cgal_queries.end(), [&](const box2 &b, const box2 &s) {
                                 tally.test(segments[s.info()], s.info(), boxes[b.info()]);
                             });
    double t2 = peer::now_seconds();
    peer::print_result("cgal-box", o, (int64_t)boxes.size(), t1 - t0, t2 - t1, tally.hits,
                       tally.extra());
}

} // namespace

int main(int argc, char **argv)
{
    peer::options o = peer::parse_options(argc, argv, { "default" });
    if (o.workload == "W3")
        self_pairs(o);
    else if (o.workload == "W7")
        sphere_contacts(o);
    else
        segment_hits(o);
    return 0;
}
