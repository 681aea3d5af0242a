/* demo_toy2d.c: the hash-multimap article's 2D particle toy as a program of its own; the same
 * as `prox demo toy2d`. Try: demo_toy2d --threads 1 --cpu-time */
#include "scene.h"

int main(int argc, char **argv)
{
    return prox_demo_toy2d(argc, argv);
}
