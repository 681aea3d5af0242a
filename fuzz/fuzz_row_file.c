/* fuzz_row_file.c: the box and segment parser of `prox collide` and
 * `prox query` (tools/box_io.c), text and binary, and the boxes it yields
 * handed to the library (brute force) as the CLI does. The first byte picks
 * the format and the columns (0: as the first row has, text only; 4; 6);
 * 240 and above: .npy, whose header gives the columns when none are
 * asked. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "box_io.h"
#include "cli.h"
#include "fuzz_cli_stub.h"
#include "prox/prox.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void use_rows(const row_file *rf)
{
    int dim = rf->cols / 2;
    if (rf->rows > 64)
        return;
    /* as boxes: accepted or refused as bad data, never more */
    prox_boxes boxes = row_file_boxes(rf, dim);
    prox_broad_desc desc = prox_default_broad_desc();
    desc.algo = PROX_BROAD_BRUTE;
    desc.threads = 1;
    prox_broad *b = NULL;
    if (prox_broad_create(&desc, &b))
        abort();
    prox_status st = prox_broad_build(b, &boxes);
    if (st != PROX_OK && st != PROX_ERR_DATA)
        abort();
    /* as segments against the boxes built */
    if (st == PROX_OK) {
        prox_points starts, ends;
        row_file_segments(rf, dim, &starts, &ends);
        st = prox_broad_query_segments(b, &starts, &ends, true, prox_sink_count(), NULL);
        if (st != PROX_OK)
            abort();
    }
    prox_broad_destroy(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static const char *const suffixes[] = {".txt", ".f64", ".f32", ".npy"};
    static const int columns[] = {0, 4, 6};
    const bool npy = data[0] >= 240;
    const int format = npy ? 3 : data[0] % 3;
    const int asked = columns[npy ? (data[0] - 240) % 3 : data[0] / 3 % 3];
    /* volatile: read after the longjmp of a data error */
    volatile int cols = (format == 1 || format == 2) && asked == 0 ? 6 : asked;
    const uint8_t *file = data + 1;
    size_t len = size - 1;
    const char *path = fuzz_write_file(file, len, suffixes[format]);
    row_file rf;
    if (setjmp(fuzz_die_jump) == 0) {
        row_file_read(&rf, path, cols);
        if (format == 0 && memchr(file, '\0', len))
            abort();
        if ((rf.cols != 4 && rf.cols != 6) || rf.rows < 0 || (cols && rf.cols != cols))
            abort();
        for (int64_t k = 0; k < rf.rows * rf.cols; k++) {
            double v = rf.scalar == PROX_F32 ? ((const float *)rf.values)[k]
                                             : ((const double *)rf.values)[k];
            if (!isfinite(v))
                abort();
        }
        use_rows(&rf);
        row_file_free(&rf);
        if (fuzz_tracked_count() != 0)
            abort();
    } else {
        fuzz_release_tracked();
        if (fuzz_die_code != EXIT_DATA)
            abort();
    }
    return 0;
}
