// swift-tools-version:6.1
// hubhost: an in-app engagement runtime built as a small host that loads `.so` plugins.
//
// Layout (see README.md):
//   Protocols/        the C-ABI protocol module (headers only; the contract between host and plugins)
//   Host/HubHostKit   the embeddable Swift library (manifest, loader, registry, logging, engines)
//   Host/HubHostTools the tools over it: benchmarks, the plugin validator, plugins inspect
//   Host/HubHostServer the HTTP API of `hubhost serve` (routes, middlewares, the server service)
//   Host/hubhost      the command-line front end
//   Plugins/<Name>/   one folder per bundled plugin, each its own dynamic library product
import PackageDescription

// C targets build as C11 (cLanguageStandard below). The strict warnings (-Wall -Wextra -Werror
// -pedantic) are not build flags: SwiftPM refuses a dependency whose products carry unsafe flags,
// which would stop any app from adding hubhost by version. Tests compile the ABI headers and every
// bundled C plugin with them instead (ABIHeaderTests, CStrictnessTests).

/// A bundled plugin: a target under Plugins/<folder> built as `lib<product>.so`.
struct BundledPlugin {
    let folder: String
    let product: String
    let isC: Bool
    /// System libraries (Debian -dev packages) the plugin links, e.g. "rdkafka".
    var linkedLibraries: [String] = []
}

let bundledPlugins: [BundledPlugin] = [
    .init(folder: "ConsoleLogger", product: "hubhost-console-logger", isC: true),
    .init(folder: "JSONLinesLogger", product: "hubhost-jsonl-logger", isC: false),
    .init(folder: "StaticAdvertiserID", product: "hubhost-static-advertiser-id", isC: false),
    .init(folder: "FixedLocation", product: "hubhost-fixed-location", isC: true),
    .init(folder: "Noop", product: "hubhost-noop", isC: true),
    .init(folder: "LocationAugmentation", product: "hubhost-location-augmentation", isC: false),
    .init(folder: "WeatherAugmentation", product: "hubhost-weather", isC: true),
    .init(folder: "StandardOperators", product: "hubhost-standard-operators", isC: true),
    .init(folder: "ExtraOperators", product: "hubhost-extra-operators", isC: true),
    .init(folder: "HTTPContentProvider", product: "hubhost-http-content-provider", isC: true),
    .init(folder: "LocalContentProvider", product: "hubhost-local-content-provider", isC: true),
    .init(folder: "UUIDGenerator", product: "hubhost-uuid-generator", isC: true),
    .init(folder: "LinuxDeviceConditions", product: "hubhost-linux-device-conditions", isC: true),
    .init(folder: "FixedDeviceConditions", product: "hubhost-fixed-device-conditions", isC: true),
    .init(folder: "DownloadRequestHeader", product: "hubhost-download-request-header", isC: true),
    // librdkafka-dev: the Kafka event sink.
    .init(folder: "KafkaSink", product: "hubhost-kafka-sink", isC: true, linkedLibraries: ["rdkafka"]),
    // libnats-dev: the NATS JetStream event sink.
    .init(folder: "NatsSink", product: "hubhost-nats-sink", isC: true, linkedLibraries: ["nats"])
]

let package = Package(
    name: "hubhost",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "hubhost", targets: ["hubhost"]),
        .library(name: "HubHostKit", targets: ["HubHostKit"]),
        .library(name: "PluginTestKit", targets: ["PluginTestKit"]),
        .library(name: "HubHostABI", targets: ["HubHostABI"]),
        .library(name: "HubHostPluginSupport", targets: ["HubHostPluginSupport"])
    ] + bundledPlugins.map { .library(name: $0.product, type: .dynamic, targets: [$0.folder + "Plugin"]) },
    dependencies: [
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        // WebAssembly plugins: a pure-Swift interpreter with fuel metering (WasmKit) and, for the
        // tests' text-format fixtures, its WAT parser.
        .package(url: "https://github.com/swiftwasm/WasmKit", exact: "0.4.2"),
        // Traces: the swift-distributed-tracing API everywhere, and swift-otel's OTLP/HTTP exporter
        // (only its OTLPHTTP trait, so the gRPC stack is not built) bootstrapped by `serve` when
        // `tracing.endpoint` is set.
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        .package(url: "https://github.com/swift-otel/swift-otel", from: "1.6.0", traits: ["OTLPHTTP"])
    ],
    targets: [
        // Protocols/wasm holds the guest adapter, compiled into .wasm plugins only (scripts/build-wasm-plugin).
        .target(name: "HubHostABI", path: "Protocols", exclude: ["Swift", "wasm"]),
        // Helpers for plugins written in Swift (static tables, typed config); depends only on the ABI.
        .target(
            name: "HubHostPluginSupport", dependencies: ["HubHostABI"], path: "Protocols/Swift",
            swiftSettings: [.swiftLanguageMode(.v6)]),
        .systemLibrary(name: "COpenSSL", path: "Host/COpenSSL"),
        // cmark-gfm (libcmark-gfm-dev, libcmark-gfm-extensions-dev): Markdown articles in content bundles.
        .systemLibrary(name: "CCmarkGFM", path: "Host/CCmarkGFM"),
        .target(
            name: "HubHostKit",
            dependencies: [
                "HubHostABI", "COpenSSL", "CCmarkGFM",
                .product(name: "Yams", package: "Yams"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "WasmKit", package: "WasmKit"),
                .product(name: "WasmParser", package: "WasmKit"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "OTel", package: "swift-otel")
            ],
            path: "Host/HubHostKit",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The raw clients `hubhost bench sinks` measures the sinks against (librdkafka-dev, libnats-dev).
        .target(
            name: "SinkBenchClients", path: "Host/SinkBenchClients",
            linkerSettings: [.linkedLibrary("rdkafka"), .linkedLibrary("nats")]),
        // The tools: benchmarks (which start wrk and nginx), the plugin validator and `plugins inspect`.
        // Not part of the embeddable runtime; they reach HubHostKit's internals through `package` access.
        .target(
            name: "HubHostTools",
            dependencies: [
                "HubHostKit", "HubHostABI", "SinkBenchClients",
                .product(name: "GRDB", package: "GRDB.swift")
            ],
            path: "Host/HubHostTools",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The HTTP API as a library: `hubhost serve` runs it, and the tests drive its routes in process.
        .target(
            name: "HubHostServer",
            dependencies: [
                "HubHostKit",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Metrics", package: "swift-metrics")
            ],
            path: "Host/HubHostServer",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "hubhost",
            dependencies: [
                "HubHostKit", "HubHostTools", "HubHostServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
            ],
            path: "Host/hubhost",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .target(
            name: "PluginTestKit",
            dependencies: ["HubHostKit"],
            path: "Host/PluginTestKit",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .testTarget(
            name: "HubHostKitTests",
            dependencies: [
                "HubHostKit", "HubHostTools", "HubHostServer", "PluginTestKit",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "WAT", package: "WasmKit")
            ],
            path: "Tests/HubHostKitTests",
            swiftSettings: [.swiftLanguageMode(.v6)]
        )
    ]
        + bundledPlugins.map { plugin in
            plugin.isC
                ? .target(
                    name: plugin.folder + "Plugin", dependencies: ["HubHostABI"],
                    path: "Plugins/" + plugin.folder, exclude: ["plugin.yaml"], publicHeadersPath: ".",
                    linkerSettings: plugin.linkedLibraries.map { .linkedLibrary($0) })
                : .target(
                    name: plugin.folder + "Plugin", dependencies: ["HubHostABI", "HubHostPluginSupport"],
                    path: "Plugins/" + plugin.folder, exclude: ["plugin.yaml"],
                    swiftSettings: [.swiftLanguageMode(.v6)])
        },
    cLanguageStandard: .c11
)
