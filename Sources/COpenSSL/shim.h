#ifndef SIGNET_COPENSSL_SHIM_H
#define SIGNET_COPENSSL_SHIM_H
// Low-level EC_KEY/ECDSA calls are deprecated in OpenSSL 3 but remain the fastest
// verify path (no provider dispatch per call); SignetOpenSSL wraps them.
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/obj_mac.h>
#include <openssl/objects.h>
#include <openssl/ocsp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#endif
