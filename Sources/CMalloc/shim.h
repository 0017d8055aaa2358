#ifndef SIGNET_CMALLOC_SHIM_H
#define SIGNET_CMALLOC_SHIM_H
// glibc's allocator tuning (mallopt), which the Glibc module does not export.
#include <malloc.h>
#endif
