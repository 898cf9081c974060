#include "alsa_shim.h"
#include <alsa/asoundlib.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>

// Set by whichever thread routes the log, read by any thread ALSA reports from (a capture
// thread): atomic, so that a message during a change of route sees one callback or the other.
static _Atomic(hark_alsa_log_callback) current_callback = NULL;

static void forward(const char *file, int line, const char *function, int err, const char *fmt, ...) {
    char message[1024];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    hark_alsa_log_callback callback = atomic_load(&current_callback);
    if (callback) callback(file, line, function, err, message);
}

void hark_alsa_set_log_callback(hark_alsa_log_callback callback) {
    atomic_store(&current_callback, callback);
    snd_lib_error_set_handler(forward);
}

void hark_alsa_clear_log_callback(void) {
    atomic_store(&current_callback, NULL);
    snd_lib_error_set_handler(NULL);
}
