/* fuzz_cli_stub.c: what tools/input.c and tools/box_io.c need of tools/cli.c,
 * for the parser targets (fuzz_cli_stub.h). Every message die() would print
 * is formatted and checked: a byte outside printable ASCII means a token of
 * the input was echoed unescaped, which is a finding. */
#define _POSIX_C_SOURCE 200809L
#include "fuzz_cli_stub.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "output.h"

jmp_buf fuzz_die_jump;
int fuzz_die_code;

#define TRACKED_MAX 64
static void *tracked[TRACKED_MAX];

static void track(void *p)
{
    for (int i = 0; i < TRACKED_MAX; i++)
        if (!tracked[i]) {
            tracked[i] = p;
            return;
        }
    abort(); /* the parsers hold a few blocks at a time */
}

static void untrack(void *p)
{
    for (int i = 0; i < TRACKED_MAX; i++)
        if (tracked[i] == p) {
            tracked[i] = NULL;
            return;
        }
}

void fuzz_release_tracked(void)
{
    for (int i = 0; i < TRACKED_MAX; i++) {
        free(tracked[i]);
        tracked[i] = NULL;
    }
}

int fuzz_tracked_count(void)
{
    int n = 0;
    for (int i = 0; i < TRACKED_MAX; i++)
        n += tracked[i] != NULL;
    return n;
}

/* input.c and box_io.c are compiled with -Dfree=fuzz_tracked_free. */
void fuzz_tracked_free(void *p);
void fuzz_tracked_free(void *p)
{
    untrack(p);
    free(p);
}

void *xmalloc(size_t size)
{
    void *p = malloc(size > 0 ? size : 1);
    if (!p)
        abort();
    track(p);
    return p;
}

void *xrealloc(void *ptr, size_t size)
{
    void *p = realloc(ptr, size > 0 ? size : 1);
    if (!p)
        abort();
    if (ptr)
        untrack(ptr);
    track(p);
    return p;
}

size_t checked_size(int64_t count, size_t size)
{
    if (count < 0 || (size != 0 && (uint64_t)count > SIZE_MAX / size))
        abort();
    return (size_t)count * size;
}

bool has_suffix(const char *text, const char *suffix)
{
    size_t n = strlen(text), m = strlen(suffix);
    return n >= m && strcmp(text + n - m, suffix) == 0;
}

static _Noreturn void jump(int code, const char *fmt, va_list args)
{
    char message[1024];
    vsnprintf(message, sizeof message, fmt, args);
    for (const unsigned char *c = (const unsigned char *)message; *c; c++)
        if (*c < 0x20 || *c > 0x7e) {
            fprintf(stderr, "unescaped byte 0x%02x in the message: %s\n", *c, message);
            abort();
        }
    fuzz_die_code = code;
    longjmp(fuzz_die_jump, 1);
}

void die(int code, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    jump(code, fmt, args);
}

void die_at(int code, const char *file, int64_t line, const char *fmt, ...)
{
    (void)file;
    (void)line;
    va_list args;
    va_start(args, fmt);
    jump(code, fmt, args);
}

void die_usage(const char *command, const char *fmt, ...)
{
    (void)command;
    va_list args;
    va_start(args, fmt);
    jump(EXIT_USAGE, fmt, args);
}

void die_status(prox_status status, const char *what)
{
    die(status == PROX_ERR_NO_MEMORY ? EXIT_NO_MEMORY : EXIT_DATA, "%s", what);
}

/* box_io.c's pair lines are not fuzzed. */
void output_parallel(output *out, int64_t items, int64_t items_per_block, const void *ctx,
                     block_bound_fn bound, block_format_fn format)
{
    (void)out, (void)items, (void)items_per_block, (void)ctx, (void)bound, (void)format;
    abort();
}

char *format_u64(char *p, uint64_t v)
{
    (void)v;
    return p;
}

static char written[4][256];

static void remove_written(void)
{
    for (int i = 0; i < 4; i++)
        if (written[i][0])
            unlink(written[i]);
}

const char *fuzz_write_file(const uint8_t *data, size_t size, const char *suffix)
{
    static int slot;
    if (!written[0][0] && !written[1][0] && !written[2][0] && !written[3][0])
        atexit(remove_written);
    char *path = written[slot++ % 4];
    const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(path, sizeof written[0], "%s/prox-fuzz-%ld%s", dir, (long)getpid(), suffix);
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0)
        abort();
    return path;
}
