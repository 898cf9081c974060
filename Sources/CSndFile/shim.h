#ifndef HARK_CSNDFILE_SHIM_H
#define HARK_CSNDFILE_SHIM_H
#include <sndfile.h>
#endif
