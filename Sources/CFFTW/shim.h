#ifndef HARK_CFFTW_SHIM_H
#define HARK_CFFTW_SHIM_H
// Without this, fftwf_complex becomes C99 `float _Complex` when <complex.h> was
// included first, which Swift imports as an unusable opaque type.
#define FFTW_NO_Complex 1
#include <fftw3.h>
#endif
