/* demo_sph.c: the SPH dam break scene as a program of its own; the same as
 * `prox demo sph`. Try: demo_sph --particles 20000 --png frames */
#include "scene.h"

int main(int argc, char **argv)
{
    return prox_demo_sph(argc, argv);
}
