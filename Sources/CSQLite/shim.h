#ifndef SIGNET_CSQLITE_SHIM_H
#define SIGNET_CSQLITE_SHIM_H
#include <sqlite3.h>
#endif
