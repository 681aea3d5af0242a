# The demo scenes (examples/scenes): one source list for the examples and
# the CLI (`prox demo NAME`). Adding a scene: one line here.
set(PROX_SCENE_DIR ${CMAKE_CURRENT_LIST_DIR})
set(PROX_SCENE_SOURCES
  ${PROX_SCENE_DIR}/scene.c
  ${PROX_SCENE_DIR}/fluid.c
  ${PROX_SCENE_DIR}/sph.c
  ${PROX_SCENE_DIR}/dem.c
  ${PROX_SCENE_DIR}/dem_world.c
  ${PROX_SCENE_DIR}/toy2d.c
  ${PROX_SCENE_DIR}/toy2d_world.c
)
# PNG frames: libpng, found with pkg-config (Debian: libpng-dev).
find_package(PkgConfig REQUIRED)
pkg_check_modules(PROX_PNG REQUIRED IMPORTED_TARGET libpng)
