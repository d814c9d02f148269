// Byte-level BPE core: trainer and encoder.  Pure C++17 (no Python types).
// TODO(core helper): implement per docs/design.md.
#include "pretokenize.h"
