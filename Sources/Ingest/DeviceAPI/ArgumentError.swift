/// A client mistake in a request: answered with HTTP 200 and `status_code` 210 (or a 4xx on the
/// OneSignal routes), with a message that names the field. Nothing is changed.
struct ArgumentError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}
