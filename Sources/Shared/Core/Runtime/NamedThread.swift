import Foundation

extension Thread {
    /// A thread that runs `body` under `name`, as the kernel shows it too (`top -H`, `ps -L`,
    /// `/proc/<pid>/task/*/comm`, perf): Foundation gives a running thread its name only when the
    /// name is set on that thread, so `body` starts by setting it there, cut to the 15 bytes the
    /// kernel keeps (a longer one would be refused).
    public convenience init(named name: String, _ body: @escaping @Sendable () -> Void) {
        self.init {
            Thread.current.name = String(decoding: name.utf8.prefix(15), as: UTF8.self)
            body()
        }
        self.name = name
    }
}
