// libFuzzer's driver, for a Swift `main`: SwiftPM gives every executable its own entry
// point, so the target calls the driver instead of linking libFuzzer's `main`.
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
