/* fuzz_bytes.h: turning the fuzzer's bytes into numbers, choices and
 * coordinates. Reading past the end gives zeros, so every input decodes. */
#ifndef PROX_FUZZ_BYTES_H
#define PROX_FUZZ_BYTES_H

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct fuzz_bytes {
    const uint8_t *at;
    size_t left;
} fuzz_bytes;

static inline unsigned fuzz_byte(fuzz_bytes *b)
{
    if (b->left == 0)
        return 0;
    b->left--;
    return *b->at++;
}

/* A choice among n (n <= 256). */
static inline int fuzz_pick(fuzz_bytes *b, int n)
{
    return (int)(fuzz_byte(b) % (unsigned)n);
}

static inline double fuzz_raw_double(fuzz_bytes *b)
{
    uint64_t bits = 0;
    for (int k = 0; k < 8; k++)
        bits |= (uint64_t)fuzz_byte(b) << (8 * k);
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

/* A coordinate in units of `scale`: mostly small lattice values (points on
 * cell faces, duplicates, exact distances of r), sometimes values at the
 * edges of double (huge, tiny, subnormal), sometimes any finite bits. */
static inline double fuzz_coordinate(fuzz_bytes *b, double scale)
{
    static const double special[] = {0.0, -0.0, 1e-300, -1e-300, 4.9e-324, 1e300, -1e300,
                                     DBL_MAX, -DBL_MAX, 2147483648.0, 1e7, -1e7, 1e150,
                                     -1e150, 0x1p-30, 1.0 + 0x1p-52};
    unsigned kind = fuzz_byte(b);
    if (kind < 200) /* lattice of quarter units: -25 .. 24.75 */
        return scale * ((double)(int)(kind) - 100.0) / 4.0;
    if (kind < 200 + sizeof special / sizeof special[0])
        return special[kind - 200];
    if (kind < 250) /* a unit times a small odd number and a tiny nudge */
        return scale * (1.0 + ldexp((double)(kind - 216), -50)) * (double)(fuzz_byte(b) % 16);
    double v = fuzz_raw_double(b);
    return isfinite(v) ? v : 0.0;
}

#endif
