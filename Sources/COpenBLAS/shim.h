#ifndef HARK_COPENBLAS_SHIM_H
#define HARK_COPENBLAS_SHIM_H
// OpenBLAS's own CBLAS header (it also declares openblas_set_num_threads).
#include <cblas.h>
#endif
