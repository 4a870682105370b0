import ArgumentParser
import Foundation
import HubHostKit
import HubHostServer

extension PrefetchCommand {
    /// `hubhost prefetch play-url ID`: how an item plays (PrefetchEngine.playback).
    struct PlayURL: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "play-url",
            abstract:
                "Print the URL a player opens for an item: HLS through serve's local HLS endpoint, a cached file by its path and URL, else its origin URL.",
            discussion: """
                An HLS item plays from http://SERVER/v1/prefetch/hls/ID/index.m3u8 while hubhost serve runs there (cached \
                segments from disk, the others from the origin); SERVER is --url, else server: in plugins.yaml. A cached \
                non-HLS item prints its local path (and http://SERVER/v1/prefetch/items/ID/file, with Range support); one partly \
                on disk prints that URL (its start from disk, the rest from the origin); one with nothing on disk prints its \
                origin URL. Exits 1 with the reason when the item cannot play (deleted, unknown, or HLS \
                without a server address).
                """)
        @OptionGroup var common: Common
        @Argument(help: "The item's uniqueId.") var id: String
        @Option(help: "The running server, e.g. http://127.0.0.1:8420 (default: server: in plugins.yaml).") var url: String?

        func validate() throws {
            if let url {
                guard let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme ?? ""), parsed.host != nil,
                    parsed.path.isEmpty || parsed.path == "/"
                else {
                    throw ValidationError("--url must be a server address like http://127.0.0.1:8420, not '\(url)'")
                }
            }
        }

        func run() throws {
            let (host, engine) = try common.open()
            defer { host.shutdown() }
            var server = url.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
            let settings = host.manifest.server
            if server == nil, settings.port != 0 {
                server = PrefetchHLSAnnouncement.serverURL(settings.usesTLS ? "https" : "http", settings.host, settings.port)
            }
            let playback: PrefetchPlayback
            do { playback = try engine.playback(id, serverURL: server) } catch {
                Output.error("prefetch play-url: \(error)\(server == nil ? " (server.port is 0: give the server's address with --url)" : "")")
                throw ExitCode.failed
            }
            if common.output.json {
                Output.json(playback)
                return
            }
            print(playback.localPath ?? playback.url ?? playback.originURL)
            if playback.localPath != nil, let url = playback.url { print(url) }
        }
    }
}
