import Foundation

/// Why a Web Push key, subscription or payload cannot be used. Never carries key material.
public struct WebPushError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    public let errno: Int32

    public init(_ message: String, errno: Int32 = 0) {
        self.message = message
        self.errno = errno
    }

    public var description: String { errno == 0 ? message : "\(message): \(String(cString: strerror(errno)))" }
}
