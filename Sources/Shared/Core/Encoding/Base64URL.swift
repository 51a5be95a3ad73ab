import Foundation

/// Base64 with the URL alphabet and no padding (RFC 7515).
public enum Base64URL {
    public static func encode(_ bytes: [UInt8]) -> String {
        var text = Data(bytes).base64EncodedString()
        text = String(text.map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 })
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }

    public static func decode(_ text: String) -> [UInt8]? {
        var base = String(text.map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
        while base.count % 4 != 0 { base += "=" }
        return Data(base64Encoded: base).map(Array.init)
    }
}
