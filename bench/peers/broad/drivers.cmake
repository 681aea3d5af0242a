# drivers.cmake: the broad-phase peer drivers (W3, W4), included by
# bench/peers/CMakeLists.txt. Each driver is built only when its library is
# installed (Debian 12: libcgal-dev, libbullet-dev, libbox2d-dev, libfcl-dev);
# a missing one is reported and skipped. Flags as the other drivers:
# -O3 -march=native -ffp-contract=off.
set(PROX_BROAD_PEERS_DIR ${CMAKE_CURRENT_LIST_DIR})
set(PROX_BROAD_PEERS_SRC ${CMAKE_CURRENT_LIST_DIR}/../../../src) # box_exact.h

function(prox_broad_peer name source)
    add_executable(${name} ${PROX_BROAD_PEERS_DIR}/${source})
    target_include_directories(${name} PRIVATE ${PROX_BROAD_PEERS_DIR} ${PROX_BROAD_PEERS_SRC})
    target_compile_features(${name} PRIVATE cxx_std_17)
    target_compile_options(${name} PRIVATE -O3 -march=native -ffp-contract=off)
    target_link_libraries(${name} PRIVATE ${ARGN})
endfunction()

# CGAL (header-only in 5.x): box intersection and the 3D Delaunay triangulation.
find_package(CGAL QUIET)
if(CGAL_FOUND)
    prox_broad_peer(peer_cgal_boxes cgal_boxes.cpp CGAL::CGAL)
    prox_broad_peer(peer_cgal_delaunay cgal_delaunay.cpp CGAL::CGAL)
else()
    message(STATUS "broad peers: CGAL not found (libcgal-dev): CGAL drivers skipped")
endif()

# Bullet (single precision, as Debian's default libraries are built).
find_path(PROX_BULLET_INCLUDE btBulletCollisionCommon.h PATH_SUFFIXES bullet)
find_library(PROX_BULLET_COLLISION BulletCollision)
find_library(PROX_BULLET_MATH LinearMath)
if(PROX_BULLET_INCLUDE AND PROX_BULLET_COLLISION AND PROX_BULLET_MATH)
    prox_broad_peer(peer_bullet bullet.cpp ${PROX_BULLET_COLLISION} ${PROX_BULLET_MATH})
    target_include_directories(peer_bullet SYSTEM PRIVATE ${PROX_BULLET_INCLUDE})
else()
    message(STATUS "broad peers: Bullet not found (libbullet-dev): Bullet driver skipped")
endif()

# FCL 0.7 (double precision). Its exported target names Eigen3::Eigen and
# octomap without finding them.
find_package(Eigen3 QUIET NO_MODULE)
find_package(octomap QUIET)
find_package(fcl QUIET)
if(fcl_FOUND AND TARGET Eigen3::Eigen)
    prox_broad_peer(peer_fcl fcl.cpp fcl)
else()
    message(STATUS "broad peers: FCL not found (libfcl-dev): FCL driver skipped")
endif()

# Box2D 2.4 (single precision, 2D only: W4).
find_package(box2d QUIET)
if(box2d_FOUND)
    prox_broad_peer(peer_box2d box2d.cpp box2d::box2d)
else()
    message(STATUS "broad peers: Box2D not found (libbox2d-dev): Box2D driver skipped")
endif()
