/* fuzz_cli_stub.h: the parsers of tools/ without exiting. The fuzz build
 * replaces tools/cli.c by fuzz_cli_stub.c, whose die() jumps back to the
 * target instead of exiting, and whose allocations are tracked so that the
 * memory of a parse cut short by die() is released (the real CLI exits). */
#ifndef PROX_FUZZ_CLI_STUB_H
#define PROX_FUZZ_CLI_STUB_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>

extern jmp_buf fuzz_die_jump;
extern int fuzz_die_code;

/* Releases what the interrupted parse still held. */
void fuzz_release_tracked(void);
/* Blocks still held (0 after a parse whose result was freed). */
int fuzz_tracked_count(void);
/* The data as a file named with `suffix` (".txt", ".f64", ".f32"). */
const char *fuzz_write_file(const uint8_t *data, size_t size, const char *suffix);

#endif
