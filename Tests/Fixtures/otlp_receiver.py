#!/usr/bin/env python3
"""A loopback OTLP/HTTP trace receiver for the tests (TracingTests).

Listens on 127.0.0.1 (an ephemeral port, printed as the first line of stdout: "port N"), decodes
each POST /v1/traces body as the real protobuf ExportTraceServiceRequest (PyPI
opentelemetry-proto) and appends every span to the file named by argv[1] as one JSON line:
{"name", "trace_id", "span_id", "parent_span_id", "kind", "attributes": {key: value}}.
Answers 200 with an empty ExportTraceServiceResponse. A POST to any other path stands in for
an event collector: answered 200, it adds {"collector_path", "traceparent"} (its header). Ends when stdin closes, or after argv[2]
seconds (default 300), whichever comes first: it never outlives the test that started it.
"""
import gzip
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

OUT = sys.argv[1]
LIFETIME = float(sys.argv[2]) if len(sys.argv) > 2 else 300.0
LOCK = threading.Lock()


def value(any_value):
    kind = any_value.WhichOneof("value")
    if kind is None:
        return None
    if kind in ("array_value", "kvlist_value"):
        return str(getattr(any_value, kind))
    if kind == "bytes_value":
        return any_value.bytes_value.hex()
    return getattr(any_value, kind)


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length > 64 << 20:
            self.send_response(413)
            self.end_headers()
            return
        body = self.rfile.read(length)
        if self.path != "/v1/traces":
            # Any other path stands in for an event collector: its traceparent header is noted.
            with LOCK, open(OUT, "a") as out:
                out.write(json.dumps({"collector_path": self.path, "traceparent": self.headers.get("traceparent")}) + "\n")
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        request = trace_service_pb2.ExportTraceServiceRequest()
        request.ParseFromString(body)
        lines = []
        for resource_spans in request.resource_spans:
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    lines.append(json.dumps({
                        "name": span.name,
                        "trace_id": span.trace_id.hex(),
                        "span_id": span.span_id.hex(),
                        "parent_span_id": span.parent_span_id.hex(),
                        "kind": span.kind,
                        "attributes": {a.key: value(a.value) for a in span.attributes},
                    }))
        with LOCK, open(OUT, "a") as out:
            for line in lines:
                out.write(line + "\n")
        answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(f"port {server.server_address[1]}", flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    done = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
    done.wait(LIFETIME)
    server.shutdown()


if __name__ == "__main__":
    main()
