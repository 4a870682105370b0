import ArgumentParser
import Foundation
import HubHostKit
import Hummingbird
import HummingbirdCore

extension BenchCommand {
    /// `hubhost bench floor-server` (hidden; started by `bench hub` and `bench ingest`): the HTTP
    /// framework alone, as `serve` runs it (Hummingbird's HTTP/1.1 server on Swift concurrency's
    /// pool, no middleware, no engine), answering from memory. What it measures is the floor
    /// under hubhost's own figures on the same machine in the same run: the rate no route of
    /// `serve` can pass, whatever hubhost does.
    ///
    /// - `GET <path>`: the page exported to `--pages/<path>/index.html` (read once at start), 404
    ///   for any other path.
    /// - `POST /v1/events`: reads the body (at most 16 MiB) and answers 201 with the same bytes,
    ///   about the size of serve's answer (the stored events), without parsing or storing them.
    struct FloorServer: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "floor-server",
            abstract: "(bench) The HTTP framework alone, answering from memory: the floor under bench hub's and bench ingest's figures.",
            shouldDisplay: false)

        @Option(help: ArgumentHelp("A folder of exported pages (<path>/index.html), served by path.", valueName: "folder"))
        var pages: String?

        @Option(help: "Port on 127.0.0.1 (0: any free port).")
        var port: Int = 0

        func validate() throws {
            guard (0...65535).contains(port) else { throw ValidationError("--port must be 0 to 65535 (0: any free port), not \(port)") }
        }

        func run() throws {
            let bodies = try pages.map(Self.readPages) ?? [:]
            let router = Router()
            router.get("**") { request, _ -> Response in
                guard let body = bodies[request.uri.path] else { return Response(status: .notFound) }
                return Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8"], body: .init(byteBuffer: body))
            }
            router.post("/v1/events") { request, _ -> Response in
                var request = request
                let body = try await request.collectBody(upTo: ServerSettings.defaultMaxBodySize)
                return Response(status: .created, headers: [.contentType: "application/json"], body: .init(byteBuffer: body))
            }
            let app = Application(
                router: router, server: .http1(),
                configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: "hubhost-floor"),
                onServerRunning: { channel in
                    // The line BenchServe waits for, as serve prints it.
                    print("hubhost floor-server serving on http://127.0.0.1:\(channel.localAddress?.port ?? 0)")
                    fflush(nil)
                })
            try runAsync { try await app.runService() }
        }

        /// Every `<path>/index.html` under `folder`, by `/<path>`; a folder that is missing or holds
        /// no page is refused (a server answering 404 to everything would measure nothing).
        static func readPages(_ folder: String) throws -> [String: ByteBuffer] {
            var bodies: [String: ByteBuffer] = [:]
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue,
                let walker = FileManager.default.enumerator(atPath: folder)
            else {
                throw ValidationError("--pages \(folder): not a folder that can be read")
            }
            for case let relative as String in walker where relative == "index.html" || relative.hasSuffix("/index.html") {
                let data = try Data(contentsOf: URL(fileURLWithPath: folder + "/" + relative))
                bodies["/" + relative.dropLast("index.html".count).trimmingCharacters(in: CharacterSet(charactersIn: "/"))] = ByteBuffer(bytes: data)
            }
            guard !bodies.isEmpty else { throw ValidationError("--pages \(folder): no <path>/index.html in it") }
            return bodies
        }
    }
}
