/*
 * hubhost plugin ABI v1.1: the `user_id_generator` kind (the Engage SDK's
 * mobileUserIdGeneratorClassName and auditRecordPrimaryKeyGeneratorClassName).
 *
 * A generator makes new identifiers: the mobile user id of a recipient hubhost sets up
 * (identity.mobileUserIdGenerator in plugins.yaml names the instance) and the primary key of a
 * merge's audit record (identity.auditRecordPrimaryKeyGenerator). Without a configured instance the
 * host uses a built-in random UUID. The bundled plugin `uuid-generator` (Plugins/UUIDGenerator) is
 * a complete example in C.
 *
 * Added in ABI 1.1 (HH_KIND_USER_ID_GENERATOR = 8). A library built against 1.0 never exports
 * this kind and keeps loading; a host older than 1.1 refuses a descriptor of kind 8 as unknown.
 */
#ifndef HUBHOST_USER_ID_GENERATOR_H
#define HUBHOST_USER_ID_GENERATOR_H

#include "hubhost_plugin.h"
#include "hubhost_advertiser_id.h" /* hh_string_sink_t */

#ifdef __cplusplus
extern "C" {
#endif

/* The longest identifier the host accepts, in bytes. */
#define HH_USER_ID_MAX_BYTES 1024

typedef struct hh_user_id_generator_v1 {
    /* Make one new identifier and hand it to `id_sink->set` (the host copies the bytes at once, so
     * a stack buffer is fine; calling `set` again replaces the value).
     * - HH_OK: the identifier is the last value given to `set`. It must be 1 to
     *   HH_USER_ID_MAX_BYTES bytes of UTF-8 and should never repeat: the host stores it as a
     *   recipient's mobile user id or an audit row's primary key. HH_OK without a `set` call, or
     *   with an empty or longer value, is a failure of the plugin (the host says so and generates
     *   nothing).
     * - any other status: a failure (report_error first with the reason); the setup or merge that
     *   needed the identifier stops before anything is sent, and is retried later as a whole.
     * `id_sink` is host-owned and borrowed for the call; `instance` is what create returned.
     * [thread-safe]: the host may call it from any thread, and from several at once. */
    hh_status_t (*generate)(void *instance, const hh_string_sink_t *id_sink);
} hh_user_id_generator_v1_t;

#ifdef __cplusplus
}
#endif

#endif /* HUBHOST_USER_ID_GENERATOR_H */
