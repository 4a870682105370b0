/*
 * hubhost plugin ABI v1.1: the `download_request` kind (HH_KIND_DOWNLOAD_REQUEST, added in 1.1).
 *
 * The prefetch engine's convertDownloadRequest hook (named after the PCD SDK's): before a file of
 * a content item is queued for download, the host shows its request (URL and headers) to each
 * download_request instance in plugins.yaml order, each seeing the previous one's result. A plugin
 * may rewrite the URL (e.g. sign it for a CDN, move it to another origin) and add, replace or
 * remove headers (e.g. an Authorization header, a cookie). It cannot change which item or file the
 * request is for, nor the method (always GET) or the Range header the host adds when it resumes.
 *
 * The plugin does not build a new request: it edits the host's through an editor, which copies
 * every value at once. So there is no plugin-owned memory to return and nothing to release.
 *
 * What the host accepts (checked after the call; anything else fails the call, naming the
 * problem, and the file is not downloaded with a half-converted request):
 *   - the URL: an absolute http:// or https:// URL with a host, at most 8192 bytes of UTF-8,
 *     without spaces or control characters;
 *   - a header name: 1 to 256 bytes of the HTTP token characters (letters, digits and
 *     !#$%&'*+-.^_`|~); a header value: at most 8192 bytes of UTF-8 without CR, LF or NUL;
 *   - at most 100 headers, at most 65536 bytes of names and values together;
 *   - at most 1000 editor calls per convert.
 *
 * Only an ABI 1.1 host knows this kind: a plugin exporting it sets its library's abi_version to
 * at least 1.1 (HH_ABI_VERSION_INIT does) and `abi: "1.1"` in plugin.yaml.
 */
#ifndef HUBHOST_DOWNLOAD_REQUEST_H
#define HUBHOST_DOWNLOAD_REQUEST_H

#include "hubhost_http.h"
#include "hubhost_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The request as the host would send it. Everything in it is host-owned and borrowed for the
 * call: copy what you keep. */
typedef struct hh_download_request {
    hh_string_t url;                 /* absolute http:// or https:// URL */
    const hh_http_header_t *headers; /* sorted by name without regard to case; may be NULL
                                       * when header_count is 0.
                                       * Names are unique, compared without regard to case. */
    size_t header_count;
    hh_string_t item_id;   /* the content item's uniqueId (never changes) */
    hh_string_t file_role; /* which file of the item: "main", "hls_main_index",
                                       * "thumbnail", "subtitle" (the README lists them; a role
                                       * added later is passed as is: treat an unknown one as
                                       * "leave the request alone" unless configured otherwise) */
} hh_download_request_t;

/* Edits to the request. Host-owned, borrowed for the call; every function copies its arguments
 * at once (the plugin may pass stack buffers) and may be called only during the convert call
 * that received the editor, from the thread that made it. Edits apply in the order made.
 * Invalid values are not refused here but when convert returns (see the list above). */
typedef struct hh_download_request_editor {
    void *editor_data; /* host-owned, opaque: pass it back unchanged */

    /* Replace the URL. */
    void (*set_url)(void *editor_data, hh_string_t url);

    /* Set a header: any header of the same name, compared without regard to case, is replaced
     * (the name is kept as spelled here). */
    void (*set_header)(void *editor_data, hh_string_t name, hh_string_t value);

    /* Remove the header of that name, compared without regard to case; no header of that name:
     * nothing happens. */
    void (*remove_header)(void *editor_data, hh_string_t name);
} hh_download_request_editor_t;

typedef struct hh_download_request_v1 {
    /* Convert one request. `request` and `editor` are host-owned, borrowed for the call.
     * HH_OK: the edits made are the new request (no edit at all: the request goes as it was).
     * HH_ERR_NOT_FOUND: this plugin has nothing to change for this request; any edits made are
     *   discarded and the request goes on unchanged.
     * Any other status: a failure (report_error first). The edits are discarded and the host does
     *   not download the file with the unconverted request (a signed URL or an auth header may be
     *   required): the prefetch engine treats it as a failed attempt of that file, with the
     *   plugin's message as the reason.
     * May block briefly (e.g. to sign with a key held in memory); the host calls it from a worker
     * thread, never an event loop. [thread-safe]: files of several items are converted at once. */
    hh_status_t (*convert)(void *instance, const hh_download_request_t *request,
                           const hh_download_request_editor_t *editor);
} hh_download_request_v1_t;

#ifdef __cplusplus
}
#endif

#endif /* HUBHOST_DOWNLOAD_REQUEST_H */
