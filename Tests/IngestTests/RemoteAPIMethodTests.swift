import Testing
import Core
import HTTPServer
@testable import Ingest

/// The registry of Remote API methods is what the router reads: every method it names is routed,
/// its reads are answered inline on the I/O threads and its writes go to the writer.
@Suite struct RemoteAPIMethodTests {
    static let reads = ["getMessageDetails", "getMsgStats", "getAppStats", "getResults", "listTags"]
    static let writes = ["createMessage", "createTargetedMessage", "deleteMessage", "addTag", "deleteTag", "startLiveActivity",
                         "updateLiveActivity"]

    static func call(_ method: String) -> HTTPRequest {
        HTTPRequest(method: "POST", path: Router.apiPrefix + method)
    }

    @Test func theRegistryNamesEveryRemoteAPIMethodOnce() {
        #expect(RemoteAPI.methods == Set(Self.reads + Self.writes))
        for (name, method) in RemoteAPI.registry { #expect(method.name == name) }
    }

    @Test func readsAreAnsweredInlineAndWritesGoToTheWriter() {
        for method in Self.reads {
            guard case .inline = Router.dispatch(Self.call(method)) else {
                Issue.record("\(method) is not answered inline")
                continue
            }
        }
        for method in Self.writes {
            guard case .offload = Router.dispatch(Self.call(method)) else {
                Issue.record("\(method) is not handed to the writer")
                continue
            }
        }
    }
}
