/* common.hpp: what every broad-phase peer driver shares: the command line,
 * reading the workload files `prox gen` writes, the clock, peak memory, the
 * exact tests (prox's own src/box_exact.h, so that every library decides with
 * the same bits as prox) and the one result line of bench/peers/README.md.
 *
 * A driver is run as
 *   DRIVER --workload W3 [--variant V] BOXES              (W3: self pairs)
 *   DRIVER --workload W4 [--variant V] BOXES SEGMENTS     (W4: segment hits)
 * W3's BOXES are the spheres' boxes (centre -+ 1, 6 numbers a line); a file of
 * 3 numbers a line is taken as the sphere centres and turned into the same
 * boxes here (c - 1, c + 1 in double, as the runner's {boxes} file holds). */
#ifndef PROX_PEERS_BROAD_COMMON_HPP
#define PROX_PEERS_BROAD_COMMON_HPP

#include <sys/resource.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

extern "C" {
#include "broad/box_exact.h"
}

namespace peer {

[[noreturn]] inline void die(const char *fmt, const char *a = "", const char *b = "")
{
    std::fprintf(stderr, "peer: ");
    std::fprintf(stderr, fmt, a, b);
    std::fprintf(stderr, "\n");
    std::exit(2);
}

struct options {
    std::string workload; /* "W3" or "W4" */
    std::string variant;  /* the library's structure or method, driver-specific */
    std::string boxes, segments;
    int64_t max_n = 0; /* --max-n: refuse larger inputs (quadratic peers) */
};

/* Parses the command line; `variants` lists the accepted --variant values,
 * the first being the default. */
inline options parse_options(int argc, char **argv, std::vector<std::string> variants)
{
    options o;
    std::vector<std::string> files;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        if ((a == "--workload" || a == "--variant" || a == "--max-n") && i + 1 < argc) {
            std::string v = argv[++i];
            if (a == "--workload")
                o.workload = v;
            else if (a == "--variant")
                o.variant = v;
            else
                o.max_n = std::strtoll(v.c_str(), nullptr, 10);
        } else if (a.size() > 1 && a[0] == '-') {
            die("unknown option '%s' (--workload W3|W4, --variant V, --max-n N)", a.c_str());
        } else {
            files.push_back(a);
        }
    }
    if (o.workload != "W3" && o.workload != "W4" && o.workload != "W7")
        die("--workload must be W3, W4 or W7, not '%s'", o.workload.c_str());
    size_t want = o.workload == "W4" ? 2 : 1; /* W7: the spheres, x y z r as raw doubles */
    if (files.size() != want)
        die("%s needs %s", o.workload.c_str(), want == 1 ? "BOXES" : "BOXES SEGMENTS");
    o.boxes = files[0];
    if (want == 2)
        o.segments = files[1];
    if (o.variant.empty())
        o.variant = variants[0];
    bool known = false;
    std::string list;
    for (const std::string &v : variants) {
        known = known || v == o.variant;
        list += (list.empty() ? "" : ", ") + v;
    }
    if (!known)
        die("unknown --variant '%s' (one of: %s)", o.variant.c_str(), list.c_str());
    return o;
}

/* Exit status 77 ("skipped", which run.sh records) when the input holds
 * more than --max-n elements: quadratic peers decline large sizes. */
inline void decline_above_max_n(const options &o, size_t n, const char *driver)
{
    if (o.max_n > 0 && (int64_t)n > o.max_n) {
        std::fprintf(stderr, "%s: %s skipped: N = %zu > --max-n %lld\n", driver,
                     o.variant.c_str(), n, (long long)o.max_n);
        std::exit(77);
    }
}

/* Rows of numbers: '#' lines and blank lines skipped, numbers separated by
 * spaces, tabs or commas. Every row must have the same count of numbers; it
 * is returned in *cols. */
inline std::vector<double> read_rows(const std::string &path, int *cols)
{
    FILE *f = std::fopen(path.c_str(), "rb");
    if (!f)
        die("cannot open '%s': %s", path.c_str(), std::strerror(errno));
    std::string text;
    char buf[1 << 16];
    size_t got;
    while ((got = std::fread(buf, 1, sizeof buf, f)) > 0)
        text.append(buf, got);
    std::fclose(f);
    std::vector<double> v;
    *cols = 0;
    int64_t line = 0;
    const char *p = text.c_str(), *end = p + text.size();
    while (p < end) {
        const char *eol = static_cast<const char *>(std::memchr(p, '\n', (size_t)(end - p)));
        if (!eol)
            eol = end;
        line++;
        int count = 0;
        const char *q = p;
        while (q < eol) {
            while (q < eol && (*q == ' ' || *q == '\t' || *q == ',' || *q == '\r'))
                q++;
            if (q >= eol || *q == '#')
                break;
            char *stop;
            double x = std::strtod(q, &stop);
            if (stop == q || stop > eol || !std::isfinite(x)) {
                std::string where = path + ":" + std::to_string(line);
                die("%s: not a finite number", where.c_str());
            }
            v.push_back(x);
            count++;
            q = stop;
        }
        if (count > 0) {
            if (*cols == 0)
                *cols = count;
            if (count != *cols) {
                std::string where = path + ":" + std::to_string(line);
                die("%s: row has a different count of numbers than the first row",
                    where.c_str());
            }
        }
        p = eol + 1;
    }
    return v;
}

/* W3's boxes: the spheres' boxes (6 columns), or their centres (3 columns)
 * turned into centre -+ 1. Returns the boxes as prox_aabb. */
inline std::vector<prox_aabb> read_boxes(const std::string &path, int dim)
{
    int cols;
    std::vector<double> v = read_rows(path, &cols);
    std::vector<prox_aabb> boxes;
    if (v.empty())
        return boxes;
    bool centres = dim == 3 && cols == 3;
    if (!centres && cols != 2 * dim)
        die("%s: expected %s numbers a line", path.c_str(), dim == 3 ? "6 (or 3 centres)" : "4");
    size_t n = v.size() / (size_t)cols;
    boxes.resize(n);
    for (size_t i = 0; i < n; i++) {
        const double *r = &v[i * (size_t)cols];
        prox_aabb &b = boxes[i];
        for (int k = 0; k < 3; k++) {
            if (k >= dim) {
                b.lo[k] = b.hi[k] = 0.0;
            } else if (centres) {
                b.lo[k] = r[k] - 1.0;
                b.hi[k] = r[k] + 1.0;
            } else {
                b.lo[k] = r[k];
                b.hi[k] = r[dim + k];
            }
        }
        for (int k = 0; k < dim; k++)
            if (!(b.lo[k] <= b.hi[k]))
                die("%s: a box with min > max", path.c_str());
    }
    return boxes;
}

struct segment {
    double p0[3], p1[3];
};

/* W4's segments: x0 y0 x1 y1 a line (z = 0). */
inline std::vector<segment> read_segments(const std::string &path)
{
    int cols;
    std::vector<double> v = read_rows(path, &cols);
    if (!v.empty() && cols != 4)
        die("%s: expected 4 numbers a line (x0 y0 x1 y1)", path.c_str());
    std::vector<segment> s(v.size() / 4);
    for (size_t i = 0; i < s.size(); i++) {
        s[i].p0[0] = v[4 * i];
        s[i].p0[1] = v[4 * i + 1];
        s[i].p1[0] = v[4 * i + 2];
        s[i].p1[1] = v[4 * i + 3];
        s[i].p0[2] = s[i].p1[2] = 0.0;
    }
    return s;
}

inline prox_aabb segment_box(const segment &s)
{
    return prox_aabb_of_segment(s.p0, s.p1);
}

/* Single-precision libraries (Bullet, Box2D) get float boxes that contain
 * the double box: lo rounded down, hi rounded up, so that their candidates
 * are a superset of the exact pairs, which the double re-test then selects. */
inline float float_down(double x)
{
    float f = (float)x;
    return (double)f > x ? std::nextafter(f, -INFINITY) : f;
}
inline float float_up(double x)
{
    float f = (float)x;
    return (double)f < x ? std::nextafter(f, INFINITY) : f;
}

inline double now_seconds()
{
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

inline double peak_rss_mb()
{
    rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_maxrss / 1024.0; /* Linux: kilobytes */
}

/* The result line of bench/peers/README.md; `extra` is appended as is
 * (" key=value ..."). */
inline void print_result(const std::string &library, const options &o, int64_t n, double build_s,
                         double query_s, int64_t count, const std::string &extra = "")
{
    std::printf("library=%s workload=%s N=%lld build_s=%.6f query_s=%.6f total_s=%.6f "
                "count=%lld peak_rss_mb=%.1f%s\n",
                library.c_str(), o.workload.c_str(), (long long)n, build_s, query_s,
                build_s + query_s, (long long)count, peak_rss_mb(), extra.c_str());
}

inline std::string key(const char *name, double value)
{
    char buf[96];
    if (value == std::floor(value) && std::fabs(value) < 9e15)
        std::snprintf(buf, sizeof buf, " %s=%lld", name, (long long)value);
    else
        std::snprintf(buf, sizeof buf, " %s=%.6g", name, value);
    return buf;
}

/* W4's tally: exact hits, and the segments that hit at least one box. */
struct hit_tally {
    int64_t candidates = 0, hits = 0;
    std::vector<uint8_t> segment_hit;
    explicit hit_tally(size_t segments) : segment_hit(segments, 0) {}
    void test(const segment &s, size_t q, const prox_aabb &b)
    {
        candidates++;
        if (prox_segment_hits_aabb(s.p0, s.p1, &b)) {
            hits++;
            segment_hit[q] = 1;
        }
    }
    std::string extra() const
    {
        int64_t hit = 0;
        for (uint8_t h : segment_hit)
            hit += h;
        double fraction = segment_hit.empty() ? 0.0 : (double)hit / (double)segment_hit.size();
        return key("candidates", (double)candidates) + key("queries", (double)segment_hit.size()) +
               key("hit_fraction", fraction);
    }
};

} // namespace peer

#endif
