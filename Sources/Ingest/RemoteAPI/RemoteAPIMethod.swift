import Core

/// A method of the Remote API: its name, how it is answered, and whether it only reads, so that
/// the router answers it inline on the I/O threads instead of queueing it for the writer.
struct RemoteAPIMethod: Sendable {
    typealias Answer = @Sendable (RemoteAPI, DeviceRequest, _ authorization: String?) throws -> JSON

    let name: String
    let readsInline: Bool
    let answer: Answer
}

extension RemoteAPI {
    /// Every Remote API method, by name: the one list the API and the router read.
    static let registry: [String: RemoteAPIMethod] = Dictionary(uniqueKeysWithValues: [
        writing("createMessage") { api, request, authorization in
            try api.createMessage(app: try api.authenticatedApp(request, authorization: authorization), request: request)
        },
        writing("createTargetedMessage") { api, request, authorization in try api.createTargetedMessage(request, authorization: authorization) },
        writing("deleteMessage") { api, request, authorization in try api.deleteMessage(request, authorization: authorization) },
        reading("getMessageDetails") { api, request, authorization in try api.messageDetails(request, authorization: authorization) },
        reading("getMsgStats") { api, request, authorization in try api.messageStatisticsRequest(request, authorization: authorization) },
        reading("getAppStats") { api, request, authorization in
            try api.applicationStatisticsRequest(app: try api.authenticatedApp(request, authorization: authorization), request: request)
        },
        reading("getResults") { api, request, authorization in try api.results(request: request, authorization: authorization) },
        reading("listTags") { api, request, authorization in try api.listTags(app: try api.tokenApp(request, authorization: authorization)) },
        writing("addTag") { api, request, authorization in
            try api.addTag(app: try api.tokenApp(request, authorization: authorization), request: request)
        },
        writing("deleteTag") { api, request, authorization in
            try api.deleteTag(app: try api.tokenApp(request, authorization: authorization), request: request)
        },
        writing("startLiveActivity") { api, request, authorization in
            try api.liveActivity(app: try api.authenticatedApp(request, authorization: authorization), request: request, starting: true)
        },
        writing("updateLiveActivity") { api, request, authorization in
            try api.liveActivity(app: try api.authenticatedApp(request, authorization: authorization), request: request, starting: false)
        },
    ].map { ($0.name, $0) })

    /// The names of the methods that only read.
    static let inlineMethods = Set(registry.values.filter(\.readsInline).map(\.name))

    private static func reading(_ name: String, _ answer: @escaping RemoteAPIMethod.Answer) -> RemoteAPIMethod {
        RemoteAPIMethod(name: name, readsInline: true, answer: answer)
    }

    private static func writing(_ name: String, _ answer: @escaping RemoteAPIMethod.Answer) -> RemoteAPIMethod {
        RemoteAPIMethod(name: name, readsInline: false, answer: answer)
    }
}
