#ifndef HARK_SOUND_MODEL_H
#define HARK_SOUND_MODEL_H
#include <stddef.h>
/// The sound embedder's weights file (tools/learned/train.py), linked into the binary so that
/// hark and harkd always read with the network their catalogue's embeddings were made by.
const unsigned char *hark_sound_model_bytes(void);
size_t hark_sound_model_size(void);
#endif
