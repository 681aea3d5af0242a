/* replay.c: a main() for the fuzz targets without libFuzzer: runs the target
 * on every file named (or every file of every directory named), so that the
 * seed corpora and the inputs of past findings run in the ordinary test suite
 * with any compiler. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 1;
    }
    size_t cap = 1 << 16, len = 0;
    uint8_t *data = malloc(cap);
    size_t got;
    while (data && (got = fread(data + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap)
            data = realloc(data, cap *= 2);
    }
    fclose(f);
    if (!data)
        return 1;
    LLVMFuzzerTestOneInput(data, len);
    free(data);
    return 0;
}

int main(int argc, char **argv)
{
    int failed = 0, inputs = 0;
    for (int a = 1; a < argc; a++) {
        struct stat st;
        if (stat(argv[a], &st) != 0) {
            perror(argv[a]);
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            failed |= run_file(argv[a]);
            inputs++;
            continue;
        }
        DIR *dir = opendir(argv[a]);
        struct dirent *e;
        while (dir && (e = readdir(dir)) != NULL) {
            if (e->d_name[0] == '.')
                continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[a], e->d_name);
            failed |= run_file(path);
            inputs++;
        }
        if (dir)
            closedir(dir);
    }
    printf("%d inputs replayed\n", inputs);
    return failed;
}
