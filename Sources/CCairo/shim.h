#ifndef HARK_CCAIRO_SHIM_H
#define HARK_CCAIRO_SHIM_H
#include <cairo.h>
#include <cairo-svg.h>
#endif
