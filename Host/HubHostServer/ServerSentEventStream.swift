import Foundation
import Hummingbird

/// A `text/event-stream` response (the notification stream, the prefetch live sets): a comment
/// line first, then what the source yields, and a keep-alive comment every 2 seconds, which also
/// lets a write fail soon after the client disconnected; that ends the stream, and `start`'s
/// returned stop function runs (unsubscribe, cancel). Streams end on the server's shutdown signals
/// (NotificationStreams).
enum ServerSentEventStream {
    /// - Parameters:
    ///   - prelude: the text of the first comment line.
    ///   - start: starts the source, which yields whole events ("event: x\ndata: {...}\n\n") into the
    ///     continuation; returns what stops it.
    static func response(
        prelude: String,
        start: @escaping @Sendable (AsyncStream<String>.Continuation) -> (@Sendable () -> Void)
    ) -> Response {
        let body = ResponseBody { writer in
            let (stream, continuation) = AsyncStream<String>.makeStream(bufferingPolicy: .bufferingNewest(10_000))
            let stop = start(continuation)
            let ticker = Task {
                while !Task.isCancelled {
                    try? await Task.sleep(nanoseconds: 2_000_000_000)
                    continuation.yield(": keep-alive\n\n")
                }
            }
            defer {
                ticker.cancel()
                stop()
                continuation.finish()
            }
            NotificationStreams.shared.add(continuation)
            try await writer.write(ByteBuffer(string: ": \(prelude)\n\n"))
            for await chunk in stream {
                try await writer.write(ByteBuffer(string: chunk))
            }
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-store"], body: body)
    }
}
