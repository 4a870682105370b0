/* The raw clients of `hubhost bench sinks`: see include/sink_bench_clients.h. */
#define _POSIX_C_SOURCE 200809L
#include "sink_bench_clients.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <nats/nats.h>

#include <stdio.h>
#include <string.h>
#include <time.h>

static rd_kafka_t *mock_handle;
static rd_kafka_mock_cluster_t *mock_cluster;

static double now_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

const char *sink_bench_kafka_mock_start(int brokers, const char *topic, int partitions) {
    char error[256];
    rd_kafka_conf_t *conf;
    if (mock_cluster || brokers < 1 || brokers > 9 || partitions < 1 || partitions > 64) {
        return NULL;
    }
    conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "log_level", "0", error, sizeof error);
    mock_handle = rd_kafka_new(RD_KAFKA_PRODUCER, conf, error, sizeof error);
    if (!mock_handle) {
        return NULL;
    }
    mock_cluster = rd_kafka_mock_cluster_new(mock_handle, brokers);
    if (!mock_cluster ||
        rd_kafka_mock_topic_create(mock_cluster, topic, partitions, brokers) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        sink_bench_kafka_mock_stop();
        return NULL;
    }
    return rd_kafka_mock_cluster_bootstraps(mock_cluster);
}

void sink_bench_kafka_mock_stop(void) {
    if (mock_cluster) {
        rd_kafka_mock_cluster_destroy(mock_cluster);
        mock_cluster = NULL;
    }
    if (mock_handle) {
        rd_kafka_destroy(mock_handle);
        mock_handle = NULL;
    }
}

typedef struct kafka_tally {
    size_t done;
    size_t failed;
} kafka_tally_t;

static void on_report(rd_kafka_t *rk, const rd_kafka_message_t *message, void *opaque) {
    kafka_tally_t *tally = opaque;
    (void)rk;
    tally->done++;
    if (message->err) {
        tally->failed++;
    }
}

double sink_bench_kafka_produce(const char *bootstrap, const char *topic,
                                const sink_bench_message_t *messages, size_t count, int timeout_ms,
                                char *error, size_t error_capacity) {
    kafka_tally_t tally = {0, 0};
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_t *producer;
    double start, deadline, elapsed;
    if (rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, error, error_capacity) != RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(conf, "enable.idempotence", "true", error, error_capacity) != RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(conf, "acks", "all", error, error_capacity) != RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(conf, "compression.type", "lz4", error, error_capacity) != RD_KAFKA_CONF_OK) {
        rd_kafka_conf_destroy(conf);
        return -1;
    }
    rd_kafka_conf_set_dr_msg_cb(conf, on_report);
    rd_kafka_conf_set_opaque(conf, &tally);
    producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, error, error_capacity);
    if (!producer) {
        rd_kafka_conf_destroy(conf);
        return -1;
    }
    /* Connected and idempotent before the clock starts, as the sink's producer is by then. */
    rd_kafka_poll(producer, 0);
    start = now_seconds();
    deadline = start + timeout_ms / 1000.0;
    for (size_t i = 0; i < count; i++) {
        char type_code[16];
        rd_kafka_resp_err_t err;
        snprintf(type_code, sizeof type_code, "%d", messages[i].type_code);
        do {
            err =
                rd_kafka_producev(producer, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                  RD_KAFKA_V_KEY((void *)messages[i].key, messages[i].key_length),
                                  RD_KAFKA_V_VALUE((void *)messages[i].value, messages[i].value_length),
                                  RD_KAFKA_V_HEADER("idempotency-key", messages[i].idempotency_key, -1),
                                  RD_KAFKA_V_HEADER("event-type-code", type_code, -1), RD_KAFKA_V_END);
            if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
                rd_kafka_poll(producer, 10);
            }
        } while (err == RD_KAFKA_RESP_ERR__QUEUE_FULL && now_seconds() < deadline);
        if (err) {
            snprintf(error, error_capacity, "produce: %s", rd_kafka_err2str(err));
            rd_kafka_destroy(producer);
            return -1;
        }
    }
    while (tally.done < count && now_seconds() < deadline) {
        rd_kafka_poll(producer, 10);
    }
    elapsed = now_seconds() - start;
    rd_kafka_destroy(producer);
    if (tally.done < count || tally.failed > 0) {
        snprintf(error, error_capacity, "%zu of %zu delivered", tally.done - tally.failed, count);
        return -1;
    }
    return elapsed;
}

double sink_bench_nats_publish(const char *url, const char *subject, const sink_bench_message_t *messages,
                               size_t count, int timeout_ms, char *error, size_t error_capacity) {
    natsConnection *connection = NULL;
    jsCtx *js = NULL;
    jsOptions js_options;
    jsPubOptions wait;
    natsStatus status;
    double start, elapsed;
    if ((status = natsConnection_ConnectTo(&connection, url)) != NATS_OK) {
        snprintf(error, error_capacity, "connect: %s", natsStatus_GetText(status));
        return -1;
    }
    jsOptions_Init(&js_options);
    js_options.PublishAsync.MaxPending = 4000;
    if ((status = natsConnection_JetStream(&js, connection, &js_options)) != NATS_OK) {
        snprintf(error, error_capacity, "jetstream: %s", natsStatus_GetText(status));
        natsConnection_Destroy(connection);
        return -1;
    }
    start = now_seconds();
    for (size_t i = 0; i < count && status == NATS_OK; i++) {
        jsPubOptions options;
        natsMsg *msg = NULL;
        char type_code[16];
        snprintf(type_code, sizeof type_code, "%d", messages[i].type_code);
        jsPubOptions_Init(&options);
        options.MsgId = messages[i].idempotency_key;
        status = natsMsg_Create(&msg, subject, NULL, messages[i].value, (int)messages[i].value_length);
        if (status == NATS_OK) {
            status = natsMsgHeader_Set(msg, "Hubhost-Event-Type", type_code);
        }
        if (status == NATS_OK) {
            status = js_PublishMsgAsync(js, &msg, &options);
        }
        natsMsg_Destroy(msg);
    }
    if (status == NATS_OK) {
        jsPubOptions_Init(&wait);
        wait.MaxWait = timeout_ms;
        status = js_PublishAsyncComplete(js, &wait);
    }
    elapsed = now_seconds() - start;
    jsCtx_Destroy(js);
    natsConnection_Destroy(connection);
    if (status != NATS_OK) {
        snprintf(error, error_capacity, "publish: %s", natsStatus_GetText(status));
        return -1;
    }
    return elapsed;
}
