/* cgal_delaunay.cpp: the broad phase of Poirrier 2009's Delaunay comparison: the
 * 3D Delaunay triangulation of the sphere centres (CGAL, exact predicates,
 * inexact constructions, points inserted as a range: CGAL sorts them along a
 * Hilbert curve first), candidate pairs = the triangulation's finite edges,
 * then the exact sphere test (squared centre distance <= (r1 + r2)^2 = 4 in
 * double).
 *
 * What it counts is NOT W3's count: it counts overlapping SPHERES (as
 * `prox pairs --radius 2`), and only those that are Delaunay edges. Two
 * overlapping spheres whose centres are not joined by a Delaunay edge (a third
 * centre inside their diametral ball: possible even with equal radii, and the
 * norm for unequal radii) are missed, so the count can be lower than prox's
 * sphere count. The driver reports edges (candidates) and pairs; the manifest
 * keeps this row out of the W3 cross-check (bench/peers/README.md).
 *
 * Input: the centres file (3 numbers a line); a boxes file (6) is read as
 * its boxes' centres. */
#include <CGAL/Delaunay_triangulation_3.h>
#include <CGAL/Exact_predicates_inexact_constructions_kernel.h>

#include "common.hpp"

namespace {

using kernel = CGAL::Exact_predicates_inexact_constructions_kernel;
using triangulation = CGAL::Delaunay_triangulation_3<kernel>;
using point = kernel::Point_3;

std::vector<point> read_centres(const std::string &path)
{
    int cols;
    std::vector<double> v = peer::read_rows(path, &cols);
    if (!v.empty() && cols != 3 && cols != 6)
        peer::die("%s: expected 3 numbers a line (centres) or 6 (boxes)", path.c_str());
    std::vector<point> centres;
    if (v.empty())
        return centres;
    size_t n = v.size() / (size_t)cols;
    centres.reserve(n);
    for (size_t i = 0; i < n; i++) {
        const double *r = &v[i * (size_t)cols];
        if (cols == 3)
            centres.emplace_back(r[0], r[1], r[2]);
        else
            centres.emplace_back(0.5 * (r[0] + r[3]), 0.5 * (r[1] + r[4]), 0.5 * (r[2] + r[5]));
    }
    return centres;
}

} // namespace

int main(int argc, char **argv)
{
    peer::options o = peer::parse_options(argc, argv, { "default" });
    if (o.workload != "W3")
        peer::die("the Delaunay driver runs W3 only, not %s", o.workload.c_str());
    std::vector<point> centres = read_centres(o.boxes);
    double t0 = peer::now_seconds();
    triangulation dt(centres.begin(), centres.end());
    double t1 = peer::now_seconds();
    int64_t edges = 0, pairs = 0;
    for (auto e = dt.finite_edges_begin(); e != dt.finite_edges_end(); ++e) {
        const point &a = e->first->vertex(e->second)->point();
        const point &b = e->first->vertex(e->third)->point();
        double dx = a.x() - b.x(), dy = a.y() - b.y(), dz = a.z() - b.z();
        edges++;
        pairs += dx * dx + dy * dy + dz * dz <= 4.0;
    }
    double t2 = peer::now_seconds();
    peer::print_result("cgal-delaunay", o, (int64_t)centres.size(), t1 - t0, t2 - t1, pairs,
                       peer::key("candidates", (double)edges) + " counts=sphere_pairs");
    return 0;
}
