#ifndef SIGNET_CRDKAFKA_SHIM_H
#define SIGNET_CRDKAFKA_SHIM_H
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#endif
