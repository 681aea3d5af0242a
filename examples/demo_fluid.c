/* demo_fluid.c: the W5 fluid scene (Pouchol et al. 2009, Figure 6) as a program of its
 * own; the same as `prox demo fluid`. Try: demo_fluid --particles 20000 --png frames */
#include "scene.h"

int main(int argc, char **argv)
{
    return prox_demo_fluid(argc, argv);
}
