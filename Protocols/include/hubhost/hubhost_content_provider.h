/*
 * hubhost plugin ABI v1: the `content_provider` kind (where the Content Hub's bundles come from).
 *
 * A provider fetches named resources (the bundle's metadata document, the bundle itself) and
 * streams their bytes to the host. The provider only transports: the host verifies integrity and
 * signature, stores the bundle and activates it.
 */
#ifndef HUBHOST_CONTENT_PROVIDER_H
#define HUBHOST_CONTENT_PROVIDER_H

#include "hubhost_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Resource names a provider is asked for. */
#define HH_CONTENT_RESOURCE_METADATA "metadata" /* small JSON: version, size, sha256, signature */
#define HH_CONTENT_RESOURCE_BUNDLE   "bundle"   /* the content bundle (one SQLite file) */
#define HH_CONTENT_RESOURCE_SETTINGS "settings" /* delivery settings document (JSON) */

/* Where a provider writes what it fetched. Host-owned; valid during the fetch call only. The host
 * sets every function (none is NULL). A provider may call them from the thread that called fetch
 * or from a thread of its own, as long as the calls on one sink do not overlap and all end before
 * fetch returns. */
typedef struct hh_content_sink {
    void *sink_data; /* host-owned, opaque: pass back unchanged */

    /* Append bytes (borrowed; the host copies or writes them at once). A non-HH_OK answer means
     * the host wants no more (cancelled, disk full...): stop and return that status. [any-thread]
     * during the call, never concurrently with itself. */
    hh_status_t (*write)(const struct hh_content_sink *sink, const void *bytes, size_t length);

    /* Report progress: bytes done and the total (0 when unknown). Optional to call. Under
     * `isolation: process` the reports stay in the worker and the host reports done = total once
     * the fetch returned. Cannot fail. [any-thread] during the fetch call only, never
     * concurrently with write, progress or is_cancelled on the same sink. */
    void (*progress)(const struct hh_content_sink *sink, uint64_t done, uint64_t total);

    /* True when the host asks the provider to stop early: stop and return HH_ERR_UNAVAILABLE
     * (report_error first). Cheap and non-blocking: poll it between chunks. Under
     * `isolation: process` it always answers false. Cannot fail. [any-thread] during the fetch
     * call only, never concurrently with write, progress or is_cancelled on the same sink. */
    bool (*is_cancelled)(const struct hh_content_sink *sink);
} hh_content_sink_t;

typedef struct hh_content_provider_v1 {
    /* Fetch the resource named `resource` (NUL-terminated, borrowed; one of HH_CONTENT_RESOURCE_*
     * or a name the host's engine documents) and stream it into `sink`. The name may carry a
     * query string ("settings?location_id=pike-1": the content delivery sends the location the
     * service decides pilot membership from): a provider that asks a service passes it on, one
     * that reads files ignores it. Call progress after each chunk and poll is_cancelled between
     * chunks.
     * HH_OK: every byte was written. HH_ERR_NOT_FOUND: no such resource. HH_ERR_IO /
     * HH_ERR_TIMEOUT: transport failure (report_error first); the host keeps the previous
     * content. [host-serialized]
     * Deadline: the host waits for an in-process fetch at most its engine's deadline (the Content
     * Hub: hub.download_timeout, after which is_cancelled answers true, plus 5 s; other callers:
     * 120 s). Past it the host treats the fetch as HH_ERR_TIMEOUT: the sink refuses every later
     * write (non-HH_OK) and is_cancelled answers true, the call keeps its thread until it
     * returns, and until then the instance is reported stuck and later fetches fail at once. */
    hh_status_t (*fetch)(void *instance, const char *resource, const hh_content_sink_t *sink);
} hh_content_provider_v1_t;

#ifdef __cplusplus
}
#endif

#endif /* HUBHOST_CONTENT_PROVIDER_H */
