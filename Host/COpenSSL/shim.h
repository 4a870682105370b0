/* OpenSSL's libcrypto from libssl-dev: hashes (sha256 pins of plugin libraries, bundle digests),
 * bundle signatures (PEM private keys, DER SubjectPublicKeyInfo public keys) and their error queue,
 * and random bytes in bulk (event ids). */
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/err.h>
#include <openssl/bio.h>
#include <openssl/rand.h>
