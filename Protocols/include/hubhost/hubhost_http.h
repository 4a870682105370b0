/*
 * hubhost plugin ABI v1: the host's HTTP service extension, "hubhost.http.v1".
 *
 * A plugin that needs the network (e.g. the weather augmentation) asks the host to fetch a URL
 * instead of carrying its own HTTP stack. The host enforces its policy: an allow-list of hosts,
 * timeouts and response size limits from plugins.yaml. Obtain the table with
 *
 *     const hh_host_http_v1_t *http = host->get_extension(host, HH_HOST_EXT_HTTP);
 *
 * and handle NULL: a host may not offer it. hubhost offers it to every instance; the policy comes
 * from the instance's entry in plugins.yaml: `http_allow:` (host names the plugin may reach; none
 * by default, so every request is refused until the integrator allows a host) and `http_timeout:`
 * (the most a request may take, default 10 s).
 */
#ifndef HUBHOST_HTTP_H
#define HUBHOST_HTTP_H

#include "hubhost_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HH_HOST_EXT_HTTP "hubhost.http.v1"

typedef struct hh_http_header {
    hh_string_t name;
    hh_string_t value;
} hh_http_header_t;

/* A request. Everything in it is plugin-owned and borrowed by the host for the call. */
typedef struct hh_http_request {
    hh_string_t method;              /* "GET", "POST"... */
    hh_string_t url;                 /* absolute http:// or https:// URL */
    const hh_http_header_t *headers; /* may be NULL when header_count is 0 */
    size_t header_count;
    const void *body; /* may be NULL when body_length is 0 */
    size_t body_length;
    uint32_t timeout_ms; /* 0: the host's default; the host caps it by its policy */
} hh_http_request_t;

/* The response. Host-owned; valid until the plugin calls release on it. */
typedef struct hh_http_response {
    int32_t status_code; /* e.g. 200; 0 when no response arrived */
    const hh_http_header_t *headers;
    size_t header_count;
    const void *body;
    size_t body_length;
} hh_http_response_t;

typedef struct hh_host_http_v1 {
    /* Perform a request and wait for the whole response (blocking the calling thread).
     * Redirects (301, 302, 303, 307, 308) are followed, at most 5, each only after its host is
     * checked against the allow-list; Authorization and Cookie headers are not sent to a host
     * other than the one that redirected. The timeout covers every hop.
     * HH_OK: *out_response is filled (any HTTP status, including 4xx/5xx); release it with
     * `release`, once.
     * Any other status: no response. The host writes nothing to *out_response and holds nothing
     * for it, so there is nothing to release: do not call `release` after a failure (it would
     * free whatever the struct happens to hold; on a zero-filled struct it does nothing).
     *   HH_ERR_TIMEOUT           no answer within the timeout (the request's, capped by the
     *                            instance's http_timeout);
     *   HH_ERR_IO                the server could not be reached or the transfer failed;
     *   HH_ERR_UNSUPPORTED       the URL's host is not on the allow-list, or a redirect pointed
     *                            to a host that is not (the host logs a warning naming that host
     *                            and the allow-list, and leaves it as this thread's report);
     *   HH_ERR_INVALID_ARGUMENT  a NULL argument, or a URL that does not parse (the host leaves
     *                            that message as this thread's report).
     * The host logs nothing for timeouts and I/O failures: a plugin whose own call fails because
     * of one reports why (report_error) before returning its failure. [thread-safe] */
    hh_status_t (*fetch)(const hh_host_t *host, const hh_http_request_t *request,
                         hh_http_response_t *out_response);

    /* Release a response that fetch filled (HH_OK), once; afterwards *response is zero-filled.
     * Releasing a zero-filled response does nothing. Cannot fail. [thread-safe] */
    void (*release)(const hh_host_t *host, hh_http_response_t *response);
} hh_host_http_v1_t;

#ifdef __cplusplus
}
#endif

#endif /* HUBHOST_HTTP_H */
