// swift-tools-version:6.0
// An app that embeds hubhost through its Swift API, depending on it BY VERSION as any app would.
// CI (.ci/run) builds it against a tagged clone of this checkout: HUBHOST_PACKAGE_URL names that
// clone; without it the package points at hubhost's public home.
import Foundation
import PackageDescription

let hubhost = ProcessInfo.processInfo.environment["HUBHOST_PACKAGE_URL"] ?? "https://github.com/hubhost/hubhost"

let package = Package(
    name: "EmbedHubHost",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(url: hubhost, from: "0.2.0")
    ],
    targets: [
        .executableTarget(
            name: "EmbedHubHost",
            dependencies: [.product(name: "HubHostKit", package: "hubhost")],
            swiftSettings: [.swiftLanguageMode(.v5)]
        )
    ]
)
