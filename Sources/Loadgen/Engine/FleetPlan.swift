import SDKClient

/// The settings every worker reads: where to connect, how, and what to send.
struct FleetPlan: @unchecked Sendable {
    // @unchecked: TLSClientContext is Sendable; SocketAddress and the options are values.
    let options: FleetOptions
    let addresses: [SocketAddress]
    let tls: TLSClientContext?
    /// Open loop when set.
    let schedule: OpenLoopSchedule?
}
