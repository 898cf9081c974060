#include "sound_model.h"
// The digest of the weights, rewritten by tools/learned/train.py with them: the build does not
// see an .incbin'd file change, but it sees this header change and assembles this file again.
#include "model_digest.h"

__asm__(".section .rodata\n"
        ".balign 16\n"
        "hark_sound_model_start:\n"
        ".incbin \"sound-embedder.hkse\"\n"
        "hark_sound_model_end:\n"
        ".previous\n");
extern const unsigned char hark_sound_model_start[] __asm__("hark_sound_model_start");
extern const unsigned char hark_sound_model_end[] __asm__("hark_sound_model_end");

const unsigned char *hark_sound_model_bytes(void) { return hark_sound_model_start; }
size_t hark_sound_model_size(void) { return (size_t)(hark_sound_model_end - hark_sound_model_start); }
