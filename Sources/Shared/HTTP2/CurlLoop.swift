internal import CCurl
import Core
internal import CEventPoll
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// One libcurl multi handle driven by its own thread with epoll and `curl_multi_socket_action` (so
/// each wake-up only touches the connections that have data, rather than every transfer in
/// flight): requests from any thread are multiplexed over at most `maxConnections` long-lived
/// connections, with at most `maxInFlight` transfers active (the rest wait in a queue, so a backlog
/// never opens connections). libcurl reconnects a connection that broke; `ConnectionHealth` decides
/// when transfers may start meanwhile, so that a provider that is down sees one connection attempt
/// per back-off, not one per request.
///
/// `@unchecked Sendable` invariant: the multi handle, the epoll set and the transfer table are used
/// only by the loop's thread; other threads only append to the queue (behind a mutex) and write to
/// the wake-up eventfd.
final class CurlLoop: @unchecked Sendable {
    private let multi: UnsafeMutableRawPointer
    private let queue = Mutex<[Transfer]>([])
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    private let epoll: Int32
    private let wake: Int32
    /// Loop thread only: sockets registered with epoll (with the events watched), and when libcurl
    /// wants its timeout call.
    private var registered: [Int32: UInt32] = [:]
    private var deadline: Double?
    /// Loop thread only: finished easy handles, kept for the next transfers.
    private var idle: [UnsafeMutableRawPointer] = []
    /// Loop thread only.
    private var health = ConnectionHealth()
    let maxInFlight: Int
    let caFile: String?
    /// Called on the loop's thread.
    let events: HTTP2Events?

    init(name: String, maxConnections: Int, maxInFlight: Int, caFile: String?, events: HTTP2Events?) {
        self.events = events
        CurlLoop.initializeLibrary
        multi = curl_multi_init()
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        wake = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.fd = wake
        epoll_ctl(epoll, EPOLL_CTL_ADD, wake, &event)
        self.maxInFlight = maxInFlight
        self.caFile = caFile
        herald_curl_multi_setopt_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
        herald_curl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, maxConnections)
        herald_curl_multi_setopt_long(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, max(1, (maxInFlight + maxConnections - 1) / maxConnections))
        let context = Unmanaged.passUnretained(self).toOpaque()
        herald_curl_multi_setopt_socket_function(multi, httpSocketCallback)
        herald_curl_multi_setopt_pointer(multi, CURLMOPT_SOCKETDATA, context)
        herald_curl_multi_setopt_timer_function(multi, httpTimerCallback)
        herald_curl_multi_setopt_pointer(multi, CURLMOPT_TIMERDATA, context)
        let thread = Thread { [self] in
            run()
            finished.signal()
        }
        thread.name = name
        thread.start()
    }

    private static let initializeLibrary: Void = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    /// Queues `requests`; the batch's `wait` returns their responses in the same order.
    func start(_ requests: [HTTP2Request]) -> Batch {
        let batch = Batch(count: requests.count)
        guard !requests.isEmpty else { return batch }
        let transfers = requests.enumerated().map { Transfer(request: $0.element, batch: batch, index: $0.offset) }
        queue.withLock { $0.append(contentsOf: transfers) }
        signalWake()
        return batch
    }

    /// Fails what is queued, ends the thread and frees the multi handle.
    func close() {
        guard !stopping.exchange(true, ordering: .relaxed) else { return }
        signalWake()
        finished.wait()
        curl_multi_cleanup(multi)
        Glibc.close(epoll)
        Glibc.close(wake)
    }

    private func signalWake() {
        var one: UInt64 = 1
        _ = write(wake, &one, 8)
    }

    // MARK: - Callbacks from libcurl (loop thread)

    /// libcurl asks to watch `socket` for `what` (CURL_POLL_IN/OUT/INOUT) or to forget it (REMOVE).
    func watch(_ socket: Int32, _ what: Int32) {
        if what == CURL_POLL_REMOVE {
            if registered.removeValue(forKey: socket) != nil { epoll_ctl(epoll, EPOLL_CTL_DEL, socket, nil) }
            return
        }
        var event = epoll_event()
        event.events = (what & CURL_POLL_IN != 0 ? EPOLLIN.rawValue : 0) | (what & CURL_POLL_OUT != 0 ? EPOLLOUT.rawValue : 0)
        event.data.fd = socket
        // libcurl repeats unchanged requests about once per transfer: those cost no system call.
        switch registered.updateValue(event.events, forKey: socket) {
        case nil: epoll_ctl(epoll, EPOLL_CTL_ADD, socket, &event)
        case event.events: break
        default: epoll_ctl(epoll, EPOLL_CTL_MOD, socket, &event)
        }
    }

    /// libcurl wants `curl_multi_socket_action(CURL_SOCKET_TIMEOUT)` after `milliseconds` (-1: never).
    func setTimer(_ milliseconds: Int) {
        deadline = milliseconds < 0 ? nil : monotonicSeconds() + Double(milliseconds) / 1000
    }

    // MARK: - The loop's thread

    private func run() {
        var active: [UInt: Transfer] = [:]
        var events = [epoll_event](repeating: epoll_event(), count: 64)
        var running: Int32 = 0
        while !stopping.load(ordering: .relaxed) {
            let room = maxInFlight - active.count
            if room > 0, queue.withLock({ !$0.isEmpty }) {
                let admission = health.admission(now: monotonicSeconds())
                let limit = admission == .all ? room : admission == .probe ? 1 : admission == .failQueued ? Int.max : 0
                let next = queue.withLock { pending -> [Transfer] in
                    let taken = Array(pending.prefix(limit))
                    pending.removeFirst(taken.count)
                    return taken
                }
                for transfer in next {
                    if admission == .failQueued {
                        transfer.finish(.failure("the connection is down (\(health.lastError)); waiting before the next attempt"))
                        continue
                    }
                    guard let easy = makeEasy(transfer) else {
                        transfer.finish(.failure("curl_easy_init failed"))
                        continue
                    }
                    transfer.isProbe = admission == .probe
                    active[UInt(bitPattern: easy)] = transfer
                    curl_multi_add_handle(multi, easy)
                }
            }
            var wait: Int32 = 200
            if let deadline { wait = Int32(max(0, min(200, (deadline - monotonicSeconds()) * 1000))) }
            if case .waiting(let until, _) = health.state { wait = min(wait, Int32(max(0, (until - monotonicSeconds()) * 1000))) }
            let count = epoll_wait(epoll, &events, Int32(events.count), wait)
            for index in 0..<Int(max(0, count)) {
                let fd = events[index].data.fd
                if fd == wake {
                    var value: UInt64 = 0
                    _ = read(wake, &value, 8)
                    continue
                }
                let flags = events[index].events
                var mask: Int32 = 0
                if flags & EPOLLIN.rawValue != 0 { mask |= CURL_CSELECT_IN }
                if flags & EPOLLOUT.rawValue != 0 { mask |= CURL_CSELECT_OUT }
                if flags & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0 { mask |= CURL_CSELECT_ERR }
                curl_multi_socket_action(multi, fd, mask, &running)
            }
            if let due = deadline, monotonicSeconds() >= due {
                deadline = nil
                curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running)
            }
            // Every message is read before any handle is removed: curl_multi_remove_handle scans the
            // unread messages, which made finishing a burst of n transfers cost n² steps.
            var done: [(easy: UnsafeMutableRawPointer, result: CURLcode)] = []
            var left: Int32 = 0
            while let message = curl_multi_info_read(multi, &left) {
                guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
                done.append((easy, message.pointee.data.result))
            }
            for (easy, result) in done {
                if let transfer = active.removeValue(forKey: UInt(bitPattern: easy)) {
                    complete(transfer, easy: easy, result: result)
                }
                curl_multi_remove_handle(multi, easy)
                if idle.count < maxInFlight {
                    idle.append(easy)
                } else {
                    curl_easy_cleanup(easy)
                }
            }
        }
        for easy in idle { curl_easy_cleanup(easy) }
        idle.removeAll()
        for (key, transfer) in active {
            let easy = UnsafeMutableRawPointer(bitPattern: key)
            curl_multi_remove_handle(multi, easy)
            curl_easy_cleanup(easy)
            transfer.finish(.failure("client closed", requestSent: true))
        }
        for transfer in queue.withLock({ pending in defer { pending.removeAll() }; return pending }) {
            transfer.finish(.failure("client closed"))
        }
    }

    /// An easy handle for `transfer`: a pooled one, or a new one with the options every transfer
    /// shares. Only the per-request options are set here, and each of them on every transfer, so a
    /// pooled handle needs no `curl_easy_reset` (which would free and re-copy the CA paths).
    private func makeEasy(_ transfer: Transfer) -> UnsafeMutableRawPointer? {
        guard let easy = idle.popLast() ?? newEasy() else { return nil }
        let request = transfer.request
        transfer.started = monotonicSeconds()
        herald_curl_easy_setopt_string(easy, CURLOPT_URL, request.url)
        herald_curl_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, request.timeoutMilliseconds)
        herald_curl_easy_setopt_long(easy, CURLOPT_POSTFIELDSIZE, request.body.count)
        request.body.withUnsafeBytes { bytes in
            _ = herald_curl_easy_setopt_pointer(easy, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: bytes.baseAddress))
        }
        let shared = request.sharedHeaders?.list
        var first: UnsafeMutablePointer<curl_slist>?
        var last: UnsafeMutablePointer<curl_slist>?
        for header in request.headers {
            guard let node = curl_slist_append(nil, header) else { continue }
            if let last { last.pointee.next = node } else { first = node }
            last = node
        }
        if let first, let last {
            last.pointee.next = shared
            transfer.ownHeaders = (first, last)
        }
        herald_curl_easy_setopt_pointer(easy, CURLOPT_HTTPHEADER, UnsafeMutableRawPointer(first ?? shared))
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        herald_curl_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, context)
        herald_curl_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, context)
        return easy
    }

    private func newEasy() -> UnsafeMutableRawPointer? {
        guard let easy = curl_easy_init() else { return nil }
        herald_curl_easy_setopt_long(easy, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS)
        herald_curl_easy_setopt_long(easy, CURLOPT_PIPEWAIT, 1)
        herald_curl_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        herald_curl_easy_setopt_long(easy, CURLOPT_TCP_KEEPALIVE, 1)
        herald_curl_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, Self.connectTimeoutMilliseconds)
        if let caFile {
            // The extra CA is trusted in addition to the system store.
            herald_curl_easy_setopt_string(easy, CURLOPT_CAINFO, caFile)
            herald_curl_easy_setopt_string(easy, CURLOPT_CAPATH, "/etc/ssl/certs")
        }
        herald_curl_easy_setopt_write(easy, CURLOPT_WRITEFUNCTION, httpBodyCallback)
        herald_curl_easy_setopt_write(easy, CURLOPT_HEADERFUNCTION, httpHeaderCallback)
        return easy
    }

    static let connectTimeoutMilliseconds = 10_000

    /// Failures before anything could be written: the request certainly did not reach the server.
    static let notSentFailures: Set<UInt32> = Set([
        CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_CONNECT, CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION,
    ].map(\.rawValue))

    /// Failures that mean the connection itself is unusable (as opposed to one stream's trouble).
    static let connectionFailures: Set<UInt32> = Set([
        CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_CONNECT, CURLE_HTTP2, CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION,
        CURLE_GOT_NOTHING, CURLE_SEND_ERROR, CURLE_RECV_ERROR,
    ].map(\.rawValue))

    private func complete(_ transfer: Transfer, easy: UnsafeMutableRawPointer, result: CURLcode) {
        events?.requestFinished(monotonicSeconds() - transfer.started)
        var connects = 0
        herald_curl_easy_getinfo_long(easy, CURLINFO_NUM_CONNECTS, &connects)
        for _ in 0..<max(0, connects) { events?.connectionOpened() }
        guard result == CURLE_OK else {
            var uploaded: curl_off_t = 0
            herald_curl_easy_getinfo_offset(easy, CURLINFO_SIZE_UPLOAD_T, &uploaded)
            let error = String(cString: curl_easy_strerror(result))
            // A timeout with nothing sent is a connection that never came up.
            if transfer.isProbe || Self.connectionFailures.contains(result.rawValue) || (result == CURLE_OPERATION_TIMEDOUT && uploaded == 0) {
                health.broken(probe: transfer.isProbe, error: error, now: monotonicSeconds(), jitter: Double.random(in: 0...1))
            }
            // Any other failure may have come after the server got the request (libcurl's upload count
            // says what was handed to the connection, not what the server read): its outcome is unknown.
            let notSent = Self.notSentFailures.contains(result.rawValue) || (result == CURLE_OPERATION_TIMEDOUT && uploaded == 0)
            transfer.finish(.failure(error, requestSent: !notSent))
            return
        }
        health.answered()
        var status = 0
        herald_curl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        transfer.finish(HTTP2Response(status: status, headers: transfer.headers, body: transfer.body, transportError: nil))
    }
}

/// The responses of the requests one `start` call queued. `@unchecked Sendable` invariant: written
/// only by the loop's thread until the last response is in, read by the sender after that.
final class Batch: @unchecked Sendable {
    var responses: [HTTP2Response?]
    var remaining: Int
    private let done = DispatchSemaphore(value: 0)

    init(count: Int) {
        responses = Array(repeating: nil, count: count)
        remaining = count
        if count == 0 { done.signal() }
    }

    /// Called by the loop's thread when the last response is in.
    func complete() { done.signal() }

    /// Blocks until every response is in.
    func wait() -> [HTTP2Response] {
        done.wait()
        return responses.map { $0 ?? .failure("no response", requestSent: true) }
    }
}

/// One request in flight. `@unchecked Sendable` invariant: created by the sender, then touched only
/// by the loop's thread until it is finished.
final class Transfer: @unchecked Sendable {
    let request: HTTP2Request
    let batch: Batch
    let index: Int
    var body: [UInt8] = []
    var headers: [String: String] = [:]
    /// The request's own header lines (first and last node), linked in front of its shared ones.
    var ownHeaders: (first: UnsafeMutablePointer<curl_slist>, last: UnsafeMutablePointer<curl_slist>)?
    var started = 0.0
    /// Started alone to find out whether a broken connection can be opened again.
    var isProbe = false

    init(request: HTTP2Request, batch: Batch, index: Int) {
        self.request = request
        self.batch = batch
        self.index = index
    }

    func finish(_ response: HTTP2Response) {
        if let ownHeaders {
            // Detached first, so that freeing the own lines leaves the shared ones alone.
            ownHeaders.last.pointee.next = nil
            curl_slist_free_all(ownHeaders.first)
        }
        ownHeaders = nil
        batch.responses[index] = response
        batch.remaining -= 1
        if batch.remaining == 0 { batch.complete() }
    }
}

let httpBodyCallback: curl_write_callback = { data, size, count, context in
    guard let data, let context else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    data.withMemoryRebound(to: UInt8.self, capacity: length) {
        transfer.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: length))
    }
    return length
}

/// Response headers the providers read (lower case); the others are skipped without building
/// strings or arrays.
let httpKeptHeaders: [(name: String, bytes: [UInt8])] = ["apns-id", "retry-after", "content-type"].map { ($0, Array($0.utf8)) }

let httpHeaderCallback: curl_write_callback = { data, size, count, context in
    guard let data, let context else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    data.withMemoryRebound(to: UInt8.self, capacity: length) { pointer in
        let line = UnsafeBufferPointer(start: pointer, count: length)
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return }
        let name = line[..<colon]
        guard let kept = httpKeptHeaders.first(where: { kept in
            kept.bytes.count == name.count && zip(kept.bytes, name).allSatisfy { $0 == ($1 >= 65 && $1 <= 90 ? $1 + 32 : $1) }
        }) else { return }
        var value = line[(colon + 1)...]
        while let first = value.first, first == 32 || first == 9 { value = value.dropFirst() }
        while let last = value.last, last == 32 || last == 9 || last == 10 || last == 13 { value = value.dropLast() }
        transfer.headers[kept.name] = String(decoding: value, as: UTF8.self)
    }
    return length
}

let httpSocketCallback: curl_socket_callback = { _, socket, what, context, _ in
    guard let context else { return 0 }
    Unmanaged<CurlLoop>.fromOpaque(context).takeUnretainedValue().watch(socket, what)
    return 0
}

let httpTimerCallback: curl_multi_timer_callback = { _, milliseconds, context in
    guard let context else { return 0 }
    Unmanaged<CurlLoop>.fromOpaque(context).takeUnretainedValue().setTimer(milliseconds)
    return 0
}
