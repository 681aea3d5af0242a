// flann_driver.cpp: W1/W2 with FLANN's exact single KD-tree (libflann-dev):
// a radius search around every point, in input order.
//
// Boundary: FLANN's public Index::radiusSearch takes the radius as a float,
// which would round r*r; the driver calls the index's findNeighbors with a
// double RadiusResultSet instead. That result set keeps dist < radius
// (strict) with dist summed x, y, z (L2_Simple) as prox does; the bound is
// the next double above r*r, which accepts exactly dist <= r*r.
#include <flann/flann.hpp>

#include "peer_common.hpp"

int main(int argc, char **argv)
{
    peer::options o = peer::parse_options(argc, argv);
    peer::point_set ps = peer::read_points(o);
    if (peer::report_if_empty("flann", o, ps))
        return 0;
    flann::Matrix<double> data(ps.xyz.data(), ps.n, (size_t)ps.dim);

    double t0 = peer::now();
    flann::KDTreeSingleIndex<flann::L2_Simple<double>> index(
        data, flann::KDTreeSingleIndexParams(10, true));
    index.buildIndex();
    double t1 = peer::now();

    flann::RadiusResultSet<double> found(peer::strict_bound_for_closed_ball(o.radius));
    flann::SearchParams params(flann::FLANN_CHECKS_UNLIMITED, 0.0f, false);
    unsigned long long entries = 0;
    for (size_t i = 0; i < ps.n; i++) {
        found.clear();
        index.findNeighbors(found, &ps.xyz[i * (size_t)ps.dim], params);
        entries += found.size();
    }
    double t2 = peer::now();
    // Every point finds itself (distance 0); other points at the same spot
    // are real pairs and stay counted.
    unsigned long long pairs = (entries - ps.n) / 2;
    peer::print_result("flann", o, ps.n, t1 - t0, t2 - t1, pairs);
    return 0;
}
