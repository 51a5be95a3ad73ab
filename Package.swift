// swift-tools-version:6.0
import PackageDescription

/// Herald: a self-hosted, Pushwoosh-compatible push notification backend.
///
/// The two executables assemble libraries under `Sources/Shared`, one per concern. Each C library is a
/// system-library target under `Sources/Shared/System` imported by as few library targets as it can
/// be (most by exactly one), so an executable links only the C libraries it uses.
/// `docs/architecture.md` draws the graph and names the exceptions.
let package = Package(
    name: "Herald",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "herald-ingest", targets: ["Ingest"]),
        .executable(name: "herald-worker", targets: ["Worker"]),
        .executable(name: "herald-load", targets: ["Loadgen"]),
    ],
    targets: [
        // C libraries, each behind its own shim.
        .systemLibrary(name: "CSQLite", path: "Sources/Shared/System/CSQLite",
                       providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CZeroMQ", path: "Sources/Shared/System/CZeroMQ",
                       providers: [.apt(["libzmq3-dev"])]),
        .systemLibrary(name: "COpenSSL", path: "Sources/Shared/System/COpenSSL",
                       providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CEventPoll", path: "Sources/Shared/System/CEventPoll"),
        .systemLibrary(name: "CNGHTTP2", path: "Sources/Shared/System/CNGHTTP2", pkgConfig: "libnghttp2",
                       providers: [.apt(["libnghttp2-dev"])]),
        .systemLibrary(name: "CLibPQ", path: "Sources/Shared/System/CLibPQ", pkgConfig: "libpq",
                       providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CZlib", path: "Sources/Shared/System/CZlib",
                       providers: [.apt(["zlib1g-dev"])]),

        // Libraries, one per concern.
        .plugin(name: "GitCommit", capability: .buildTool(), path: "Sources/Shared/Plugins/GitCommit"),
        .target(name: "BuildInfo", path: "Sources/Shared/BuildInfo", plugins: ["GitCommit"]),
        .target(name: "Core", dependencies: ["CEventPoll"], path: "Sources/Shared/Core"),
        // The store's rules written once (targeting, device columns, page windows, row mapping); each
        // backend below supplies its SQL dialect and its connections.
        .target(name: "StoreCore", dependencies: ["Core"], path: "Sources/Shared/StoreCore"),
        // The one C source of Herald's own: a SQLite VFS that writes a commit's WAL frames at once.
        .target(name: "SQLiteVFS", dependencies: ["CSQLite"], path: "Sources/Shared/SQLiteVFS"),
        .target(name: "SQLite", dependencies: ["Core", "StoreCore", "CSQLite", "SQLiteVFS"], path: "Sources/Shared/SQLite"),
        .target(name: "Postgres", dependencies: ["Core", "StoreCore", "CLibPQ"], path: "Sources/Shared/Postgres"),
        .target(name: "Storage", dependencies: ["Core", "Postgres", "SQLite"], path: "Sources/Shared/Storage"),
        .target(name: "Queue", dependencies: ["Core", "CZeroMQ"], path: "Sources/Shared/Queue"),
        // zlib's inflate and CRC-32: what a rich media zip's entries really unpack to.
        .target(name: "Inflate", dependencies: ["CZlib"], path: "Sources/Shared/Inflate"),
        .target(name: "HTTPServer", dependencies: ["Core", "CEventPoll"], path: "Sources/Shared/HTTPServer"),
        .target(name: "HTTP2", dependencies: ["Core", "CNGHTTP2", "COpenSSL", "SDKClient"], path: "Sources/Shared/HTTP2"),
        // Web Push message encryption (RFC 8291), subscriptions and P-256 keys: the worker's Web Push
        // provider and ingest's `--generate-vapid-key`.
        .target(name: "WebPush", dependencies: ["Core", "COpenSSL"], path: "Sources/Shared/WebPush"),
        .target(name: "Delivery", dependencies: ["Core", "HTTP2", "COpenSSL", "WebPush"], path: "Sources/Shared/Delivery"),
        // The server side of HTTP/2 (libnghttp2, OpenSSL server TLS, key and certificate making): the load
        // generator's APNs/FCM edge.
        .target(name: "HTTP2Server", dependencies: ["Core", "CNGHTTP2", "COpenSSL", "SDKClient"], path: "Sources/Shared/HTTP2Server"),
        // The SDK client also drives load: its event loop (epoll) and TLS (OpenSSL) sockets.
        .target(name: "SDKClient", dependencies: ["Core", "COpenSSL", "CEventPoll"], path: "Sources/Shared/SDKClient"),

        // The processes: the two servers and the load generator.
        // zlib unpacks rich media uploads to check them (`ZipEntryData`); nothing else inflates.
        // WebPush: `--generate-vapid-key`.
        // jemalloc instead of glibc's malloc: requests are allocated on the I/O loops and freed on the
        // database writer, and the other way round (docs/benchmarks.md).
        .executableTarget(name: "Ingest", dependencies: ["BuildInfo", "Core", "Storage", "Queue", "HTTPServer", "Inflate", "WebPush"],
                          linkerSettings: [.linkedLibrary("jemalloc")]),
        .executableTarget(name: "Worker", dependencies: ["BuildInfo", "Core", "Storage", "Queue", "Delivery", "WebPush"]),
        .executableTarget(name: "Loadgen", dependencies: ["BuildInfo", "Core", "HTTP2Server", "HTTPServer", "SDKClient", "WebPush"]),

        // Tests: one target per library (and per executable), plus what they share.
        .target(name: "TestSupport", dependencies: ["Core", "SDKClient"], path: "Tests/TestSupport"),
        .testTarget(name: "CoreTests", dependencies: ["Core", "TestSupport"]),
        .testTarget(name: "SQLiteTests", dependencies: ["Core", "SDKClient", "SQLite", "TestSupport"]),
        .testTarget(name: "PostgresTests", dependencies: ["Core", "Postgres", "TestSupport"]),
        .testTarget(name: "StorageTests", dependencies: ["Core", "Postgres", "SDKClient", "SQLite", "Storage", "TestSupport"]),
        .testTarget(name: "QueueTests", dependencies: ["Core", "Queue", "TestSupport"]),
        .testTarget(name: "HTTPServerTests", dependencies: ["Core", "HTTPServer", "SDKClient", "TestSupport"]),
        .testTarget(name: "HTTP2Tests", dependencies: ["Core", "Delivery", "HTTP2", "HTTP2Server", "TestSupport"]),
        .testTarget(name: "HTTP2ServerTests", dependencies: ["Core", "HTTP2Server", "TestSupport"]),
        // The client transport against the project's own server playing a misbehaving provider.
        .testTarget(name: "SDKClientTests", dependencies: ["Core", "SDKClient"]),
        .testTarget(name: "DeliveryTests", dependencies: ["Core", "Delivery", "WebPush", "TestSupport"]),
        .testTarget(name: "WebPushTests", dependencies: ["Core", "WebPush", "TestSupport"]),
        // The router and the Remote API over a real SQLite file.
        .testTarget(name: "IngestTests", dependencies: ["Ingest", "Core", "HTTPServer", "Storage", "TestSupport"]),
        // The shard runner over a real SQLite file, delivering to the file sink.
        .testTarget(name: "WorkerTests", dependencies: ["Worker", "Core", "Delivery", "Storage", "TestSupport"]),
        .testTarget(name: "LoadgenTests", dependencies: ["Loadgen", "Core", "Delivery", "HTTP2Server", "SDKClient", "TestSupport", "WebPush"]),
        .testTarget(name: "IntegrationTests", dependencies: ["Core", "Delivery", "HTTP2", "Postgres", "Queue", "SDKClient", "SQLite", "Storage",
                                                           "TestSupport", "WebPush"]),
    ],
    swiftLanguageModes: [.v6]
)
