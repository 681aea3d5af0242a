// peer_common.hpp: what every C++ peer driver shares: options, reading a
// workload file written by `prox gen`, the clock, peak memory, and the one
// result line of the contract (README.md).
#pragma once

#include <sys/resource.h>
#include <time.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace peer {

struct options {
    std::string file;
    std::string workload = "W1";
    std::string order = "input"; // nanoflann: input or tree
    double radius = 0;
    int dim = 0; // 0: the file's '# dim=' header, else 3
};

[[noreturn]] inline void fail(const char *what, const std::string &detail)
{
    std::fprintf(stderr, "peer driver: %s%s%s\n", what, detail.empty() ? "" : ": ",
                 detail.c_str());
    std::exit(2);
}

inline options parse_options(int argc, char **argv)
{
    options o;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        bool has_value = i + 1 < argc;
        if (a == "--radius" && has_value)
            o.radius = std::strtod(argv[++i], nullptr);
        else if (a == "--workload" && has_value)
            o.workload = argv[++i];
        else if (a == "--dim" && has_value)
            o.dim = std::atoi(argv[++i]);
        else if (a == "--order" && has_value)
            o.order = argv[++i];
        else if (!a.empty() && a[0] != '-' && o.file.empty())
            o.file = a;
        else
            fail("unknown or incomplete option", a);
    }
    if (o.file.empty())
        fail("usage", std::string(argv[0]) +
                          " FILE --radius R [--workload W] [--dim 2|3] [--order input|tree]");
    if (!(o.radius > 0) || !std::isfinite(o.radius))
        fail("--radius must be > 0 and finite", "");
    if (o.order != "input" && o.order != "tree")
        fail("--order must be input or tree", o.order);
    return o;
}

// Points of a `prox gen` text file: '#' header lines (one may say 'dim=D'),
// then one point per line. Coordinates are read with strtod: exact for the
// %.17g text prox writes, so every library sees the same doubles.
struct point_set {
    int dim = 3;
    size_t n = 0;
    std::vector<double> xyz; // n * dim, row major
};

inline point_set read_points(const options &o)
{
    FILE *f = std::fopen(o.file.c_str(), "r");
    if (!f)
        fail("cannot open", o.file + ": " + std::strerror(errno));
    point_set ps;
    ps.dim = o.dim;
    char line[4096];
    long lineno = 0;
    while (std::fgets(line, sizeof line, f)) {
        lineno++;
        if (line[0] == '#') {
            const char *d = std::strstr(line, "dim=");
            if (d && o.dim == 0)
                ps.dim = std::atoi(d + 4);
            continue;
        }
        if (ps.dim == 0)
            ps.dim = 3;
        char *p = line, *end;
        int k = 0;
        for (; k < ps.dim; k++) {
            double v = std::strtod(p, &end);
            if (end == p || !std::isfinite(v))
                break;
            ps.xyz.push_back(v);
            p = end;
        }
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
            p++;
        if (k == 0 && *p == '\0')
            continue; // blank line
        if (k != ps.dim || *p != '\0')
            fail("bad point line", o.file + ":" + std::to_string(lineno));
    }
    std::fclose(f);
    if (ps.dim == 0)
        ps.dim = 3;
    if (ps.dim != 2 && ps.dim != 3)
        fail("dimension must be 2 or 3", o.file);
    ps.n = ps.xyz.size() / (size_t)ps.dim;
    return ps;
}

inline double now()
{
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

inline double peak_rss_mb()
{
    rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_maxrss / 1024.0; // ru_maxrss is in KiB on Linux
}

// The squared radius that a strict "dist < bound" test needs to accept
// exactly the pairs with dist <= r*r: the next double above r*r.
inline double strict_bound_for_closed_ball(double r)
{
    return std::nextafter(r * r, INFINITY);
}

inline void print_result(const char *library, const options &o, size_t n, double build_s,
                         double query_s, unsigned long long count, const std::string &extra = "")
{
    std::printf("library=%s workload=%s N=%zu build_s=%.6f query_s=%.6f total_s=%.6f "
                "count=%llu peak_rss_mb=%.1f%s%s\n",
                library, o.workload.c_str(), n, build_s, query_s, build_s + query_s, count,
                peak_rss_mb(), extra.empty() ? "" : " ", extra.c_str());
}

// nanoflann and FLANN cannot build a tree over no points (nanoflann throws,
// FLANN reads through a null pointer): an empty file has no pairs.
inline bool report_if_empty(const char *library, const options &o, const point_set &ps)
{
    if (ps.n != 0)
        return false;
    print_result(library, o, 0, 0.0, 0.0, 0, "empty=1");
    return true;
}

} // namespace peer
