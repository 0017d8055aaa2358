// Build facts a package build passes in: scripts/package.sh writes signet_build_info.h
// (#define SIGNET_COMMIT "…", SIGNET_BUILD_DATE "…") beside this file (git ignores it), touches
// Sources/signet/BuildInfo.swift so that one file is compiled again, then removes the header.
// No compiler flag changes, so the package build reuses everything else the last build
// compiled. A C header because Swift has no build-time string constants; a build from source
// says "unknown".
#ifndef SIGNET_BUILD_INFO_SHIM_H
#define SIGNET_BUILD_INFO_SHIM_H

#if __has_include("signet_build_info.h")
#include "signet_build_info.h"
#endif
#ifndef SIGNET_COMMIT
#define SIGNET_COMMIT "unknown"
#endif
#ifndef SIGNET_BUILD_DATE
#define SIGNET_BUILD_DATE "unknown"
#endif

static inline const char *signet_build_commit(void) { return SIGNET_COMMIT; }
static inline const char *signet_build_date(void) { return SIGNET_BUILD_DATE; }

#endif
