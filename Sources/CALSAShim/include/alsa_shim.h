#ifndef HARK_ALSA_SHIM_H
#define HARK_ALSA_SHIM_H

/// Receives one formatted ALSA library message.
typedef void (*hark_alsa_log_callback)(const char *file, int line, const char *function, int err,
                                       const char *message);

/// Routes ALSA's library messages (normally printed to stderr) to `callback`. ALSA's handler
/// type is variadic, which Swift cannot implement; this shim formats each message first.
void hark_alsa_set_log_callback(hark_alsa_log_callback callback);

/// Restores ALSA's default handler.
void hark_alsa_clear_log_callback(void);

#endif
