/*
 * The yardsticks of `hubhost bench sinks`: the raw clients (librdkafka producing directly, libnats
 * publishing to JetStream directly) sending the same messages as the sinks, and librdkafka's mock
 * cluster the Kafka rows run against. C, because those are C libraries; used only by HubHostTools.
 *
 * Every function blocks its calling thread (call it from a blocking context) and returns within
 * the deadline it is given. Strings in are borrowed for the call.
 */
#ifndef SINK_BENCH_CLIENTS_H
#define SINK_BENCH_CLIENTS_H

#include <stddef.h>

/* One message: the key (may be empty), the idempotency key and the value, as the sinks send them. */
typedef struct sink_bench_message {
    const char *key;
    size_t key_length;
    const char *idempotency_key; /* NUL-terminated */
    const char *value;
    size_t value_length;
    int type_code;
} sink_bench_message_t;

/* Starts a mock cluster of `brokers` brokers on 127.0.0.1 with `topic` (`partitions` partitions,
 * replication factor `brokers`). Returns its bootstrap servers (valid until
 * sink_bench_kafka_mock_stop), or NULL on failure. One cluster at a time. */
const char *sink_bench_kafka_mock_start(int brokers, const char *topic, int partitions);
void sink_bench_kafka_mock_stop(void);

/* Produces every message to `topic` with an idempotent librdkafka producer (acks=all, lz4) and waits
 * for every delivery report, at most `timeout_ms`. Returns the seconds it took, or a negative
 * number when a report failed or the deadline passed (`error` then says why). */
double sink_bench_kafka_produce(const char *bootstrap, const char *topic,
                                const sink_bench_message_t *messages, size_t count, int timeout_ms,
                                char *error, size_t error_capacity);

/* Publishes every message to `subject` on JetStream asynchronously (Nats-Msg-Id = idempotency key)
 * and waits for every ack, at most `timeout_ms`. Returns seconds or a negative number (see above). */
double sink_bench_nats_publish(const char *url, const char *subject, const sink_bench_message_t *messages,
                               size_t count, int timeout_ms, char *error, size_t error_capacity);

#endif /* SINK_BENCH_CLIENTS_H */
