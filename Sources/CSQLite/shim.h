#ifndef HARK_CSQLITE_SHIM_H
#define HARK_CSQLITE_SHIM_H
#include <sqlite3.h>
#endif
