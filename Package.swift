// swift-tools-version:6.0
import PackageDescription

/// Herald: a self-hosted, Pushwoosh-compatible push notification backend.
/// C libraries are wrapped as system-library targets under `Sources/Shared/System`;
/// only `Shared` imports them.
let package = Package(
    name: "Herald",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "herald-ingest", targets: ["Ingest"]),
        .executable(name: "herald-worker", targets: ["Worker"]),
    ],
    targets: [
        .systemLibrary(name: "CSQLite", path: "Sources/Shared/System/CSQLite",
                       providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CZeroMQ", path: "Sources/Shared/System/CZeroMQ",
                       providers: [.apt(["libzmq3-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", path: "Sources/Shared/System/CMicroHTTPD",
                       providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(name: "CCurl", path: "Sources/Shared/System/CCurl", pkgConfig: "libcurl",
                       providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "COpenSSL", path: "Sources/Shared/System/COpenSSL",
                       providers: [.apt(["libssl-dev"])]),
        .target(
            name: "Shared",
            dependencies: ["CSQLite", "CZeroMQ", "CMicroHTTPD", "CCurl", "COpenSSL"],
            exclude: ["System"]
        ),
        .executableTarget(name: "Ingest", dependencies: ["Shared"]),
        .executableTarget(name: "Worker", dependencies: ["Shared"]),
        .testTarget(name: "SharedTests", dependencies: ["Shared"]),
        .testTarget(name: "IntegrationTests", dependencies: ["Shared"]),
    ],
    swiftLanguageModes: [.v6]
)
