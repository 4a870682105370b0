/* OpenSSL's libcrypto from libssl-dev: hashes (sha256 pins of plugin libraries) and, later, signatures. */
#include <openssl/evp.h>
#include <openssl/sha.h>
