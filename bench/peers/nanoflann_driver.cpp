// nanoflann_driver.cpp: W1/W2 with nanoflann's KD-tree (libnanoflann-dev):
// radiusSearch around every point, in input order or in the tree's order.
//
// Boundary: nanoflann's RadiusResultSet keeps dist < radius (strict), with
// dist the squared distance summed x, y, z as prox does; the bound passed is
// the next double above r*r, which accepts exactly dist <= r*r.
#include <cstdint> // nanoflann 1.4's header uses uint32_t without it (an error from g++ 13 on)
#include <nanoflann.hpp>

#include "peer_common.hpp"

namespace {

struct cloud {
    const peer::point_set *ps;
    size_t kdtree_get_point_count() const { return ps->n; }
    double kdtree_get_pt(size_t i, size_t k) const { return ps->xyz[i * (size_t)ps->dim + k]; }
    template <class BBOX> bool kdtree_get_bbox(BBOX &) const { return false; }
};

template <int DIM> void run(const peer::options &o, const peer::point_set &ps)
{
    using metric = nanoflann::L2_Simple_Adaptor<double, cloud>;
    using tree = nanoflann::KDTreeSingleIndexAdaptor<metric, cloud, DIM, size_t>;
    cloud c{ &ps };

    double t0 = peer::now();
    tree index(DIM, c, nanoflann::KDTreeSingleIndexAdaptorParams(10));
    index.buildIndex();
    double t1 = peer::now();

    const double bound = peer::strict_bound_for_closed_ball(o.radius);
    nanoflann::SearchParams params(32, 0.0f, false); // exact, unsorted
    std::vector<std::pair<size_t, double>> found;
    found.reserve(256);
    unsigned long long entries = 0;
    const bool tree_order = o.order == "tree";
    for (size_t q = 0; q < ps.n; q++) {
        size_t i = tree_order ? index.vAcc[q] : q;
        index.radiusSearch(&ps.xyz[i * DIM], bound, found, params);
        for (const auto &m : found)
            entries += m.first != i;
    }
    double t2 = peer::now();
    peer::print_result(tree_order ? "nanoflann-tree-order" : "nanoflann", o, ps.n, t1 - t0,
                       t2 - t1, entries / 2, "order=" + o.order);
}

} // namespace

int main(int argc, char **argv)
{
    peer::options o = peer::parse_options(argc, argv);
    peer::point_set ps = peer::read_points(o);
    if (peer::report_if_empty(o.order == "tree" ? "nanoflann-tree-order" : "nanoflann", o, ps))
        return 0;
    if (ps.dim == 3)
        run<3>(o, ps);
    else
        run<2>(o, ps);
    return 0;
}
