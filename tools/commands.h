/* commands.h: the `prox` subcommands. Each takes the arguments after
 * "prox" (argv[0] is the command's name) and returns the exit code; fatal
 * errors exit through die(). */
#ifndef PROX_TOOLS_COMMANDS_H
#define PROX_TOOLS_COMMANDS_H

int cmd_gen(int argc, char **argv);
int cmd_pairs(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_collide(int argc, char **argv);
int cmd_query(int argc, char **argv);
/* `prox knn`: k nearest neighbours (cmd_knn.c). */
int cmd_knn(int argc, char **argv);
/* `prox demo NAME`: the scenes of examples/scenes (cmd_demo.c). */
int cmd_demo(int argc, char **argv);
/* `prox bench mixed2d` (cmd_bench_boxes.c), dispatched by cmd_bench. */
int cmd_bench_boxes(int argc, char **argv);
/* `prox bench spheres3d` (cmd_bench_spheres.c): W3, Poirrier 2009, Tables 1-3. */
int cmd_bench_spheres(int argc, char **argv);
/* `prox bench dem3d` (cmd_bench_dem.c), dispatched by cmd_bench. */
int cmd_bench_dem(int argc, char **argv);

#endif
