/*
 * Test helper: prints every message of a JetStream stream, one a line:
 * "SEQUENCE<TAB>NATS-MSG-ID<TAB>SUBJECT<TAB>DATA". Built by the tests with `cc ... -lnats`.
 * With --traceparent, each line ends in one more field, "<TAB>TRACEPARENT" (the message's
 * `traceparent` header, empty when it has none), before DATA's line ends.
 *
 *   nats_stream_reader URL STREAM [--traceparent]
 *
 * Exits 0 after the last message, 1 when the server or the stream cannot be read.
 */
#include <nats/nats.h>

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    natsConnection *connection = NULL;
    jsCtx *js = NULL;
    jsStreamInfo *info = NULL;
    jsErrCode code = 0;
    natsStatus status;
    int traceparent = argc == 4 && strcmp(argv[3], "--traceparent") == 0;
    if (argc != 3 && !traceparent) {
        fprintf(stderr, "usage: nats_stream_reader URL STREAM [--traceparent]\n");
        return 2;
    }
    if ((status = natsConnection_ConnectTo(&connection, argv[1])) != NATS_OK ||
        (status = natsConnection_JetStream(&js, connection, NULL)) != NATS_OK ||
        (status = js_GetStreamInfo(&info, js, argv[2], NULL, &code)) != NATS_OK) {
        fprintf(stderr, "cannot read stream %s at %s: %s (%d)\n", argv[2], argv[1],
                natsStatus_GetText(status), (int)code);
        return 1;
    }
    for (uint64_t sequence = info->State.FirstSeq; sequence > 0 && sequence <= info->State.LastSeq;
         sequence++) {
        natsMsg *msg = NULL;
        const char *id = "";
        if (js_GetMsg(&msg, js, argv[2], sequence, NULL, &code) != NATS_OK) {
            continue; /* deleted */
        }
        natsMsgHeader_Get(msg, "Nats-Msg-Id", &id);
        if (traceparent) {
            const char *parent = "";
            natsMsgHeader_Get(msg, "traceparent", &parent);
            printf("%llu\t%s\t%s\t%.*s\t%s\n", (unsigned long long)sequence, id ? id : "",
                   natsMsg_GetSubject(msg), natsMsg_GetDataLength(msg), natsMsg_GetData(msg),
                   parent ? parent : "");
        } else {
            printf("%llu\t%s\t%s\t%.*s\n", (unsigned long long)sequence, id ? id : "",
                   natsMsg_GetSubject(msg), natsMsg_GetDataLength(msg), natsMsg_GetData(msg));
        }
        natsMsg_Destroy(msg);
    }
    jsStreamInfo_Destroy(info);
    jsCtx_Destroy(js);
    natsConnection_Destroy(connection);
    return 0;
}
