/* demo_dem.c: the W6 falling spheres (Poirrier 2009, section 6, Figure 11) as a
 * program of its own; the same as `prox demo dem`. Try:
 * demo_dem --algo all --png frames --plot */
#include "scene.h"

int main(int argc, char **argv)
{
    return prox_demo_dem(argc, argv);
}
