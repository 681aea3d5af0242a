/* fuzz_point_file.c: the point parser of `prox pairs` (tools/input.c), text
 * and binary. The first byte picks the format and --dim (240 and above:
 * .npy, whose header gives the dimension when none is asked); the rest is
 * the file. Every input must end in a parsed file (2 or 3 finite coordinates per
 * point) or a data error (exit 3) with a printable message; a text file
 * holding a NUL byte anywhere is a data error. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fuzz_cli_stub.h"
#include "input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static const char *const suffixes[] = {".txt", ".f64", ".f32", ".npy"};
    static const int dims[] = {0, 2, 3};
    const bool npy = data[0] >= 240;
    const int format = npy ? 3 : data[0] % 3;
    const int asked = dims[npy ? (data[0] - 240) % 3 : data[0] / 3 % 3];
    /* volatile: read after the longjmp of a data error */
    volatile int dim = (format == 1 || format == 2) && asked == 0 ? 3 : asked;
    const uint8_t *file = data + 1;
    size_t len = size - 1;
    const char *path = fuzz_write_file(file, len, suffixes[format]);
    point_file pf;
    if (setjmp(fuzz_die_jump) == 0) {
        point_file_read(&pf, path, dim);
        if (format == 0 && memchr(file, '\0', len))
            abort(); /* a NUL byte in a text file was accepted */
        if ((pf.dim != 2 && pf.dim != 3) || pf.count < 0 || (dim && pf.dim != dim))
            abort();
        prox_points view = point_file_view(&pf);
        for (int64_t i = 0; i < pf.count; i++)
            for (int k = 0; k < pf.dim; k++)
                if (!isfinite(prox_points_get(&view, i, k)))
                    abort();
        if (pf.has_radius && !(pf.radius > 0 && isfinite(pf.radius)))
            abort(); /* a bad radius header must be refused where it stands */
        point_file_free(&pf);
        if (fuzz_tracked_count() != 0)
            abort();
    } else {
        fuzz_release_tracked();
        if (fuzz_die_code != EXIT_DATA)
            abort();
    }
    return 0;
}
