/*
 * Test helper: a librdkafka mock cluster (rdkafka_mock.h) of 3 brokers on 127.0.0.1, driven over
 * stdin, one command a line. Built by the tests with `cc ... -lrdkafka`.
 *
 *   kafka_mock_cluster TOPIC PARTITIONS
 *
 * At start it creates TOPIC (PARTITIONS partitions, replication factor 3) and prints
 * "bootstrap HOST:PORT,..." then "ready". Commands, each answered by a line "ok" (or "error ..."):
 *
 *   down N          broker N (1..3) goes down: its connections close and it takes no request
 *   up N            broker N comes back
 *   produce-errors N   the next N Produce requests fail with NOT_LEADER_FOR_PARTITION (retriable)
 *   consume         print every message of TOPIC from the start, one a line:
 *                   "PARTITION<TAB>OFFSET<TAB>KEY<TAB>IDEMPOTENCY-KEY<TAB>TYPE<TAB>VALUE", then "ok"
 *   quit            exit
 *
 * End of stdin exits too, so the cluster never outlives the test that started it.
 */
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *topic;
static int partitions;
static const char *bootstraps;

static void print_header(const rd_kafka_message_t *message, const char *name) {
    rd_kafka_headers_t *headers = NULL;
    const void *value = NULL;
    size_t size = 0;
    if (rd_kafka_message_headers(message, &headers) == RD_KAFKA_RESP_ERR_NO_ERROR &&
        rd_kafka_header_get_last(headers, name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR && value) {
        fwrite(value, 1, size, stdout);
    }
}

/* Reads TOPIC from the start with a fresh consumer group until every partition reports its end. */
static int consume(void) {
    char error[512];
    char group[64];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    snprintf(group, sizeof group, "reader-%ld-%d", (long)time(NULL), rand());
    if (rd_kafka_conf_set(conf, "bootstrap.servers", bootstraps, error, sizeof error) != RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(conf, "group.id", group, error, sizeof error) != RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(conf, "auto.offset.reset", "earliest", error, sizeof error) != RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(conf, "enable.partition.eof", "true", error, sizeof error) != RD_KAFKA_CONF_OK) {
        printf("error %s\n", error);
        return 1;
    }
    rd_kafka_t *consumer = rd_kafka_new(RD_KAFKA_CONSUMER, conf, error, sizeof error);
    if (!consumer) {
        printf("error %s\n", error);
        return 1;
    }
    rd_kafka_poll_set_consumer(consumer);
    rd_kafka_topic_partition_list_t *assignment = rd_kafka_topic_partition_list_new(partitions);
    for (int p = 0; p < partitions; p++) {
        rd_kafka_topic_partition_list_add(assignment, topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    }
    rd_kafka_assign(consumer, assignment);
    rd_kafka_topic_partition_list_destroy(assignment);
    int ends = 0;
    time_t deadline = time(NULL) + 20; /* bounded: a partition that never reports its end fails the read */
    while (ends < partitions && time(NULL) < deadline) {
        rd_kafka_message_t *message = rd_kafka_consumer_poll(consumer, 100);
        if (!message) {
            continue;
        }
        if (message->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            ends++;
        } else if (message->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
            printf("%d\t%lld\t", (int)message->partition, (long long)message->offset);
            if (message->key) {
                fwrite(message->key, 1, message->key_len, stdout);
            }
            putchar('\t');
            print_header(message, "idempotency-key");
            putchar('\t');
            print_header(message, "event-type-code");
            putchar('\t');
            fwrite(message->payload, 1, message->len, stdout);
            putchar('\n');
        }
        rd_kafka_message_destroy(message);
    }
    rd_kafka_consumer_close(consumer);
    rd_kafka_destroy(consumer);
    if (ends < partitions) {
        printf("error only %d of %d partitions read to their end within 20 s\n", ends, partitions);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    char error[512];
    char line[256];
    if (argc != 3) {
        fprintf(stderr, "usage: kafka_mock_cluster TOPIC PARTITIONS\n");
        return 2;
    }
    topic = argv[1];
    partitions = atoi(argv[2]);
    if (partitions < 1 || partitions > 64) {
        fprintf(stderr, "PARTITIONS must be 1..64\n");
        return 2;
    }
    srand((unsigned)time(NULL));
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "log_level", "0", error, sizeof error);
    rd_kafka_t *handle = rd_kafka_new(RD_KAFKA_PRODUCER, conf, error, sizeof error);
    if (!handle) {
        fprintf(stderr, "cannot create the mock cluster's handle: %s\n", error);
        return 1;
    }
    rd_kafka_mock_cluster_t *cluster = rd_kafka_mock_cluster_new(handle, 3);
    if (!cluster) {
        fprintf(stderr, "cannot create the mock cluster\n");
        return 1;
    }
    bootstraps = rd_kafka_mock_cluster_bootstraps(cluster);
    if (rd_kafka_mock_topic_create(cluster, topic, partitions, 3) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        fprintf(stderr, "cannot create the topic\n");
        return 1;
    }
    printf("bootstrap %s\nready\n", bootstraps);
    fflush(stdout);
    while (fgets(line, sizeof line, stdin)) {
        int n = 0;
        int status = 0;
        if (sscanf(line, "down %d", &n) == 1) {
            status = rd_kafka_mock_broker_set_down(cluster, n) == RD_KAFKA_RESP_ERR_NO_ERROR ? 0 : 1;
        } else if (sscanf(line, "up %d", &n) == 1) {
            status = rd_kafka_mock_broker_set_up(cluster, n) == RD_KAFKA_RESP_ERR_NO_ERROR ? 0 : 1;
        } else if (sscanf(line, "produce-errors %d", &n) == 1 && n > 0 && n <= 100) {
            rd_kafka_resp_err_t errors[100];
            for (int i = 0; i < n; i++) {
                errors[i] = RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION;
            }
            rd_kafka_mock_push_request_errors_array(cluster, 0 /* Produce */, (size_t)n, errors);
        } else if (strncmp(line, "consume", 7) == 0) {
            status = consume();
        } else if (strncmp(line, "quit", 4) == 0) {
            break;
        } else {
            printf("error unknown command\n");
            fflush(stdout);
            continue;
        }
        printf(status == 0 ? "ok\n" : "error the command failed\n");
        fflush(stdout);
    }
    rd_kafka_mock_cluster_destroy(cluster);
    rd_kafka_destroy(handle);
    return 0;
}
