/* prox: the whole public API. */
#ifndef PROX_PROX_H
#define PROX_PROX_H
#include "prox/core.h"
#include "prox/pairs.h"
#include "prox/grid.h"
#include "prox/boxes.h"
#include "prox/stream.h"
#include "prox/knn.h"
#include "prox/sizes.h"
#include "prox/cell.h"
#endif
