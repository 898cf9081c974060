#ifndef HARK_CMOSQUITTO_SHIM_H
#define HARK_CMOSQUITTO_SHIM_H
#include <mosquitto.h>
#endif
