// nanoflann_knn_driver.cpp: the kNN rows of bench/knn.sh with nanoflann's
// KD-tree (libnanoflann-dev): knnSearch of k + 1 around every point (the
// point itself comes first, at distance 0, and is dropped), in input order
// or in the tree's order (index.vAcc: queries that follow the leaves, the
// order nanoflann is fastest in).
//
// Prints the result line of README.md; `count` is the checksum
// bench/knn_points.c computes (sum of (rank + 1) * index), equal on inputs
// without ties at the k-th distance (random doubles).
//   peer_nanoflann_knn FILE.f64 DIM K input|tree WORKLOAD
#include <cstdint> // nanoflann 1.4's header uses uint32_t without it
#include <nanoflann.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "peer_common.hpp"

namespace {

struct cloud {
    const std::vector<double> *xyz;
    int dim;
    size_t kdtree_get_point_count() const { return xyz->size() / (size_t)dim; }
    double kdtree_get_pt(size_t i, size_t k) const { return (*xyz)[i * (size_t)dim + k]; }
    template <class BBOX> bool kdtree_get_bbox(BBOX &) const { return false; }
};

std::vector<double> read_f64(const char *path)
{
    FILE *f = std::fopen(path, "rb");
    if (!f)
        peer::fail("cannot open", path);
    std::vector<double> v;
    double buf[4096];
    size_t got;
    while ((got = std::fread(buf, sizeof(double), 4096, f)) > 0)
        v.insert(v.end(), buf, buf + got);
    std::fclose(f);
    return v;
}

template <int DIM> int run(const std::vector<double> &xyz, int k, bool tree_order,
                           const char *workload)
{
    using metric = nanoflann::L2_Simple_Adaptor<double, cloud>;
    using tree = nanoflann::KDTreeSingleIndexAdaptor<metric, cloud, DIM, size_t>;
    cloud c{&xyz, DIM};
    size_t n = c.kdtree_get_point_count();
    double t0 = peer::now();
    tree index(DIM, c, nanoflann::KDTreeSingleIndexAdaptorParams(10));
    index.buildIndex();
    double t1 = peer::now();
    std::vector<size_t> ids((size_t)k + 1);
    std::vector<double> d2((size_t)k + 1);
    unsigned long long sum = 0;
    for (size_t q = 0; q < n; q++) {
        size_t i = tree_order ? index.vAcc[q] : q;
        size_t found = index.knnSearch(&xyz[i * DIM], (size_t)k + 1, ids.data(), d2.data());
        int rank = 0;
        for (size_t t = 0; t < found && rank < k; t++)
            if (ids[t] != i)
                sum += (unsigned long long)(++rank) * ids[t];
    }
    double t2 = peer::now();
    std::printf("library=%s workload=%s N=%zu build_s=%.6f query_s=%.6f total_s=%.6f "
                "count=%llu peak_rss_mb=%.1f order=%s\n",
                tree_order ? "nanoflann-tree-order" : "nanoflann", workload, n, t1 - t0, t2 - t1,
                t2 - t0, sum, peer::peak_rss_mb(), tree_order ? "tree" : "input");
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    if (argc != 6)
        peer::fail("usage", std::string(argv[0]) + " FILE.f64 DIM K input|tree WORKLOAD");
    int dim = std::atoi(argv[2]), k = std::atoi(argv[3]);
    std::string order = argv[4];
    std::vector<double> xyz = read_f64(argv[1]);
    if ((dim != 2 && dim != 3) || k < 1 || xyz.empty())
        peer::fail("bad DIM or K, or no points", argv[1]);
    bool tree_order = order == "tree";
    return dim == 3 ? run<3>(xyz, k, tree_order, argv[5]) : run<2>(xyz, k, tree_order, argv[5]);
}
